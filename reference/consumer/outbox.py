"""The outbox (``local_outbound``): every write the consumer owes the server — sends, replies,
ACKs, memory publishes — is written here with its request_id and normalised arguments before it
is submitted, and submitted again with the very same request_id until the server gives a final
answer. A write therefore happens once, however often the consumer crashes on the way.

Threads of one process may flush at the same time, each with its own connection: a write is
submitted by one thread at a time, and a flush passes over the writes another thread is
submitting rather than wait for them (a submission that hangs on the network holds up only its
own caller)."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from waypost.reference.consumer import answers, faults, own
from waypost.reference.consumer.client import Api, ServerError
from waypost.reference.consumer.store import LocalStore, Row, now_ms

#: Operation → (method, path template).
ROUTES = {"message.send": ("POST", "/v1/messages"), "receipt.ack": ("POST", "/v1/acks"),
          "memory.publish": ("POST", "/v1/collections/{collection_id}/revisions")}


def new_request_id(prefix: str) -> str:
    """A request id fixed when the write is queued: ``wpc-<prefix>-<128 random bits>``."""
    return f"wpc-{prefix}-{secrets.token_hex(16)}"


def _insert(store: LocalStore, operation: str, prefix: str, request_id: str | None = None,
            **columns: Any) -> int:
    names = ["request_id", "operation", "created_at", *columns]
    store.execute(f"INSERT INTO local_outbound ({', '.join(names)})"
                  f" VALUES ({', '.join('?' for _ in names)})",
                  (request_id or new_request_id(prefix), operation, now_ms(), *columns.values()))
    outbound_id: int = store.value("SELECT last_insert_rowid()")
    return outbound_id


def enqueue_ack(store: LocalStore, items: Sequence[tuple[str, str]],
                cursor: str | None) -> int:
    """Queue an ACK of ``(item_id, stage)`` pairs with an optional checkpoint (call inside a
    transaction: the ACK belongs to the local change that makes it true)."""
    outbound_id = _insert(store, "receipt.ack", "ack", checkpoint_cursor=cursor)
    for position, (item_id, stage) in enumerate(items):
        store.execute("INSERT INTO local_outbound_ack_items (outbound_id, position, item_id,"
                      " stage) VALUES (?, ?, ?, ?)", (outbound_id, position, item_id, stage))
    return outbound_id


@dataclass(frozen=True)
class Send:
    """A send or a reply, as the user gave it."""

    recipients: tuple[str, ...]
    subject: str
    text: str
    kind: str = "info"
    thread_id: str | None = None
    in_reply_to: str | None = None
    reply_to_item_id: str | None = None
    attachments: tuple[str, ...] = ()


def enqueue_send(store: LocalStore, send: Send, request_id: str | None = None) -> int:
    """Queue a send; ``request_id`` fixes the id (default: fresh random bits)."""
    with store.transaction():
        outbound_id = _insert(
            store, "message.send", "send", request_id, new_thread=int(send.thread_id is None),
            thread_id=send.thread_id, in_reply_to=send.in_reply_to, kind=send.kind,
            subject=send.subject, body_text=send.text, reply_to_item_id=send.reply_to_item_id)
        for position, actor in enumerate(dict.fromkeys(send.recipients)):
            store.execute("INSERT INTO local_outbound_recipients (outbound_id, position, actor_id)"
                          " VALUES (?, ?, ?)", (outbound_id, position, actor))
        for position, blob_id in enumerate(send.attachments):
            store.execute("INSERT INTO local_outbound_attachments (outbound_id, position, blob_id)"
                          " VALUES (?, ?, ?)", (outbound_id, position, blob_id))
    return outbound_id


@dataclass(frozen=True)
class Publish:
    """A memory publish: entries ``(item_id, path, blob_id)`` and deletes, at a fixed
    expected revision."""

    collection_id: str
    expected_revision: int
    mode: str
    entries: tuple[tuple[str, str, str], ...]
    deletes: tuple[str, ...] = ()


def enqueue_publish(store: LocalStore, publish: Publish, request_id: str | None = None) -> int:
    """Queue a publish; ``request_id`` fixes the id (default: fresh random bits)."""
    with store.transaction():
        outbound_id = _insert(store, "memory.publish", "publish", request_id,
                              collection_id=publish.collection_id,
                              expected_revision=publish.expected_revision,
                              publish_mode=publish.mode)
        for entry_id, path, blob_id in publish.entries:
            store.execute("INSERT INTO local_outbound_entries (outbound_id, entry_id, path,"
                          " blob_id) VALUES (?, ?, ?, ?)", (outbound_id, entry_id, path, blob_id))
        for entry_id in publish.deletes:
            store.execute("INSERT INTO local_outbound_deletes (outbound_id, entry_id)"
                          " VALUES (?, ?)", (outbound_id, entry_id))
    return outbound_id


def _column(store: LocalStore, sql: str, outbound_id: int) -> list[Any]:
    return [next(iter(row.values())) for row in store.rows(sql, (outbound_id,))]


def request_body(store: LocalStore, row: Row) -> dict[str, Any]:
    """The request of a queued write, rebuilt from its fixed columns and child rows: the same
    bytes of meaning every time, so a resubmission has the same fingerprint."""
    outbound_id, operation = row["outbound_id"], row["operation"]
    body: dict[str, Any] = {"request_id": row["request_id"]}
    if operation == "receipt.ack":
        body["items"] = [{"item_id": r["item_id"], "stage": r["stage"]} for r in store.rows(
            "SELECT item_id, stage FROM local_outbound_ack_items WHERE outbound_id = ?"
            " ORDER BY position", (outbound_id,))]
        if row["checkpoint_cursor"] is not None:
            body["checkpoint"] = {"cursor": row["checkpoint_cursor"]}
    elif operation == "message.send":
        recipients = _column(store, "SELECT actor_id FROM local_outbound_recipients"
                                    " WHERE outbound_id = ? ORDER BY position", outbound_id)
        if recipients:
            body["recipient_ids"] = recipients
        body["thread"] = {"new": True} if row["new_thread"] else {"thread_id": row["thread_id"]}
        if row["in_reply_to"] is not None:
            body["in_reply_to"] = row["in_reply_to"]
        body.update(kind=row["kind"], subject=row["subject"], body={"text": row["body_text"]})
        attachments = attachment_ids(store, outbound_id)
        if attachments:
            body["attachment_ids"] = attachments
    else:
        body.update(expected_revision=row["expected_revision"], mode=row["publish_mode"])
        body["items"] = [{"item_id": r["entry_id"], "path": r["path"], "blob_id": r["blob_id"]}
                         for r in store.rows("SELECT entry_id, path, blob_id FROM"
                                             " local_outbound_entries WHERE outbound_id = ?"
                                             " ORDER BY entry_id", (outbound_id,))]
        deletes = _column(store, "SELECT entry_id FROM local_outbound_deletes"
                                 " WHERE outbound_id = ? ORDER BY entry_id", outbound_id)
        if deletes:
            body["delete_ids"] = deletes
    return body


def attachment_ids(store: LocalStore, outbound_id: int) -> list[str]:
    """The blob ids a queued send attaches, in their order."""
    return _column(store, "SELECT blob_id FROM local_outbound_attachments"
                          " WHERE outbound_id = ? ORDER BY position", outbound_id)


def pending(store: LocalStore) -> list[Row]:
    """Queued writes without a final answer, oldest first."""
    return store.rows("SELECT * FROM local_outbound WHERE state = 'pending' ORDER BY outbound_id")


def record(store: LocalStore, outbound_id: int, state: str, status: int,
           answer: dict[str, Any], error: ServerError | None = None) -> None:
    """The final answer of a write: committed (2xx) or failed (a final refusal)."""
    with store.transaction():
        store.execute(
            "UPDATE local_outbound SET state = ?, result_status = ?, result_json = ?,"
            " error_code = ?, error_message = ?, submitted_at = ? WHERE outbound_id = ?"
            " AND state = 'pending'",
            (state, status, json.dumps(answer, sort_keys=True), error.code if error else None,
             error.message if error else None, now_ms(), outbound_id))
        if state == "committed" and (mine := own.settle(store, outbound_id)):
            enqueue_ack(store, [(item_id, "processed") for item_id in mine], None)


def submit(store: LocalStore, api: Api, row: Row) -> None:
    """Submit one queued write and record its final answer. A temporary failure (no answer,
    503, a token problem, a submission in flight) or an answer that breaks the contract
    (:class:`~waypost.reference.consumer.errors.BadAnswer`) raises and leaves it queued."""
    point = "ack" if row["operation"] == "receipt.ack" else "outbound"
    body = request_body(store, row)
    method, path = ROUTES[row["operation"]]
    path = path.format(collection_id=quote(row["collection_id"] or "", safe=""))
    faults.hit(f"{point}.before_submit")
    with store.transaction():
        store.execute("UPDATE local_outbound SET attempts = attempts + 1 WHERE outbound_id = ?",
                      (row["outbound_id"],))
    try:
        status, answer = api.call(method, path, body=body)
    except ServerError as error:
        if error.retryable:
            raise
        faults.hit(f"{point}.after_submit")
        record(store, row["outbound_id"], "failed", error.status,
               {"error": {"code": error.code, "message": error.message,
                          "details": error.details}}, error)
        return
    faults.hit(f"{point}.after_submit")
    # An answer that breaks the contract is recorded as nothing: the write stays queued.
    if row["operation"] == "receipt.ack":
        answers.acked(answer, body["items"])
    else:
        answers.WRITE_ANSWERS[row["operation"]](answer)
    record(store, row["outbound_id"], "committed", status, answer)


#: The writes threads of this process are submitting: (database file, outbound id).
_submitting: set[tuple[str, int]] = set()
_submitted = threading.Condition()


def _claim(write: tuple[str, int], wait: bool) -> bool:
    """Take the write for this thread; ``wait``: until the thread submitting it is done."""
    with _submitted:
        while write in _submitting:
            if not wait:
                return False
            _submitted.wait()
        _submitting.add(write)
        return True


def _release(write: tuple[str, int]) -> None:
    with _submitted:
        _submitting.discard(write)
        _submitted.notify_all()


def submit_queued(store: LocalStore, api: Api, outbound_id: int, *, wait: bool = True) -> bool:
    """Submit one queued write unless it has its final answer already. Another thread of the
    process submitting it: ``wait`` for that thread, else pass (False)."""
    write = (str(store.path), outbound_id)
    if not _claim(write, wait):
        return False
    try:
        row = store.row("SELECT * FROM local_outbound WHERE outbound_id = ? AND state = 'pending'",
                        (outbound_id,))
        if row is not None:
            submit(store, api, row)
    finally:
        _release(write)
    return True


def flush(store: LocalStore, api: Api) -> int:
    """Submit every queued write, oldest first, but those another thread is submitting; how
    many were queued. Stops at the first temporary failure (raised), so writes keep their
    order."""
    rows = pending(store)
    for row in rows:
        submit_queued(store, api, row["outbound_id"], wait=False)
    return len(rows)
