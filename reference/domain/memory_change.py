"""What a publish changes, decided from what its input names (protocol.md §9.3–9.4, §11): the
open entries of the items it upserts or deletes, the open active entries on its paths, and the
head's totals. Nothing here reads the whole collection, so deciding costs what the input holds.

``decide`` refuses input the head makes invalid (WP-MEM-10, WP-MEM-12), over
``memory_entries_per_revision`` (WP-MEM-13) or ``revision_manifest_bytes``; otherwise it tells
whether the state stays the same (WP-MEM-15: every upsert equals its active entry, every delete
names a tombstone, a snapshot lists every active entry) and the new revision's entry count and
manifest size. :class:`StateMerger` then builds the new state in ``item_id`` order from the
parent's entries as the database composes them, for the manifest and the fingerprint at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from waypost.reference.domain.canonical import canonical_json
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit
from waypost.reference.domain.memory_state import MANIFEST_VERSION, ItemInput
from waypost.reference.domain.published_limits import Limits

_TOMBSTONE = len(b'{"deleted_in_revision":,"item_id":"","state":"tombstone"}')


def quoted(text: str) -> str:
    """A JSON string as RFC 8785 writes it (``json.dumps`` escapes exactly the same characters
    the same way for any text without lone surrogates, which JSON input cannot carry)."""
    return json.dumps(text, ensure_ascii=False)


def active_json(item: ItemInput) -> bytes:
    """The canonical JSON of the active entry an upsert gives (keys in RFC 8785 order)."""
    return (f'{{"blob_id":{quoted(item.blob_id)},"item_id":{quoted(item.item_id)},'
            f'"metadata":{metadata_json(item)},"path":{quoted(item.path)},'
            f'"state":"active"}}').encode()


def metadata_json(item: ItemInput) -> str:
    """An upsert's metadata as stored: canonical JSON, ``{}`` when omitted."""
    return canonical_json(item.metadata or {}).decode()


def tombstone_json(item_id: str, revision: int) -> bytes:
    return f'{{"deleted_in_revision":{revision},"item_id":{quoted(item_id)},"state":"tombstone"}}'.encode()


def fingerprinted_tombstone(item_id: str) -> bytes:
    return f'{{"item_id":{quoted(item_id)},"state":"tombstone"}}'.encode()


def manifest_head(collection_id: str) -> bytes:
    return b'{"collection_id":' + canonical_json(collection_id) + b',"entries":['


def manifest_tail(revision: int, parent_revision: int) -> bytes:
    return (f'],"manifest_version":{MANIFEST_VERSION},"parent_revision":{parent_revision},'
            f'"revision":{revision}}}').encode()


@dataclass(frozen=True)
class Open:
    """An open row (an entry of the head) that a publish names or whose path it takes: its
    kind, fields as stored, and JSON size."""

    item_id: str
    active: bool
    path: str | None
    blob_id: str | None
    metadata_json: str | None
    entry_bytes: int

    def equals(self, item: ItemInput) -> bool:
        """The upsert would leave this entry as it is."""
        return (self.active and self.path == item.path and self.blob_id == item.blob_id
                and self.metadata_json == metadata_json(item))


@dataclass(frozen=True)
class Totals:
    """The head's entries in sums: its entries, the bytes of their canonical JSON, and the same
    for its active entries (with the bytes of their item ids, for tombstoning them all)."""

    entries: int
    entry_bytes: int
    active: int
    active_bytes: int
    active_id_bytes: int


@dataclass(frozen=True)
class Decision:
    """A valid publish on the head: whether it changes the state, and the new revision's
    entry count and manifest size."""

    unchanged: bool
    entries: int
    manifest_bytes: int


def decide(collection_id: str, expected: int, mode: str, items: Sequence[ItemInput],
           delete_ids: Sequence[str], named: Mapping[str, Open], on_paths: Mapping[str, Open],
           totals: Totals, limits: Limits) -> Decision:
    """Check the input against the head and size its result (see the module's docstring)."""
    revision = expected + 1
    for item_id in delete_ids:
        if item_id not in named:
            raise InvalidRequest("delete_ids names an item never published in this collection",
                                 field="delete_ids", item_id=item_id)
    if mode == "delta":
        _paths_free(items, set(delete_ids), on_paths)
    entries = totals.entries + sum(1 for item in items if item.item_id not in named)
    if entries > limits.memory_entries_per_revision:
        raise _over("memory_entries_per_revision", limits.memory_entries_per_revision)
    size = totals.entry_bytes + sum(len(active_json(item)) - (
        named[item.item_id].entry_bytes if item.item_id in named else 0) for item in items)
    if mode == "snapshot":
        change, unchanged = _snapshot(items, named, totals, revision)
    else:
        change, unchanged = _delta(items, delete_ids, named, revision)
    size += change + (len(manifest_head(collection_id)) + len(manifest_tail(revision, expected))
                      + max(entries - 1, 0))
    if not unchanged and size > limits.revision_manifest_bytes:
        raise _over("revision_manifest_bytes", limits.revision_manifest_bytes)
    return Decision(unchanged, entries, size)


def _snapshot(items: Sequence[ItemInput], named: Mapping[str, Open], totals: Totals,
              revision: int) -> tuple[int, bool]:
    """A snapshot's bytes beyond its upserts (every unlisted active entry becomes a
    tombstone), and whether the state stays the same."""
    kept = [named[item.item_id] for item in items
            if item.item_id in named and named[item.item_id].active]
    gone = totals.active - len(kept)
    gone_ids = totals.active_id_bytes - sum(len(entry.item_id) for entry in kept)
    change = (gone * (_TOMBSTONE + len(str(revision))) + gone_ids
              - (totals.active_bytes - sum(entry.entry_bytes for entry in kept)))
    unchanged = len(kept) == totals.active == len(items) and all(
        named[item.item_id].equals(item) for item in items)
    return change, unchanged


def _delta(items: Sequence[ItemInput], delete_ids: Sequence[str], named: Mapping[str, Open],
           revision: int) -> tuple[int, bool]:
    """A delta's bytes beyond its upserts (each deleted active entry becomes a tombstone), and
    whether the state stays the same."""
    deleted = [named[i] for i in delete_ids if named[i].active]
    change = sum(len(tombstone_json(e.item_id, revision)) - e.entry_bytes for e in deleted)
    unchanged = not deleted and all(
        item.item_id in named and named[item.item_id].equals(item) for item in items)
    return change, unchanged


def _over(limit: str, high: int) -> ResourceLimit:
    return ResourceLimit(f"the revision would pass {limit}", field="items", limit=limit, max=high)


def _paths_free(items: Sequence[ItemInput], deleted: set[str],
                on_paths: Mapping[str, Open]) -> None:
    """A delta's upserts take paths no other remaining active entry holds (WP-MEM-12); the
    collision named is the first in ``item_id`` order, as a walk of the new state meets it."""
    upserted = {item.item_id for item in items}
    collisions = []
    for item in items:
        holder = on_paths.get(item.path)
        if (holder is not None and holder.item_id != item.item_id
                and holder.item_id not in upserted and holder.item_id not in deleted):
            collisions.append(sorted((holder.item_id, item.item_id)))
    if collisions:
        first = min(collisions, key=lambda pair: (pair[1], pair[0]))
        raise InvalidRequest("two active entries would share one path", field="items",
                             path=next(i.path for i in items if i.item_id in first),
                             item_ids=first)


class StateMerger:
    """The new state's entries in ``item_id`` order: the parent's entries (as the database
    composes their canonical JSON, page after page in ``item_id`` order) merged with the
    upserts, deletes tombstoned (delta) or every unlisted active entry (snapshot).

    ``feed`` and ``close`` give ``(manifest JSON, fingerprint JSON)`` pairs: the two differ
    only for tombstones, which the fingerprint shows without ``deleted_in_revision`` (an active
    entry's pair is one object twice)."""

    def __init__(self, mode: str, items: Sequence[ItemInput], delete_ids: Sequence[str],
                 revision: int) -> None:
        self.mode, self.revision = mode, revision
        self.upserts = sorted(items, key=lambda item: item.item_id)
        self.deletes = set(delete_ids)
        self.next_upsert = 0

    def _upserts_before(self, item_id: str | None) -> Iterator[tuple[bytes, bytes]]:
        while self.next_upsert < len(self.upserts) and (
                item_id is None or self.upserts[self.next_upsert].item_id < item_id):
            entry = active_json(self.upserts[self.next_upsert])
            self.next_upsert += 1
            yield entry, entry

    def feed(self, rows: Sequence[tuple[str, str, str]]) -> Iterator[tuple[bytes, bytes]]:
        """Merge ``(item_id, entry_kind, entry_json)`` rows of the parent, in order (lazily:
        consume it before the next call)."""
        for item_id, kind, stored in rows:
            yield from self._upserts_before(item_id)
            if (self.next_upsert < len(self.upserts)
                    and self.upserts[self.next_upsert].item_id == item_id):
                continue  # the upsert replaces it, in the next call of _upserts_before
            if kind == "active" and (self.mode == "snapshot" or item_id in self.deletes):
                yield tombstone_json(item_id, self.revision), fingerprinted_tombstone(item_id)
            elif kind == "active":
                encoded = stored.encode()
                yield encoded, encoded
            else:
                yield stored.encode(), fingerprinted_tombstone(item_id)

    def close(self) -> Iterator[tuple[bytes, bytes]]:
        """The upserts after the parent's last entry."""
        return self._upserts_before(None)
