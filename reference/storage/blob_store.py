"""What a blob store is: create-only immutable objects under server-generated references."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ObjectFacts:
    """The verified facts of stored bytes."""

    size: int
    sha256: bytes


class Written(enum.Enum):
    CREATED = "created"
    ALREADY_PRESENT = "already_present"


class ObjectConflict(Exception):
    """An object exists under the reference with other facts: it is never overwritten."""


class FactsMismatch(Exception):
    """The streamed bytes are not the expected size and SHA-256: nothing was stored."""


class BlobStore(Protocol):
    """Create-only object storage (protocol.md §10): the service decides who may read what."""

    async def create_only(self, object_ref: str, chunks: AsyncIterable[bytes],
                          expected: ObjectFacts | None = None) -> tuple[Written, ObjectFacts]:
        """Store the bytes unless an object exists; an existing one is compared by its facts.
        With ``expected``, bytes that do not match (size checked while streaming) are never
        stored: :class:`FactsMismatch`."""
        ...

    async def remove(self, object_ref: str) -> None:
        """Delete an object; only cleanup of an expired upload, after its claim, does this."""
        ...

    async def inspect(self, object_ref: str) -> ObjectFacts | None:
        ...

    async def read(self, object_ref: str) -> bytes:
        """The whole object (small objects only: message bodies)."""
        ...

    def stream(self, object_ref: str, start: int = 0,
               length: int | None = None) -> AsyncIterator[bytes]:
        """The object's bytes in bounded chunks, never held whole: ``length`` bytes (None: to
        the end) from offset ``start``, which the caller keeps within the object."""
        ...


async def one_chunk(data: bytes) -> AsyncIterable[bytes]:
    """Bytes already in memory as a one-chunk stream."""
    yield data
