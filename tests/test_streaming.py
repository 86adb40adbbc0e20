"""Blob content streams in bounded chunks and manifests are bounded (protocol §9, §12): a download
larger than the store's buffer arrives whole with its ETag while the store reads it chunk by
chunk; a manifest over ``manifest_input_bytes`` is refused unread; a smaller one stops at the
first entry past ``memory_entries_per_revision``."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace

from tests.conftest import Api, item, must_fail, publish, sealed_blob
from waypost.adapters.blobs.files import FileBlobStore
from waypost.reference.service.context import Context


def _context(api: Api) -> Context:
    ctx: Context = api.client.app.state.context  # type: ignore[attr-defined]
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
