"""A user's own writes are not work for them: the feed item that a send or publish of this
local file created is stored as done and acknowledged ``processed`` at once, never listed as
pending (docs/consumer.md, "Own writes"). The protocol gives a consumer no way to learn its
actor id, so "own" means written through this file: its outbox holds each write's answer."""

from __future__ import annotations

from typing import Any

from waypost.reference.consumer.store import LocalStore, now_ms

#: The condition under which the committed write ``o`` of this file created the feed item
#: ``{item_type}``/``{item_id}`` about ``{resource}``, version ``{version}``: a send answers its
#: ``feed_item_id`` (WP-HTTP-10), a changing publish its collection's new revision (WP-HTTP-16;
#: an unchanged one answers the head, which somebody else may have written).
_CREATED = """o.state = 'committed' AND (
    (o.operation = 'message.send' AND {item_type} = 'message'
     AND json_extract(o.result_json, '$.feed_item_id') = {item_id})
    OR (o.operation = 'memory.publish' AND {item_type} = 'memory_revision'
        AND json_extract(o.result_json, '$.changed') = 1
        AND o.collection_id = {resource}
        AND json_extract(o.result_json, '$.revision') = {version}))"""

_WRITTEN_HERE = "SELECT 1 FROM local_outbound o WHERE " + _CREATED.format(
    item_type="?1", item_id="?2", resource="?3", version="?4")

#: The stored items, still to be worked on, that the committed write ``?1`` created.
_ITEMS_OF_WRITE = """SELECT f.item_id FROM local_outbound o, local_feed_items f
    JOIN local_work w ON w.item_id = f.item_id
    WHERE o.outbound_id = ?1 AND w.state IN ('pending', 'in_progress') AND """ + _CREATED.format(
    item_type="f.item_type", item_id="f.item_id", resource="f.resource_id",
    version="f.resource_version")


def written_here(store: LocalStore, item: dict[str, Any]) -> bool:
    """Whether ``item`` (a message or revision feed item) is one this file's writes created."""
    revision = item.get("memory_revision") or {}
    return bool(store.value(_WRITTEN_HERE, (item["type"], item["item_id"],
                                            revision.get("collection_id"),
                                            revision.get("revision"))))


def settle(store: LocalStore, outbound_id: int) -> list[str]:
    """Mark done the stored items the committed write ``outbound_id`` created (a page stored
    before the write's answer was); the items marked. Call inside the transaction that records
    the answer, and queue their ``processed`` ACK in it."""
    items = [str(row["item_id"]) for row in store.rows(_ITEMS_OF_WRITE, (outbound_id,))]
    for item_id in items:
        store.execute("UPDATE local_work SET state = 'done', error = NULL, updated_at = ?"
                      " WHERE item_id = ?", (now_ms(), item_id))
    return items
