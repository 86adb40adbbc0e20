"""Local file blob store: temp file, fsync, link (create-only), directory fsync.

Every file operation runs on a worker thread; the event loop only hands over buffers of at most
:data:`BUFFER` bytes. Reads take :data:`BUFFER` bytes per thread hop and stream them on in
chunks of ``chunk_bytes`` (:data:`CHUNK`): a small chunk keeps each step of the event loop short
(the socket's buffer holds one chunk, not a megabyte copied and shifted as a slow client drains
it), while one hop per megabyte keeps the hand-offs between threads few.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from waypost.adapters.durable import DISK, FileCalls, make_dirs
from waypost.reference.storage.blob_store import FactsMismatch, ObjectConflict, ObjectFacts, Written

_REF = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: Bytes gathered from the request before one write on a thread; bytes read per thread hop.
BUFFER = 1 << 20
#: Bytes a download hands the server per step (asyncio's default write buffer high mark).
CHUNK = 64 << 10


@dataclass
class StreamStats:
    """What downloads have read so far: how many chunks, the largest (tests read it)."""

    chunks: int = 0
    largest: int = 0


@dataclass
class _Upload:
    """An object being written: its temp file (opened on the first write) and its facts."""

    temp: Path
    final: Path
    calls: FileCalls
    out: BinaryIO | None = None
    size: int = 0
    hasher: Any = field(default_factory=hashlib.sha256)

    def discard(self) -> None:
        if self.out is not None:
            self.out.close()
            self.out = None
        self.calls.unlink(self.temp)


class FileBlobStore:
    """Objects live at ``root/<last two characters>/<object_ref>``. Every call that changes
    the disk goes through ``calls`` (a test deployment's power-cut shim, or the system's)."""

    def __init__(self, root: Path, *, durable: bool = True, chunk_bytes: int = CHUNK,
                 calls: FileCalls = DISK) -> None:
        self.root = root
        self.durable = durable  # False skips fsyncs: for throwaway test targets only
        self.chunk_bytes = chunk_bytes
        self.calls = calls
        self.streamed = StreamStats()
        # objects/ may be new in a data directory with files
        make_dirs(root, durable=durable, calls=calls)

    def path(self, object_ref: str) -> Path:
        if not _REF.fullmatch(object_ref):
            raise ValueError("object references are server-generated ids")
        return self.root / object_ref[-2:] / object_ref

    async def create_only(self, object_ref: str, chunks: AsyncIterable[bytes],
                          expected: ObjectFacts | None = None) -> tuple[Written, ObjectFacts]:
        final = self.path(object_ref)
        upload = _Upload(final.parent / f".tmp-{secrets.token_hex(8)}", final, self.calls)
        try:
            size, pending = 0, bytearray()
            async for chunk in chunks:
                size += len(chunk)
                if expected is not None and size > expected.size:
                    raise FactsMismatch(object_ref)  # capped while streaming
                pending += chunk
                if len(pending) >= BUFFER:
                    await asyncio.to_thread(self._write, upload, bytes(pending))
                    pending.clear()
            # One hop for a small object (a message body): write, fsync, check, link.
            return await asyncio.to_thread(self._complete, upload, bytes(pending), expected)
        finally:
            if upload.out is not None:
                await asyncio.to_thread(upload.discard)

    def _write(self, upload: _Upload, data: bytes) -> None:
        if upload.out is None:
            # a new shard directory must survive a power cut (its entry in the root is synced)
            make_dirs(upload.temp.parent, durable=self.durable, calls=self.calls)
            upload.out = self.calls.create(upload.temp)  # closed by discard
        upload.hasher.update(data)
        upload.out.write(data)
        upload.size += len(data)

    def _complete(self, upload: _Upload, data: bytes,
                  expected: ObjectFacts | None) -> tuple[Written, ObjectFacts]:
        try:
            return self._store(upload, data, expected)
        finally:
            upload.discard()

    def _store(self, upload: _Upload, data: bytes,
               expected: ObjectFacts | None) -> tuple[Written, ObjectFacts]:
        self._write(upload, data)
        assert upload.out is not None
        upload.out.flush()
        if self.durable:
            self.calls.fsync(upload.out)
        facts = ObjectFacts(upload.size, upload.hasher.digest())
        if expected is not None and facts != expected:
            raise FactsMismatch(upload.final.name)
        try:
            self.calls.link(upload.temp, upload.final)
        except FileExistsError:
            if _facts_of(upload.final) != facts:
                raise ObjectConflict(upload.final.name) from None
            self._fsync_dir(upload.final.parent)  # an earlier attempt may have died before it
            return Written.ALREADY_PRESENT, facts
        self._fsync_dir(upload.final.parent)
        return Written.CREATED, facts

    async def inspect(self, object_ref: str) -> ObjectFacts | None:
        return await asyncio.to_thread(_facts_of, self.path(object_ref))

    async def read(self, object_ref: str) -> bytes:
        return await asyncio.to_thread(self.path(object_ref).read_bytes)

    async def stream(self, object_ref: str, start: int = 0,
                     length: int | None = None) -> AsyncIterator[bytes]:
        """``length`` bytes of the object (None: to its end) from offset ``start`` (a seek),
        in chunks of at most ``chunk_bytes``, read on a thread about :data:`BUFFER` bytes at a
        time (a whole number of chunks)."""
        size = self.chunk_bytes
        block_bytes = size * max(1, BUFFER // size)
        stored = await asyncio.to_thread(open, self.path(object_ref), "rb")
        try:
            if start:
                await asyncio.to_thread(stored.seek, start)
            left = length
            while left is None or left > 0:
                want = block_bytes if left is None else min(block_bytes, left)
                block = await asyncio.to_thread(stored.read, want)
                if not block:
                    break
                if left is not None:
                    left -= len(block)
                for offset in range(0, len(block), size):
                    chunk = block[offset:offset + size]
                    self.streamed.chunks += 1
                    self.streamed.largest = max(self.streamed.largest, len(chunk))
                    yield chunk
        finally:
            await asyncio.to_thread(stored.close)

    async def remove(self, object_ref: str) -> None:
        await asyncio.to_thread(self._remove, self.path(object_ref))

    def _remove(self, path: Path) -> None:
        self.calls.unlink(path)
        self._fsync_dir(path.parent)

    def _fsync_dir(self, directory: Path) -> None:
        if self.durable:
            self.calls.sync_dir(directory)


def _facts_of(path: Path) -> ObjectFacts | None:
    try:
        with open(path, "rb") as stored:
            hasher, size = hashlib.sha256(), 0
            while block := stored.read(BUFFER):
                hasher.update(block)
                size += len(block)
    except FileNotFoundError:
        return None
    return ObjectFacts(size, hasher.digest())


