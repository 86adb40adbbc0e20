"""What the consumer shows: work items, one item in full, and the state of the local file."""

from __future__ import annotations

import json
from typing import Any

from waypost.reference.consumer.client import ConsumerError
from waypost.reference.consumer.store import LocalStore, Row

_ITEMS = """
    SELECT f.item_id, f.sequence, f.item_type AS type, f.producer_id AS sender, f.thread_id,
           coalesce(m.subject, f.resource_id || ' r' || f.resource_version) AS subject,
           m.message_id, m.kind, w.state, w.error
      FROM local_work w JOIN local_feed_items f ON f.item_id = w.item_id
      LEFT JOIN local_messages m ON m.item_id = f.item_id
"""


def work_items(store: LocalStore, state: str | None = None) -> list[Row]:
    """Work items in feed order, optionally of one state."""
    if state is None:
        return store.rows(_ITEMS + " ORDER BY f.sequence")
    return store.rows(_ITEMS + " WHERE w.state = ? ORDER BY f.sequence", (state,))


def receipts(store: LocalStore) -> list[Row]:
    """The receipts this consumer has received (others' progress on its actor's items), in
    feed order: which item, who, which stage and version."""
    return store.rows("""
        SELECT f.sequence, r.subject_item_id AS subject, r.actor_id AS actor, r.stage,
               r.receipt_version AS version, r.updated_at
          FROM local_receipt_updates r JOIN local_feed_items f ON f.item_id = r.item_id
         ORDER BY f.sequence""")


def item(store: LocalStore, item_id: str) -> dict[str, Any]:
    """One received item with its message (body, recipients, options, attachments) or its
    pinned memory revision (entries), and its work record."""
    found = store.row("SELECT * FROM local_feed_items WHERE item_id = ?", (item_id,))
    if found is None:
        raise ConsumerError(f"no item {item_id} in the local database")
    shown: dict[str, Any] = {"item": found, "work": store.row(
        "SELECT state, error, updated_at FROM local_work WHERE item_id = ?", (item_id,))}
    message = store.row("SELECT * FROM local_messages WHERE item_id = ?", (item_id,))
    if message is not None:
        mid = (message["message_id"],)
        message["recipient_ids"] = [r["actor_id"] for r in store.rows(
            "SELECT actor_id FROM local_message_recipients WHERE message_id = ?"
            " ORDER BY actor_id", mid)]
        message["options"] = [r["option_text"] for r in store.rows(
            "SELECT option_text FROM local_message_options WHERE message_id = ?"
            " ORDER BY position", mid)]
        message["attachment_ids"] = [r["blob_id"] for r in store.rows(
            "SELECT blob_id FROM local_message_attachments WHERE message_id = ?"
            " ORDER BY position", mid)]
        message["metadata"] = json.loads(message.pop("metadata_json") or "null")
        shown["message"] = message
    revision = store.row("SELECT * FROM local_memory_versions WHERE item_id = ?", (item_id,))
    if revision is not None:
        revision["entries"] = store.rows(
            "SELECT entry_id, state, path, blob_id, deleted_in_revision FROM local_memory_entries"
            " WHERE collection_id = ? AND revision = ? ORDER BY entry_id",
            (revision["collection_id"], revision["revision"]))
        shown["memory_revision"] = revision
    receipt = store.row("SELECT * FROM local_receipt_updates WHERE item_id = ?", (item_id,))
    if receipt is not None:
        shown["receipt"] = receipt
    return shown


def outbound(store: LocalStore, limit: int = 20) -> list[Row]:
    """The latest queued writes with their request ids and answers."""
    return store.rows(
        "SELECT outbound_id, request_id, operation, state, attempts, result_status, error_code,"
        " error_message, result_json FROM local_outbound ORDER BY outbound_id DESC LIMIT ?",
        (limit,))


def status(store: LocalStore) -> dict[str, Any]:
    """Counts of items, work by state and outbound writes by state, and the checkpoint."""
    profile = store.require_profile()
    checkpoint = store.checkpoint(profile)
    work = {r["state"]: r["n"] for r in store.rows(
        "SELECT state, count(*) AS n FROM local_work GROUP BY state")}
    writes = {r["state"]: r["n"] for r in store.rows(
        "SELECT state, count(*) AS n FROM local_outbound GROUP BY state")}
    return {
        "server": profile.server_url, "label": profile.label, "view_epoch": profile.view_epoch,
        "items": store.value("SELECT count(*) FROM local_feed_items"),
        "messages": store.value("SELECT count(*) FROM local_messages"),
        "memory_revisions": store.value("SELECT count(*) FROM local_memory_versions"),
        "receipt_updates": store.value("SELECT count(*) FROM local_receipt_updates"),
        "work": {state: work.get(state, 0) for state in ("pending", "in_progress", "done", "error")},
        "outbound": {state: writes.get(state, 0) for state in ("pending", "committed", "failed")},
        "checkpoint_sequence": None if checkpoint is None else str(checkpoint["last_sequence"]),
    }
