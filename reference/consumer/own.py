"""A user's own writes are not work for them: the feed item that a send or publish of this
local file created is stored as done and acknowledged ``processed`` at once, never listed as
pending (docs/consumer.md, "Own writes"). The protocol gives a consumer no way to learn its
actor id, so "own" means written through this file: its outbox holds each write's answer."""

from __future__ import annotations

from waypost.reference.consumer.store import LocalStore, now_ms

#: The stored feed items ``f`` that a committed write ``o`` of this file created: a send
#: answers its ``feed_item_id`` (WP-HTTP-10), a changing publish its collection's new revision
#: (WP-HTTP-16; an unchanged one answers the head, which somebody else may have written).
_CREATED = """SELECT f.item_id FROM local_outbound o, local_feed_items f
    JOIN local_work w ON w.item_id = f.item_id
    WHERE o.state = 'committed' AND (
        (o.operation = 'message.send' AND f.item_type = 'message'
         AND json_extract(o.result_json, '$.feed_item_id') = f.item_id)
        OR (o.operation = 'memory.publish' AND f.item_type = 'memory_revision'
            AND json_extract(o.result_json, '$.changed') = 1
            AND o.collection_id = f.resource_id
            AND json_extract(o.result_json, '$.revision') = f.resource_version))"""


def settle(store: LocalStore, outbound_id: int) -> list[str]:
    """Mark done the stored items the committed write ``outbound_id`` created (a page stored
    before the write's answer was); the items marked. Call inside the transaction that records
    the answer, and queue their ``processed`` ACK in it."""
    return _mark_done(store, [str(row["item_id"]) for row in store.rows(
        _CREATED + " AND o.outbound_id = ?1 AND w.state IN ('pending', 'in_progress')",
        (outbound_id,))])


def settle_item(store: LocalStore, item_id: str) -> bool:
    """Mark done the stored item ``item_id`` if one of this file's committed writes created
    it; whether it is an own item that is done now (call inside the transaction that stores
    its page, and acknowledge it ``processed`` there)."""
    if not store.value(_CREATED + " AND f.item_id = ?1", (item_id,)):
        return False
    _mark_done(store, [item_id])
    return bool(store.value("SELECT state = 'done' FROM local_work WHERE item_id = ?",
                            (item_id,)))


def _mark_done(store: LocalStore, items: list[str]) -> list[str]:
    """Items still to be worked on move to done (one failed stays failed); ``items``."""
    for item_id in items:
        store.execute("UPDATE local_work SET state = 'done', error = NULL, updated_at = ?"
                      " WHERE item_id = ? AND state IN ('pending', 'in_progress')",
                      (now_ms(), item_id))
    return items
