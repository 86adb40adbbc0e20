"""P17 from the outside: what a reference consumer's local file and the server's view must
agree on, at any moment and after a crash and a restart.

The local file is read as data (read-only, by table and column names: docs/consumer.md); the
server's view comes from a space-log consumer that never acknowledges anything, so it shows
every message and every receipt advance of the space. Nothing here imports the consumer."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.properties.verdicts.violations import Ledger

PID = "P17"
#: The reference consumer's duties (docs/consumer.md, "Requirements"), all of P17.
STORED_FIRST, MARKED_FIRST, NOTHING_LOST, DONE_ONCE, OUTBOUND_ONCE = (
    "WP-CONS-1", "WP-CONS-2", "WP-CONS-3", "WP-CONS-4", "WP-CONS-5")


@dataclass
class LocalView:
    """The consumer's local file at one moment."""

    items: dict[str, str] = field(default_factory=dict)  # item_id → type
    work: dict[str, str] = field(default_factory=dict)  # item_id → state
    bodies: dict[str, tuple[str, str]] = field(default_factory=dict)  # message_id → subject, text
    outbound: list[dict[str, Any]] = field(default_factory=list)
    checkpoint: int | None = None

    @classmethod
    def read(cls, path: Path) -> LocalView:
        """Read the file without changing it (``mode=ro``); a missing file is empty."""
        view = cls()
        if not path.exists():
            return view
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        try:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            if "local_feed_items" not in tables:
                return view
            view.items = dict(db.execute("SELECT item_id, item_type FROM local_feed_items"))
            view.work = dict(db.execute("SELECT item_id, state FROM local_work"))
            view.bodies = {r[0]: (r[1], r[2]) for r in db.execute(
                "SELECT message_id, subject, body_text FROM local_messages")}
            view.outbound = [dict(r) for r in db.execute(
                "SELECT outbound_id, request_id, operation, state, result_json, subject"
                " FROM local_outbound ORDER BY outbound_id")]
            view.checkpoint = db.execute("SELECT max(last_sequence) FROM local_checkpoints"
                                         ).fetchone()[0]
        finally:
            db.close()
        return view


@dataclass
class ServerView:
    """Every message and receipt advance of a space, from a space-log reader."""

    messages: list[dict[str, Any]] = field(default_factory=list)  # feed item + body
    receipts: list[dict[str, Any]] = field(default_factory=list)  # the receipt objects

    def stage(self, consumer_id: str, item_id: str) -> str | None:
        """The highest stage the server holds for (consumer, item)."""
        stages = {r["stage"] for r in self.receipts
                  if r["consumer_id"] == consumer_id and r["subject_item_id"] == item_id}
        return "processed" if "processed" in stages else ("received" if stages else None)

    def to(self, actor: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if actor in m["recipient_ids"]]


def receipts_not_ahead(ledger: Ledger, local: LocalView, server: ServerView,
                       consumer_id: str, when: str) -> None:
    """The server's receipts of this consumer never run ahead of the local state: received
    only for an item stored locally with its work record, processed only for work done."""
    for receipt in server.receipts:
        if receipt["consumer_id"] != consumer_id:
            continue
        item, stage = receipt["subject_item_id"], receipt["stage"]
        ledger.check(STORED_FIRST, item in local.work,
                     f"{when}: the server holds '{stage}' for {item}, which the consumer has "
                     "not stored (acknowledged before the local commit)", item_id=item)
        if stage == "processed":
            ledger.check(MARKED_FIRST, local.work.get(item) == "done",
                         f"{when}: the server holds 'processed' for {item}, whose local work is "
                         f"{local.work.get(item)!r} (acknowledged before the local mark)",
                         item_id=item)


def nothing_lost(ledger: Ledger, local: LocalView, server: ServerView, actor: str,
                 consumer_id: str) -> None:
    """After recovery: every message sent to the actor is stored once with its body and a work
    record, and the server holds at least 'received' for it (the ACK was re-sent)."""
    for message in server.to(actor):
        item = message["item_id"]
        ledger.check(NOTHING_LOST, item in local.items and item in local.work,
                     f"message {item} to {actor} was lost: not in the local file after the "
                     "restart", item_id=item, local_checkpoint=local.checkpoint)
        body = local.bodies.get(message["message_id"])
        ledger.check(NOTHING_LOST, body is None or body == (message["subject"], message["body"]["text"]),
                     f"message {message['message_id']} is stored with another body",
                     local=body, server=[message["subject"], message["body"]["text"]])
        ledger.check(NOTHING_LOST, item not in local.items or server.stage(consumer_id, item) is not None,
                     f"{item} is stored locally but never acknowledged 'received' after the "
                     "restart", item_id=item)


def work_kept(ledger: Ledger, local: LocalView, server: ServerView, done: list[str],
              consumer_id: str) -> None:
    """Work marked done stays done (never handed out again) and is acknowledged processed."""
    for item in done:
        ledger.check(DONE_ONCE, local.work.get(item) == "done",
                     f"{item} was marked done, yet its local work is {local.work.get(item)!r} "
                     "after the restart (completed work would be repeated)", item_id=item)
        ledger.check(NOTHING_LOST, server.stage(consumer_id, item) == "processed",
                     f"{item} is done locally but the server never got 'processed'",
                     item_id=item)


def outbound_once(ledger: Ledger, before: LocalView, after: LocalView,
                  lookups: dict[str, dict[str, Any]], published: dict[str, int]) -> None:
    """Every outbound write exists once, with the request_id it was written with: the row seen
    before the crash keeps its id and ends committed; the server's lookup of that id is
    committed with the result the consumer recorded; a send is published exactly once."""
    rows = {row["request_id"]: row for row in after.outbound}
    for row in before.outbound:
        rid = row["request_id"]
        kept = rows.get(rid)
        ledger.check(OUTBOUND_ONCE, kept is not None,
                     f"outbound {row['operation']} {rid} vanished or changed its request_id",
                     request_id=rid)
        if kept is None:
            continue
        ledger.check(OUTBOUND_ONCE, kept["state"] == "committed",
                     f"outbound {row['operation']} {rid} is {kept['state']!r} after the restart",
                     request_id=rid)
        lookup = lookups.get(rid) or {}
        result = (lookup.get("result") or {}).get("body")
        local_result = json.loads(kept["result_json"]) if kept["result_json"] else None
        ledger.check(OUTBOUND_ONCE, lookup.get("state") == "committed" and result == local_result,
                     f"the server's record of {rid} differs from the consumer's: the write was "
                     "not submitted with its original request_id", request_id=rid,
                     server=lookup, local=local_result)
    for subject, count in published.items():
        ledger.check(OUTBOUND_ONCE, count == 1, f"the send {subject!r} was published {count} times",
                     subject=subject, count=count)
