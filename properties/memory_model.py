"""The kit's model of memory collections (protocol.md §9): every state a collection published,
the state a publish makes on its parent, and the input no state can make valid."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from waypost.properties.model import Item


Entries = dict[str, dict[str, Any]]  # item_id -> the public entry shape (protocol.md §6)


@dataclass
class Collection:
    """A collection and every state it published: ``states[r]`` is revision ``r``'s entries
    (``states[0]`` the empty revision 0); what the server showed of each revision is kept so a
    later read must show the same (P13)."""

    collection_id: str
    space: str
    source_actor_id: str
    scope: str
    states: list[Entries] = field(default_factory=lambda: [{}])
    shown: dict[int, dict[str, Any]] = field(default_factory=dict)  # revision metadata
    items: dict[int, Item] = field(default_factory=dict)  # revision -> its feed item

    @property
    def head(self) -> int:
        return len(self.states) - 1


def next_state(parent: Entries, mode: str, items: list[dict[str, Any]],
               delete_ids: list[str], revision: int) -> Entries | str:
    """protocol.md §9: the state a publish makes on ``parent``, or the error code of input the
    parent makes invalid."""
    if any(item_id not in parent for item_id in delete_ids):
        return "INVALID_REQUEST"  # deleting an id never seen
    upserts = {item["item_id"]: item for item in items}
    state: Entries = {}
    for item_id, entry in parent.items():
        if item_id in upserts:
            continue
        gone = entry["state"] == "active" and (mode == "snapshot" or item_id in delete_ids)
        state[item_id] = ({"item_id": item_id, "state": "tombstone",
                           "deleted_in_revision": revision} if gone else entry)
    for item_id, item in upserts.items():
        state[item_id] = {"item_id": item_id, "state": "active", "path": item["path"],
                          "blob_id": item["blob_id"], "metadata": item.get("metadata", {})}
    paths = [entry["path"] for entry in state.values() if entry["state"] == "active"]
    if len(paths) != len(set(paths)):
        return "INVALID_REQUEST"  # two active entries on one path
    return state


def input_errors(mode: str, items: list[dict[str, Any]], delete_ids: list[str]) -> set[str]:
    """Input that is invalid whatever the collection holds."""
    ids = [item["item_id"] for item in items]
    paths = [item["path"] for item in items]
    if (len(set(ids)) != len(ids) or len(set(paths)) != len(paths)
            or len(set(delete_ids)) != len(delete_ids) or set(ids) & set(delete_ids)
            or (mode == "snapshot" and delete_ids)):
        return {"INVALID_REQUEST"}
    return set()
