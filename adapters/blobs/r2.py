"""R2 blob store through the gateway Worker: create-only puts (``onlyIf`` no object yet) that R2
itself verifies against the SHA-256 we send, so stored bytes always have the facts we claim."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterable, AsyncIterator

import httpx

from waypost.adapters.d1.http import send
from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.storage.blob_store import FactsMismatch, ObjectConflict, ObjectFacts, Written

#: The most bytes one chunk of a download holds.
CHUNK = 1 << 20


class R2BlobStore:
    """Objects under their server-generated reference in the gateway's bucket."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client  # the gateway's (``gateway_client``); its owner closes it

    async def create_only(self, object_ref: str, chunks: AsyncIterable[bytes],
                          expected: ObjectFacts | None = None) -> tuple[Written, ObjectFacts]:
        if expected is None:
            # Objects without announced facts are the server's own (bodies, manifests), already
            # in memory: their facts come from the bytes.
            data = b"".join([chunk async for chunk in chunks])
            expected, chunks = ObjectFacts(len(data), hashlib.sha256(data).digest()), _once(data)
        headers = {"content-length": str(expected.size), "x-sha256": expected.sha256.hex()}
        response = await send(self.client, "PUT", f"/r2/{object_ref}", headers=headers,
                              content=_capped(object_ref, chunks, expected.size))
        if response.status_code == 422:
            raise FactsMismatch(object_ref)  # R2 refused bytes whose SHA-256 differs
        response.raise_for_status()
        stored = _facts(response.json())
        if response.status_code == 201:
            return Written.CREATED, stored
        if stored != expected:
            raise ObjectConflict(object_ref)
        return Written.ALREADY_PRESENT, stored

    async def inspect(self, object_ref: str) -> ObjectFacts | None:
        response = await send(self.client, "HEAD", f"/r2/{object_ref}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return _facts({"size": response.headers["x-size"], "sha256": response.headers["x-sha256"]})

    async def read(self, object_ref: str) -> bytes:
        response = await send(self.client, "GET", f"/r2/{object_ref}")
        response.raise_for_status()
        return response.content

    async def stream(self, object_ref: str, start: int = 0,
                     length: int | None = None) -> AsyncIterator[bytes]:
        """The object's bytes in chunks of at most :data:`CHUNK`; a range (``length`` bytes
        from ``start``) is asked of the gateway, which reads only it from R2 (``206``). A
        gateway that answers the whole object (``200``: one older than ranges) has the bytes
        before ``start`` skipped as they stream and the rest cut at ``length``."""
        headers = {"range": f"bytes={start}-{start + length - 1}"} if length else {}
        try:
            async with self.client.stream("GET", f"/r2/{object_ref}",
                                          headers=headers) as response:
                if response.status_code >= 500 or response.status_code == 429:
                    raise StorageUnavailable(f"gateway answered {response.status_code}")
                if response.status_code == 404:  # as a file store's missing file
                    raise FileNotFoundError(object_ref)
                response.raise_for_status()
                skip = start if response.status_code == 200 else 0
                chunks = _window(response.aiter_bytes(CHUNK), skip, length)
                async for chunk in chunks:
                    yield chunk
        except httpx.TransportError as error:
            raise StorageUnavailable(f"gateway unreachable: {error!r}") from None

    async def remove(self, object_ref: str) -> None:
        (await send(self.client, "DELETE", f"/r2/{object_ref}")).raise_for_status()


def _facts(body: dict[str, object]) -> ObjectFacts:
    return ObjectFacts(int(str(body["size"])), bytes.fromhex(str(body["sha256"])))


async def _window(chunks: AsyncIterator[bytes], skip: int,
                  length: int | None) -> AsyncIterator[bytes]:
    """The bytes of ``chunks`` after the first ``skip``, at most ``length`` of them."""
    left = length
    async for chunk in chunks:
        if skip:
            dropped = min(skip, len(chunk))
            chunk, skip = chunk[dropped:], skip - dropped
        if left is not None:
            chunk = chunk[:left]
            left -= len(chunk)
        if chunk:
            yield chunk
        if left == 0:
            return


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def _capped(object_ref: str, chunks: AsyncIterable[bytes], size: int) -> AsyncIterator[bytes]:
    """Forward the stream, stopping it the moment it runs past ``size`` (nothing is stored:
    the put never completes)."""
    sent = 0
    async for chunk in chunks:
        sent += len(chunk)
        if sent > size:
            raise FactsMismatch(object_ref)
        yield chunk
    if sent < size:
        raise FactsMismatch(object_ref)
