"""Memory state (protocol.md §9): entries, the next state of a publish, the state fingerprint and
the canonical revision manifest, as their plain definitions over a whole state. The server
decides a publish from what its input names (``memory_change.py``) and streams the manifest;
its tests and the vectors (``tools/make_vectors.py``) hold those to these definitions.

For example a delta that deletes ``"a"`` from ``{a: active}`` at revision 3 gives
``{a: tombstone, deleted_in_revision 3}``; a later snapshot without ``"a"`` keeps that tombstone
(with its original ``deleted_in_revision``) until an upsert revives it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.errors import InvalidRequest

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class ItemInput:
    """One upsert of a publish: ``{item_id, path, blob_id, metadata?}``."""

    item_id: str
    path: str
    blob_id: str
    metadata: dict[str, Any] | None  # None: omitted (the state stores ``{}``)


@dataclass(frozen=True)
class Entry:
    """One entry of a revision: active (path, blob, metadata) or a tombstone."""

    item_id: str
    path: str | None = None
    blob_id: str | None = None
    metadata: dict[str, Any] | None = None
    deleted_in_revision: int | None = None

    @property
    def active(self) -> bool:
        return self.deleted_in_revision is None

    def public(self) -> dict[str, Any]:
        """The entry shape of item pages and manifests."""
        if self.active:
            return {"item_id": self.item_id, "state": "active", "path": self.path,
                    "blob_id": self.blob_id, "metadata": self.metadata or {}}
        return {"item_id": self.item_id, "state": "tombstone",
                "deleted_in_revision": self.deleted_in_revision}

    def fingerprinted(self) -> dict[str, Any]:
        """The entry as the state fingerprint sees it (no revision numbers)."""
        if self.active:
            return self.public()
        return {"item_id": self.item_id, "state": "tombstone"}


State = Mapping[str, Entry]


def state_fingerprint(entries: Iterable[Entry]) -> bytes:
    """SHA-256 over JCS of the entries sorted by ``item_id`` (times and revisions excluded)."""
    return digest([entry.fingerprinted() for entry in sorted(entries, key=lambda e: e.item_id)])


EMPTY_FINGERPRINT = state_fingerprint(())


def next_state(parent: State, mode: str, items: Sequence[ItemInput], delete_ids: Sequence[str],
               revision: int) -> dict[str, Entry]:
    """The state ``revision`` publishes on top of ``parent``; rejects input that the parent
    makes invalid (deleting an id never seen, two active entries on one path)."""
    upserts = {item.item_id: item for item in items}
    state: dict[str, Entry] = {}
    for item_id, entry in parent.items():
        if item_id in upserts:
            continue
        gone = entry.active and (mode == "snapshot" or item_id in delete_ids)
        state[item_id] = Entry(item_id, deleted_in_revision=revision) if gone else entry
    for item_id in delete_ids:
        if item_id not in parent:
            raise InvalidRequest("delete_ids names an item never published in this collection",
                                 field="delete_ids", item_id=item_id)
    for item in items:
        state[item.item_id] = Entry(item.item_id, item.path, item.blob_id, item.metadata or {})
    paths: dict[str, str] = {}
    for entry in sorted(state.values(), key=lambda e: e.item_id):
        if entry.active:
            assert entry.path is not None
            if entry.path in paths:
                raise InvalidRequest("two active entries would share one path", field="items",
                                     path=entry.path, item_ids=[paths[entry.path], entry.item_id])
            paths[entry.path] = entry.item_id
    return state


def manifest(collection_id: str, revision: int, parent_revision: int, state: State) -> bytes:
    """The canonical manifest object of a revision: what its rows hold, as one document."""
    return canonical_json({
        "manifest_version": MANIFEST_VERSION, "collection_id": collection_id,
        "revision": revision, "parent_revision": parent_revision,
        "entries": [entry.public() for entry in sorted(state.values(), key=lambda e: e.item_id)],
    })
