"""A revision's manifest and state fingerprint, built as they stream (protocol.md WP-MEM-14,
WP-MEM-24): the parent revision's entries are read a page at a time in ``item_id`` order (the
database composes each entry's canonical JSON), merged with the publish's changes on a worker
thread, hashed for the fingerprint and written to the blob store chunk by chunk. A server holds
one page at a time, never the collection, and the event loop only passes chunks along."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from waypost.reference.domain.memory_change import StateMerger, manifest_head, manifest_tail
from waypost.reference.domain.memory_requests import Changes
from waypost.reference.service.context import Context
from waypost.reference.storage import memory as sql
from waypost.reference.storage.blob_store import ObjectFacts

#: Parent entries read per page: at most about 5.3 KB each (a 1 KiB path, 4 KiB of metadata),
#: so a page stays under 3 MB.
PAGE = 512
#: Fewer rows than this are merged on the event loop: the hop to a thread would cost more.
INLINE_ROWS = 32


@dataclass(frozen=True)
class Target:
    """The revision being built: its collection, parent and the changes applied to it."""

    space_id: str
    collection_id: str
    expected_revision: int
    mode: str
    changes: Changes
    #: the parent's first page of entries, if it was read already (``page_of``)
    first_page: list[tuple[str, str, str]] | None = None


def page_of(rows: Sequence[Sequence[object]]) -> list[tuple[str, str, str]]:
    """The rows of ``storage.memory.manifest_page_statement`` as ``(item_id, kind, json)``."""
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


@dataclass
class _Progress:
    merger: StateMerger
    fingerprint: hashlib._Hash = field(default_factory=hashlib.sha256)
    entries: int = 0

    def chunk(self, pairs: Sequence[tuple[bytes, bytes]]) -> bytes:
        """The manifest bytes of ``pairs``, hashing their fingerprint forms on the way."""
        if not pairs:
            return b""
        lead = b"," if self.entries else b""
        self.entries += len(pairs)
        self.fingerprint.update(lead + b",".join(print_ for _, print_ in pairs))
        return lead + b",".join(entry for entry, _ in pairs)

    def page(self, rows: Sequence[tuple[str, str, str]]) -> bytes:
        return self.chunk(self.merger.feed(rows))

    def close(self) -> bytes:
        return self.chunk(self.merger.close())


async def _stream(ctx: Context, target: Target, progress: _Progress) -> AsyncIterator[bytes]:
    progress.fingerprint.update(b"[")
    yield manifest_head(target.collection_id)
    after, page = "", target.first_page
    while True:
        if page is None:
            (rows,) = await ctx.driver.read([sql.manifest_page_statement(
                target.space_id, target.collection_id, target.expected_revision, after, PAGE)])
            page = page_of(rows)
        if page:
            chunk = (progress.page(page) if len(page) <= INLINE_ROWS
                     else await asyncio.to_thread(progress.page, page))
            if chunk:
                yield chunk
            after = page[-1][0]
        if len(page) < PAGE:
            break
        page = None
    rest = (progress.close() if len(target.changes.items) <= INLINE_ROWS
            else await asyncio.to_thread(progress.close))
    if rest:
        yield rest
    progress.fingerprint.update(b"]")
    yield manifest_tail(target.expected_revision + 1, target.expected_revision)


def _progress(target: Target) -> _Progress:
    return _Progress(StateMerger(target.mode, target.changes.items, target.changes.delete_ids,
                                 target.expected_revision + 1))


async def write(ctx: Context, target: Target, object_ref: str) -> tuple[bytes, ObjectFacts]:
    """Stream the manifest into the create-only object ``object_ref``: the state fingerprint
    and the object's facts."""
    progress = _progress(target)
    _, facts = await ctx.blobs.create_only(object_ref, _stream(ctx, target, progress))
    return progress.fingerprint.digest(), facts


async def fingerprint(ctx: Context, target: Target) -> bytes:
    """The state fingerprint alone (a publish resumed after its manifest was written)."""
    progress = _progress(target)
    async for _ in _stream(ctx, target, progress):
        pass
    return progress.fingerprint.digest()
