"""A user's own writes are not work for them: the feed item that a send or publish of this
local file created is stored as done and acknowledged ``processed`` at once, never listed as
pending (docs/consumer.md, "Own writes"). The protocol gives a consumer no way to learn its
actor id, so "own" means written through this file: its outbox holds each write's answer."""

from __future__ import annotations

from typing import Any

from waypost.reference.consumer.store import LocalStore, now_ms

#: The committed write of this file that created a feed item: a send answers its
#: ``feed_item_id`` (WP-HTTP-10), a changing publish its revision (WP-HTTP-16).
_WRITTEN_HERE = """SELECT 1 FROM local_outbound WHERE state = 'committed' AND (
    (operation = 'message.send' AND json_extract(result_json, '$.feed_item_id') = ?1)
    OR (operation = 'memory.publish' AND collection_id = ?2
        AND json_extract(result_json, '$.revision') = ?3
        AND json_extract(result_json, '$.changed') = 1))"""

#: The stored items, still to be worked on, that the committed write ``?1`` created.
_ITEMS_OF_WRITE = """SELECT w.item_id FROM local_work w, local_outbound o
    WHERE o.outbound_id = ?1 AND o.state = 'committed' AND w.state IN ('pending', 'in_progress')
      AND (w.item_id = json_extract(o.result_json, '$.feed_item_id')
           OR w.item_id = (SELECT v.item_id FROM local_memory_versions v
                           WHERE o.operation = 'memory.publish'
                             AND v.collection_id = o.collection_id
                             AND v.revision = json_extract(o.result_json, '$.revision')))"""


def written_here(store: LocalStore, item: dict[str, Any]) -> bool:
    """Whether ``item`` (a message or revision feed item) is one this file's writes created."""
    revision = item.get("memory_revision") or {}
    return bool(store.value(_WRITTEN_HERE, (item["item_id"], revision.get("collection_id"),
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
