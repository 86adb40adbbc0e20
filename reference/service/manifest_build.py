"""A revision's manifest and state fingerprint, built as they stream (protocol.md WP-MEM-14,
WP-MEM-24): the parent revision's entries are read a page at a time in ``item_id`` order (the
database composes each entry's canonical JSON), merged with the publish's changes on a worker
thread, hashed for the fingerprint and written to the blob store chunk by chunk. A server holds
one page at a time, never the collection, and the event loop only passes chunks along."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field

from waypost.reference.domain.memory_change import StateMerger, manifest_head, manifest_tail
from waypost.reference.domain.memory_requests import Changes
from waypost.reference.service.context import Context
from waypost.reference.storage import memory as sql
from waypost.reference.storage.blob_store import ObjectFacts

#: Parent entries read per page: at most about 5.3 KB each (a 1 KiB path, 4 KiB of metadata),
#: so a page stays under 3 MB.
PAGE = 512
#: The parent's first page, read with what a publish decides from (before it knows whether it
#: changes anything): small, so that an unchanged or refused publish reads little.
FIRST_PAGE = 64
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
    #: the parent's first :data:`FIRST_PAGE` entries, if they were read already (``page_of``)
    first_page: list[tuple[str, str, str]] | None = None
    #: the manifest's size as the publish decided it (``Decision.manifest_bytes``)
    size: int | None = None


def page_of(rows: Sequence[Sequence[object]]) -> list[tuple[str, str, str]]:
    """The rows of ``storage.memory.manifest_page_statement`` as ``(item_id, kind, json)``."""
    return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]


@dataclass
class _Progress:
    merger: StateMerger
    fingerprint: hashlib._Hash = field(default_factory=hashlib.sha256)
    entries: int = 0

    def take(self, pairs: Iterator[tuple[bytes, bytes]]) -> bytes | None:
        """The manifest bytes of the next :data:`PAGE` pairs at most, hashing their
        fingerprint forms on the way; None once ``pairs`` is exhausted."""
        batch = list(itertools.islice(pairs, PAGE))
        if not batch:
            return None
        lead = b"," if self.entries else b""
        self.entries += len(batch)
        chunk = lead + b",".join(entry for entry, _ in batch)
        if all(entry is print_ for entry, print_ in batch):
            self.fingerprint.update(chunk)  # no tombstone: the same bytes
        else:
            self.fingerprint.update(lead + b",".join(print_ for _, print_ in batch))
        return chunk


async def _chunks(pairs: Iterator[tuple[bytes, bytes]], progress: _Progress,
                  small: bool) -> AsyncIterator[bytes]:
    """The chunks of ``pairs``, each of at most :data:`PAGE` entries, merged on a worker
    thread unless ``small``."""
    while True:
        chunk = (progress.take(pairs) if small
                 else await asyncio.to_thread(progress.take, pairs))
        if chunk is None:
            return
        yield chunk


async def _stream(ctx: Context, target: Target, progress: _Progress) -> AsyncIterator[bytes]:
    progress.fingerprint.update(b"[")
    yield manifest_head(target.collection_id)
    small = len(target.changes.items) <= INLINE_ROWS
    after, page, asked = "", target.first_page, FIRST_PAGE
    while True:
        if page is None:
            asked = PAGE
            (rows,) = await ctx.driver.read([sql.manifest_page_statement(
                target.space_id, target.collection_id, target.expected_revision, after, PAGE)])
            page = page_of(rows)
        if page:
            async for chunk in _chunks(progress.merger.feed(page), progress,
                                       small and len(page) <= INLINE_ROWS):
                yield chunk
            after = page[-1][0]
        if len(page) < asked:
            break
        page = None
    async for chunk in _chunks(progress.merger.close(), progress, small):
        yield chunk
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
    if target.size is not None and facts.size != target.size:
        # the limit (revision_manifest_bytes) was checked on the decided size: never let a
        # manifest of another size be committed
        raise RuntimeError(f"the manifest written is {facts.size} bytes, {target.size} decided")
    return progress.fingerprint.digest(), facts


async def fingerprint(ctx: Context, target: Target) -> bytes:
    """The state fingerprint alone (a publish resumed after its manifest was written)."""
    progress = _progress(target)
    async for _ in _stream(ctx, target, progress):
        pass
    return progress.fingerprint.digest()
