"""Blob content streams in bounded chunks and manifests are bounded (protocol §9, §12): a download
larger than the store's buffer arrives whole with its ETag while the store reads it chunk by
chunk, its first chunk sent before the store has read the rest; a manifest over
``manifest_input_bytes`` is refused unread; a smaller one stops at the first entry past
``memory_entries_per_revision``."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from dataclasses import replace
from typing import Any

import pytest

from tests.support.api import Api, item, must_fail, publish, sealed_blob
from waypost.adapters.blobs.files import FileBlobStore
from waypost.reference.server import served_context
from waypost.reference.service.context import Context


def _context(api: Api) -> Context:
    ctx: Context = served_context(api.client.app)
    return ctx


def _store(api: Api, chunk_bytes: int) -> FileBlobStore:
    store = _context(api).blobs
    assert isinstance(store, FileBlobStore)
    store.chunk_bytes = chunk_bytes
    return store


def test_a_blob_larger_than_the_buffer_streams_in_bounded_chunks(mem: Api) -> None:
    store = _store(mem, 64 * 1024)
    content = bytes(range(256)) * (5 * 1024 + 3)  # 1.25 MiB and a bit: not a chunk multiple
    blob_id = sealed_blob(mem, "writer", content)
    before = store.streamed.chunks
    answer = mem.as_("writer", "GET", f"/v1/blobs/{blob_id}/content")
    assert answer.status_code == 200
    assert answer.content == content
    assert answer.headers["ETag"] == f'"{hashlib.sha256(content).hexdigest()}"'
    assert answer.headers["Content-Length"] == str(len(content))
    assert store.streamed.chunks - before == math.ceil(len(content) / store.chunk_bytes)
    assert store.streamed.largest <= store.chunk_bytes


def _bodies_as_sent(api: Api, who: str, path: str, headers: dict[str, str],
                   store: FileBlobStore) -> list[tuple[bytes, int]]:
    """Each body message of the app's answer to ``GET path`` and how many chunks the store had
    read when the app sent it (the app driven over ASGI on its own loop: no client buffers)."""
    sent: list[tuple[bytes, int]] = []

    async def call() -> None:
        done = asyncio.Event()
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                sent.append((message.get("body", b""), store.streamed.chunks))
                if not message.get("more_body", False):
                    done.set()

        raw = {"authorization": f"Bearer {api.tokens[who]}", "host": "testserver", **headers}
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "GET", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "client": ("127.0.0.1", 50000),
                 "server": ("testserver", 80),
                 "headers": [(k.encode(), v.encode()) for k, v in raw.items()]}
        await api.client.app(scope, receive, send)

    api.client.portal.call(call)
    return sent


@pytest.mark.parametrize(("headers", "span"), [
    ({}, slice(None)), ({"range": "bytes=1000-"}, slice(1000, None))], ids=["whole", "range"])
def test_a_download_sends_its_first_chunk_before_the_store_has_read_the_rest(
        mem: Api, headers: dict[str, str], span: slice) -> None:
    """Streamed, not buffered: the first chunk leaves before the store has read the rest, and
    no body message is larger than a chunk."""
    store = _store(mem, 16 * 1024)
    content = bytes(range(256)) * (1024 + 7)  # 16 chunks and a bit
    blob_id = sealed_blob(mem, "writer", content)
    before = store.streamed.chunks
    sent = _bodies_as_sent(mem, "writer", f"/v1/blobs/{blob_id}/content", headers, store)
    expected = content[span]
    assert b"".join(body for body, _ in sent) == expected
    read_in_all = math.ceil(len(expected) / store.chunk_bytes)
    assert store.streamed.chunks - before == read_in_all
    first_sent_after = next(read for body, read in sent if body) - before
    assert first_sent_after < read_in_all
    assert max(len(body) for body, _ in sent) <= store.chunk_bytes


def test_a_manifest_over_the_input_limit_is_refused_unread(mem: Api) -> None:
    ctx = _context(mem)
    store = _store(mem, 1024)
    ctx.limits = replace(ctx.limits, manifest_input_bytes=4096)
    assert mem.client.get("/v1/describe").json()["limits"]["manifest_input_bytes"] == 4096
    entry_blob = sealed_blob(mem, "writer", b"x")
    manifest = json.dumps({"items": [item(f"i{n}", entry_blob) for n in range(80)]}).encode()
    assert len(manifest) > 4096
    manifest_id = sealed_blob(mem, "writer", manifest)
    before = store.streamed.chunks
    error = must_fail(publish(mem, 0, manifest_blob_id=manifest_id), 413, "RESOURCE_LIMIT",
                      "manifest_blob_id")
    assert error["details"]["limit"] == "manifest_input_bytes"
    assert store.streamed.chunks == before  # not one byte was read


def test_a_manifest_stops_at_the_first_entry_past_the_limit(mem: Api) -> None:
    ctx = _context(mem)
    store = _store(mem, 64)
    ctx.limits = replace(ctx.limits, memory_entries_per_revision=5)
    manifest = b'{"items":[' + b",".join([b"{}"] * 20_000) + b"]}"
    manifest_id = sealed_blob(mem, "writer", manifest)
    before = store.streamed.chunks
    error = must_fail(publish(mem, 0, manifest_blob_id=manifest_id), 413, "RESOURCE_LIMIT",
                      "manifest.items")
    assert error["details"]["limit"] == "memory_entries_per_revision"
    assert store.streamed.chunks - before == 1  # the sixth entry is in the first chunk


def test_a_manifest_within_the_limits_publishes(mem: Api) -> None:
    store = _store(mem, 16)  # many chunks: entries, keys and strings split across them
    entry_blob = sealed_blob(mem, "writer", b"body")
    manifest = json.dumps({"items": [item(f"i{n}", entry_blob, metadata={"n": [n, 1.5]})
                                     for n in range(3)], "delete_ids": []}).encode()
    manifest_id = sealed_blob(mem, "writer", manifest)
    answer = publish(mem, 0, manifest_blob_id=manifest_id)
    assert answer.status_code == 201, answer.text
    assert store.streamed.largest <= 16


def test_a_manifest_that_is_not_an_object_or_repeats_a_key_is_invalid(mem: Api) -> None:
    for text in (b'[{}, {}]', b'{"items": [], "items": []}', b'{"items": [], "other": 1}',
                 b'{"items": [', b'{"items": []} trailing'):
        manifest_id = sealed_blob(mem, "writer", text)
        must_fail(publish(mem, 0, manifest_blob_id=manifest_id), 400, "INVALID_REQUEST",
                  "manifest_blob_id")
