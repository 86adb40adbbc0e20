"""Storing a feed page locally: its items, the message bodies and memory revisions read for
them, a work record per message or revision, the local checkpoint and the queued ``received``
ACK, all in one transaction (so a crash keeps all of it or none of it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from waypost.reference.consumer import outbox, own
from waypost.reference.consumer.store import LocalStore, Profile, now_ms

#: Feed item types a consumer works on and acknowledges (receipt items cannot be acknowledged).
WORK_TYPES = ("message", "memory_revision")


@dataclass
class Page:
    """One feed page and what was read for its items (bodies, fixed revisions)."""

    items: list[dict[str, Any]]  # of the types this consumer knows
    next_cursor: str
    has_more: bool
    last_sequence: int = 0  # of every item of the page, unknown types included (0: empty)
    skipped: int = 0  # items of a type this consumer does not know
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    revisions: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def work_items(self) -> list[str]:
        return [item["item_id"] for item in self.items if item["type"] in WORK_TYPES]


def _resource(item: dict[str, Any]) -> tuple[str, int | None]:
    """The resource an item is about, with its version where it has one."""
    if item["type"] == "message":
        return str(item["message"]["message_id"]), None
    if item["type"] == "memory_revision":
        return str(item["memory_revision"]["collection_id"]), int(item["memory_revision"]["revision"])
    return str(item["receipt"]["receipt_id"]), int(item["receipt"]["receipt_version"])


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


def insert_item(store: LocalStore, item: dict[str, Any], epoch: int) -> None:
    resource, version = _resource(item)
    store.execute(
        "INSERT INTO local_feed_items (item_id, sequence, item_type, producer_id, thread_id,"
        " resource_id, resource_version, committed_at, view_epoch, stored_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (item_id) DO NOTHING",
        (item["item_id"], int(item["sequence"]), item["type"], item["producer_id"],
         item.get("thread_id"), resource, version, item["committed_at"], epoch, now_ms()))


def insert_message(store: LocalStore, item_id: str, message: dict[str, Any]) -> None:
    """The message's fixed facts and body text, its recipients, options and attachments."""
    if store.value("SELECT 1 FROM local_messages WHERE message_id = ?", (message["message_id"],)):
        return
    body = message["body"]
    store.execute(
        "INSERT INTO local_messages (message_id, item_id, thread_id, in_reply_to, producer_id,"
        " kind, subject, body_text, body_source_uri, metadata_json, committed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (message["message_id"], item_id, message["thread_id"], message.get("in_reply_to"),
         message["producer_id"], message["kind"], message["subject"], body["text"],
         body.get("source_uri"), _json(message.get("metadata")), message["committed_at"]))
    for actor in message["recipient_ids"]:
        store.execute("INSERT INTO local_message_recipients (message_id, actor_id) VALUES (?, ?)",
                      (message["message_id"], actor))
    for position, text in enumerate(body.get("options") or []):
        store.execute("INSERT INTO local_message_options (message_id, position, option_text)"
                      " VALUES (?, ?, ?)", (message["message_id"], position, text))
    for position, blob in enumerate(message.get("attachment_ids") or []):
        store.execute("INSERT INTO local_message_attachments (message_id, position, blob_id)"
                      " VALUES (?, ?, ?)", (message["message_id"], position, blob))


def insert_receipt(store: LocalStore, item_id: str, receipt: dict[str, Any]) -> None:
    store.execute(
        "INSERT INTO local_receipt_updates (item_id, receipt_id, receipt_version,"
        " subject_item_id, subject_resource_id, consumer_id, actor_id, stage, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (item_id, receipt["receipt_id"], receipt["receipt_version"], receipt["subject_item_id"],
         receipt["subject_resource_id"], receipt["consumer_id"], receipt["actor_id"],
         receipt["stage"], receipt["updated_at"]))


def insert_revision(store: LocalStore, item_id: str, revision: dict[str, Any],
                    entries: list[dict[str, Any]]) -> None:
    """A fixed memory revision, pinned with every entry (tombstones too)."""
    key = (revision["collection_id"], int(revision["revision"]))
    if store.value("SELECT 1 FROM local_memory_versions WHERE collection_id = ? AND revision = ?",
                   key):
        return
    store.execute(
        "INSERT INTO local_memory_versions (collection_id, revision, item_id, parent_revision,"
        " manifest_blob_id, entries) VALUES (?, ?, ?, ?, ?, ?)",
        (*key, item_id, revision["parent_revision"], revision.get("manifest_blob_id"),
         len(entries)))
    for entry in entries:
        store.execute(
            "INSERT INTO local_memory_entries (collection_id, revision, entry_id, state, path,"
            " blob_id, metadata_json, deleted_in_revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, entry["item_id"], entry["state"], entry.get("path"), entry.get("blob_id"),
             _json(entry.get("metadata")), entry.get("deleted_in_revision")))


def insert_items(store: LocalStore, page: Page, epoch: int) -> set[str]:
    """Every item of the page with what was read for it and, for messages and revisions, a
    work record (an item seen before keeps its record): pending, or done for an item this
    file's own write created; those items."""
    mine = set()
    for item in page.items:
        insert_item(store, item, epoch)
        if item["type"] == "message":
            insert_message(store, item["item_id"], page.messages[item["message"]["message_id"]])
        elif item["type"] == "receipt":
            insert_receipt(store, item["item_id"], item["receipt"])
        else:
            revision = item["memory_revision"]
            insert_revision(store, item["item_id"], revision,
                            page.revisions[(revision["collection_id"], int(revision["revision"]))])
        if item["type"] in WORK_TYPES:
            store.execute("INSERT INTO local_work (item_id, state, updated_at) VALUES (?, ?, ?)"
                          " ON CONFLICT (item_id) DO NOTHING", (item["item_id"], "pending", now_ms()))
            if own.settle_item(store, item["item_id"]):
                mine.add(item["item_id"])
    return mine


def save_checkpoint(store: LocalStore, profile: Profile, page: Page) -> None:
    """The local checkpoint of the current view epoch moves to the page's end."""
    last = page.last_sequence
    store.execute(
        "INSERT INTO local_checkpoints (consumer_key, view_epoch, cursor, last_sequence, pages,"
        " saved_at) VALUES (?1, ?2, ?3, ?4, 1, ?5) ON CONFLICT (consumer_key, view_epoch) DO"
        " UPDATE SET cursor = ?3, last_sequence = max(last_sequence, ?4), pages = pages + 1,"
        " saved_at = ?5", (profile.label, profile.view_epoch, page.next_cursor, last, now_ms()))


def store_page(store: LocalStore, profile: Profile, page: Page) -> int | None:
    """Items, work records, checkpoint and the queued ``received`` ACK (with the checkpoint) in
    one transaction; the outbound id of that ACK, or None for an empty page."""
    if not page.last_sequence:
        return None
    with store.transaction():
        mine = insert_items(store, page, profile.view_epoch)
        save_checkpoint(store, profile, page)
        return outbox.enqueue_ack(
            store, [(item, "processed" if item in mine else "received")
                    for item in page.work_items], page.next_cursor)
