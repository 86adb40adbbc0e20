"""Local file blob store: temp file, fsync, link (create-only), directory fsync."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import AsyncIterable
from pathlib import Path

from waypost.reference.storage.blob_store import FactsMismatch, ObjectConflict, ObjectFacts, Written

_REF = re.compile(r"[A-Za-z0-9_-]{1,128}")


class FileBlobStore:
    """Objects live at ``root/<first two characters after the prefix>/<object_ref>``."""

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = root
        self.durable = durable  # False skips fsyncs: for throwaway test targets only
        root.mkdir(parents=True, exist_ok=True)

    def path(self, object_ref: str) -> Path:
        if not _REF.fullmatch(object_ref):
            raise ValueError("object references are server-generated ids")
        return self.root / object_ref[-2:] / object_ref

    async def create_only(self, object_ref: str, chunks: AsyncIterable[bytes],
                          expected: ObjectFacts | None = None) -> tuple[Written, ObjectFacts]:
        final = self.path(object_ref)
        if not final.parent.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            self._fsync_dir(self.root)  # the new shard directory itself must survive a crash
        temp = final.parent / f".tmp-{secrets.token_hex(8)}"
        hasher, size = hashlib.sha256(), 0
        try:
            with open(temp, "xb") as out:
                async for chunk in chunks:
                    size += len(chunk)
                    if expected is not None and size > expected.size:
                        raise FactsMismatch(object_ref)  # capped while streaming
                    hasher.update(chunk)
                    out.write(chunk)
                out.flush()
                if self.durable:
                    os.fsync(out.fileno())
            facts = ObjectFacts(size, hasher.digest())
            if expected is not None and facts != expected:
                raise FactsMismatch(object_ref)
            try:
                os.link(temp, final)
            except FileExistsError:
                existing = await self.inspect(object_ref)
                if existing != facts:
                    raise ObjectConflict(object_ref) from None
                self._fsync_dir(final.parent)  # an earlier attempt may have died before its fsync
                return Written.ALREADY_PRESENT, facts
            self._fsync_dir(final.parent)
            return Written.CREATED, facts
        finally:
            temp.unlink(missing_ok=True)

    async def inspect(self, object_ref: str) -> ObjectFacts | None:
        path = self.path(object_ref)
        try:
            with open(path, "rb") as stored:
                hasher, size = hashlib.sha256(), 0
                while block := stored.read(1 << 20):
                    hasher.update(block)
                    size += len(block)
        except FileNotFoundError:
            return None
        return ObjectFacts(size, hasher.digest())

    async def read(self, object_ref: str) -> bytes:
        return self.path(object_ref).read_bytes()

    async def remove(self, object_ref: str) -> None:
        self.path(object_ref).unlink(missing_ok=True)
        self._fsync_dir(self.path(object_ref).parent)

    def _fsync_dir(self, directory: Path) -> None:
        if self.durable:
            _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
