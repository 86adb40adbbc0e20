"""Resumable downloads: one ``bytes`` range of a blob's content is ``206`` with exactly those
bytes, streamed in bounded chunks from a seek (never the whole object); a range past the end is
``416``; ``If-Range`` must name the ETag; a malformed or multi-range ``Range`` is ignored (the
whole blob, ``200``); who may read is decided before the range is looked at."""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.reference.http.test_openapi import CONTENT, conforms
from tests.support.api import Api, must_fail, sealed_blob
from waypost.adapters.blobs.files import FileBlobStore
from waypost.adapters.blobs.r2 import R2BlobStore, _window
from waypost.reference.domain import ranges
from waypost.reference.server import Settings, build_app, served_context
from waypost.reference.storage.blob_store import one_chunk

DATA = bytes(range(256)) * 4  # 1 KiB, every byte value


def get(api: Api, who: str | None, blob_id: str, **headers: str | bytes) -> Any:
    """The blob's content as ``who`` (no credential: None) with extra headers (``if_range``
    for ``If-Range``)."""
    sent: dict[str, Any] = {name.replace("_", "-"): value for name, value in headers.items()}
    if who is not None:
        sent["Authorization"] = f"Bearer {api.tokens[who]}"
    return api.client.get(f"/v1/blobs/{blob_id}/content", headers=sent)


def store_of(api: Api, chunk_bytes: int) -> FileBlobStore:
    store = served_context(api.client.app).blobs
    assert isinstance(store, FileBlobStore)
    store.chunk_bytes = chunk_bytes
    return store


def etag(content: bytes) -> str:
    return f'"{hashlib.sha256(content).hexdigest()}"'


@pytest.fixture
def blob(api: Api) -> str:
    return sealed_blob(api, "s1/alice", DATA)


@pytest.mark.parametrize(("header", "start", "end"), [
    ("bytes=0-0", 0, 0),          # the first byte
    ("bytes=0-99", 0, 99),        # a first part
    ("bytes=300-511", 300, 511),  # the middle
    ("bytes=1000-1023", 1000, 1023),  # the last bytes, to the end exactly
    ("bytes=1000-5000", 1000, 1023),  # a last position past the end: up to the end
    ("bytes=700-", 700, 1023),    # open: from a position to the end
    ("bytes=-24", 1000, 1023),    # suffix: the last 24 bytes
    ("bytes=-5000", 0, 1023),     # a suffix longer than the blob: all of it
    ("BYTES=5-9", 5, 9),          # the unit is case-insensitive
    ("bytes= 5-9 ,", 5, 9),       # blanks and empty list elements around one range
    ("bytes=0-99999999999999999999999999", 0, 1023),  # past any blob
    ("bytes=0000000000000000000000000000007-8", 7, 8),  # leading zeros
    (f"bytes={'0' * 5000}9-{'0' * 5000}20", 9, 20),  # more digits than int() parses
])
def test_one_range_is_206_with_exactly_those_bytes(api: Api, blob: str, header: str,
                                                   start: int, end: int) -> None:
    answer = get(api, "s1/alice", blob, range=header)
    assert answer.status_code == 206, answer.text
    assert answer.content == DATA[start:end + 1]
    assert answer.headers["Content-Range"] == f"bytes {start}-{end}/{len(DATA)}"
    assert answer.headers["Content-Length"] == str(end - start + 1)
    assert answer.headers["ETag"] == etag(DATA)
    assert answer.headers["Content-Type"] == "text/plain"
    assert answer.headers["Accept-Ranges"] == "bytes"


def test_the_whole_blob_says_ranges_are_accepted(api: Api, blob: str) -> None:
    answer = get(api, "s1/alice", blob)
    assert answer.status_code == 200
    assert answer.content == DATA
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert "Content-Range" not in answer.headers


def test_a_download_resumes_where_it_stopped(api: Api, blob: str) -> None:
    headers = {"Authorization": f"Bearer {api.tokens['s1/alice']}"}
    got = b""
    with api.client.stream("GET", f"/v1/blobs/{blob}/content", headers=headers) as first:
        tag = first.headers["ETag"]
        for part in first.iter_bytes():
            got += part
            if len(got) >= 300:
                break  # the connection drops here
    got = got[:300]  # what the client had saved
    rest = get(api, "s1/alice", blob, range=f"bytes={len(got)}-", if_range=tag)
    assert rest.status_code == 206
    assert got + rest.content == DATA


@pytest.mark.parametrize("header", [
    "bytes=1024-", "bytes=1024-2000", "bytes=99999999999999999999999999-", "bytes=-0"])
def test_a_range_past_the_end_is_416_with_the_size(api: Api, blob: str, header: str) -> None:
    answer = get(api, "s1/alice", blob, range=header)
    assert answer.status_code == 416
    assert answer.headers["Content-Range"] == f"bytes */{len(DATA)}"
    assert answer.headers["Accept-Ranges"] == "bytes"
    assert answer.content == b""


def test_an_empty_blob_has_no_range_but_a_suffix_gets_it_whole(api: Api) -> None:
    empty = sealed_blob(api, "s1/alice", b"")
    for header in ("bytes=0-", "bytes=0-0", "bytes=-0"):
        answer = get(api, "s1/alice", empty, range=header)
        assert answer.status_code == 416, header
        assert answer.headers["Content-Range"] == "bytes */0"
    whole = get(api, "s1/alice", empty, range="bytes=-10")
    assert (whole.status_code, whole.content) == (200, b"")
    assert whole.headers["ETag"] == etag(b"")


@pytest.mark.parametrize("header", [
    "bytes=5-2",          # last before first: invalid
    "bytes=0-1,5-9",      # several ranges: not served
    "bytes=0-1, 0-1",
    "items=0-1", "bytes 0-1", "0-1", "bytes=", "bytes=-", "bytes=a-b", "bytes=1-2-3",
    "bytes=+1-2", "bytes=0x10-", "bytes=1.5-", "bytes=\u00e9-".encode(), "",
])
def test_a_malformed_or_multi_range_header_is_ignored(api: Api, blob: str,
                                                      header: str | bytes) -> None:
    answer = get(api, "s1/alice", blob, range=header)
    assert answer.status_code == 200, answer.text
    assert answer.content == DATA
    assert "Content-Range" not in answer.headers
    assert answer.headers["Accept-Ranges"] == "bytes"


def test_a_range_header_sent_twice_is_ignored(api: Api, blob: str) -> None:
    headers = [("Authorization", f"Bearer {api.tokens['s1/alice']}"),
               ("Range", "bytes=0-1"), ("Range", "bytes=0-1")]
    answer = api.client.get(f"/v1/blobs/{blob}/content", headers=headers)
    assert answer.status_code == 200
    assert answer.content == DATA


def test_if_range_honours_the_range_only_for_the_same_etag(api: Api, blob: str) -> None:
    same = get(api, "s1/alice", blob, range="bytes=10-19", if_range=etag(DATA))
    assert same.status_code == 206
    assert same.content == DATA[10:20]
    for other in (etag(b"other"), f"W/{etag(DATA)}", etag(DATA).strip('"'),
                  "Tue, 01 Dec 2026 17:00:00 GMT", ""):
        whole = get(api, "s1/alice", blob, range="bytes=10-19", if_range=other)
        assert whole.status_code == 200, other
        assert whole.content == DATA
    past = get(api, "s1/alice", blob, range="bytes=5000-", if_range=etag(b"other"))
    assert (past.status_code, past.content) == (200, DATA)  # not 416: the range is dropped
    alone = get(api, "s1/alice", blob, if_range=etag(b"other"))
    assert (alone.status_code, alone.content) == (200, DATA)


def test_if_range_sent_twice_names_no_etag_and_the_whole_blob_is_sent(
        api: Api, blob: str) -> None:
    headers = [("Authorization", f"Bearer {api.tokens['s1/alice']}"), ("Range", "bytes=0-1"),
               ("If-Range", etag(b"other")), ("If-Range", etag(b"another"))]
    answer = api.client.get(f"/v1/blobs/{blob}/content", headers=headers)
    assert (answer.status_code, answer.content) == (200, DATA)


def test_who_may_read_is_decided_before_the_range(api: Api, blob: str) -> None:
    for header in ("bytes=0-9", "bytes=5000-", "bytes=junk"):
        must_fail(get(api, None, blob, range=header), 401, "UNAUTHENTICATED")
        must_fail(get(api, "s2/dave", blob, range=header), 404, "NOT_FOUND")  # another space
        must_fail(get(api, "s1/bob", blob, range=header), 404, "NOT_FOUND")  # not his to read
        must_fail(get(api, "s1/alice", "blb_missing", range=header), 404, "NOT_FOUND")
        must_fail(get(api, "s1/alice", "bad.id", range=header), 400, "INVALID_REQUEST",
                  "blob_id")


def test_a_range_across_chunk_boundaries_reads_only_its_chunks(api: Api, blob: str) -> None:
    store = store_of(api, 16)
    before = store.streamed.chunks
    answer = get(api, "s1/alice", blob, range="bytes=10-40")
    assert answer.status_code == 206
    assert answer.content == DATA[10:41]
    assert store.streamed.chunks - before == 2  # 31 bytes from a seek: 16 + 15
    assert store.streamed.largest <= 16


def test_a_range_of_a_large_blob_streams_in_bounded_chunks(api: Api) -> None:
    store = store_of(api, 64 * 1024)
    content = bytes(range(256)) * (5 * 1024 + 3)  # 1.25 MiB and a bit: past the 1 MiB buffer
    large = sealed_blob(api, "s1/alice", content)
    start, end = 100_001, 1_250_000
    before = store.streamed.chunks
    answer = get(api, "s1/alice", large, range=f"bytes={start}-{end}")
    assert answer.status_code == 206
    assert answer.content == content[start:end + 1]
    assert answer.headers["Content-Range"] == f"bytes {start}-{end}/{len(content)}"
    assert store.streamed.chunks - before == math.ceil((end - start + 1) / store.chunk_bytes)
    assert store.streamed.largest <= store.chunk_bytes


def test_ranged_answers_conform_to_the_document(api: Api, blob: str) -> None:
    doc: dict[str, Any] = api.client.get("/openapi.json").json()
    assert conforms(doc, "get", CONTENT, get(api, "s1/alice", blob, range="bytes=1-2")) == \
        DATA[1:3]
    assert conforms(doc, "get", CONTENT, get(api, "s1/alice", blob, range="bytes=-1")) == \
        DATA[-1:]
    assert conforms(doc, "get", CONTENT, get(api, "s1/alice", blob, range="bytes=9999-")) == b""
    assert conforms(doc, "get", CONTENT, get(api, "s1/alice", blob, range="bytes=2-1")) == DATA
    params = {p["name"] for p in doc["paths"][CONTENT]["get"]["parameters"]}
    assert {"Range", "If-Range"} <= params


def test_the_range_rules() -> None:
    assert ranges.parse(None) is None
    assert ranges.parse("bytes=3-") == ranges.Wanted(3, None)
    assert ranges.parse("bytes=-3") == ranges.Wanted(None, suffix=3)
    assert ranges.resolve(ranges.Wanted(3, None), 10) == ranges.Span(3, 9, 10)
    assert ranges.resolve(ranges.Wanted(None, suffix=3), 10).length == 3
    with pytest.raises(ranges.Unsatisfiable):
        ranges.resolve(ranges.Wanted(10, 12), 10)
    assert ranges.if_range_holds(None, "ab")
    assert ranges.if_range_holds(' "ab" ', "ab")
    assert not ranges.if_range_holds('W/"ab"', "ab")


async def _pieces(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def test_a_whole_object_from_an_older_gateway_is_cut_to_the_range() -> None:
    async def window(skip: int, length: int | None) -> list[bytes]:
        return [c async for c in _window(_pieces(b"abcd", b"efgh", b"ijkl"), skip, length)]

    assert asyncio.run(window(0, None)) == [b"abcd", b"efgh", b"ijkl"]
    assert asyncio.run(window(5, 4)) == [b"fgh", b"i"]
    assert asyncio.run(window(4, 4)) == [b"efgh"]
    assert asyncio.run(window(0, 2)) == [b"ab"]
    assert asyncio.run(window(11, 1)) == [b"l"]


@pytest.mark.d1
def test_on_r2_the_gateway_reads_only_the_range(d1_settings: Settings) -> None:
    with TestClient(build_app(d1_settings), raise_server_exceptions=False) as client:
        api = Api(client)
        api.space("s1")
        content = bytes(range(256)) * 8 * 1024 + b"tail"  # 2 MiB and a bit: past R2's chunk
        large = sealed_blob(api, "s1/alice", content)
        for header, start, end in (("bytes=1000000-2097155", 1000000, 2097155),
                                   ("bytes=-4", len(content) - 4, len(content) - 1),
                                   ("bytes=0-0", 0, 0)):
            answer = get(api, "s1/alice", large, range=header)
            assert answer.status_code == 206, answer.text
            assert answer.content == content[start:end + 1]
            assert answer.headers["Content-Range"] == f"bytes {start}-{end}/{len(content)}"
        assert get(api, "s1/alice", large, range=f"bytes={len(content)}-").status_code == 416
        whole = get(api, "s1/alice", large, range="bytes=0-9", if_range=etag(b"other"))
        assert (whole.status_code, whole.content) == (200, content)

        store = served_context(client.app).blobs
        assert isinstance(store, R2BlobStore)
        portal = client.portal
        assert portal is not None
        portal.call(store.create_only, "obj_range_check", one_chunk(b"0123456789"))
        asked = portal.call(partial(store.client.get, "/r2/obj_range_check",
                                    headers={"range": "bytes=2-5"}))
        assert asked.status_code == 206  # the gateway read the range itself
        assert (asked.content, asked.headers["content-range"]) == (b"2345", "bytes 2-5/10")

        async def streamed() -> bytes:
            return b"".join([c async for c in store.stream("obj_range_check", 7, 3)])

        assert portal.call(streamed) == b"789"
