"""What each tool does, on the consumer's local file and the server: one protocol operation a
tool, answers kept small.

Calls run at the same time, each on its own worker thread with its own connection to the local
file (SQLite WAL: readers never wait, writers wait their turn in short transactions) and its own
HTTP client, so a call hung on the network holds up no other. Two rules keep that safe: feed
syncs take turns (one local feed position), and a queued write is submitted by one call at a
time (``outbox.submit_queued``); a write submitted twice anyway is answered once by the server
(its request_id), and the outbox records only the first final answer."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import apsw

from waypost.reference.agent_mcp import argument_limits, blobs
from waypost.reference.agent_mcp import arguments as a
from waypost.reference.agent_mcp.errors import ToolFailure, refused
from waypost.reference.consumer import answers, faults, outbox, sync, views, work
from waypost.reference.consumer.client import Api, ConsumerError, ServerError, segment
from waypost.reference.consumer.store import LocalStore, Row

_PAGE = """
    SELECT f.item_id, f.sequence AS seq, f.item_type, f.producer_id AS sender,
           coalesce(m.subject, f.resource_id || ' r' || f.resource_version) AS subject,
           m.kind, w.state
      FROM local_work w JOIN local_feed_items f ON f.item_id = w.item_id
      LEFT JOIN local_messages m ON m.item_id = f.item_id
     WHERE f.sequence > ? AND (? = 'all' OR w.state = ?)
     ORDER BY f.sequence LIMIT ?
"""

_OWN_ACKS = """
    SELECT DISTINCT o.outbound_id FROM local_outbound o
      JOIN local_outbound_ack_items i ON i.outbound_id = o.outbound_id
     WHERE o.outbound_id > ? AND i.stage = 'processed' AND i.item_id IN (SELECT value FROM json_each(?))
     ORDER BY o.outbound_id
"""


def keyed_request_id(tool: str, key: str | None, arguments: dict[str, Any]) -> str:
    """The request_id a write gets from its call: the same key (by default the arguments
    themselves) gives the same id, so a repeated call finds its first write."""
    seed = key if key is not None else json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(f"{tool}\0{key is not None}\0{seed}".encode()).hexdigest()[:32]
    prefix = "publish" if tool == "memory_publish" else "send"
    return f"wpc-{prefix}-{digest}"


def _call_arguments(args: a.Send | a.Reply) -> dict[str, Any]:
    """The arguments a send's request_id is derived from. Without attachments they are those
    of the tools before ``attachment_ids`` existed, so a write queued then is still found."""
    arguments = args.model_dump(exclude={"key"})
    if not arguments["attachment_ids"]:
        del arguments["attachment_ids"]
    return arguments


@dataclass
class Link:
    """One call's own connection to the local file and its own HTTP client."""

    store: LocalStore
    api: Api

    def close(self) -> None:
        self.api.close()
        self.store.close()


class Agent:
    """One agent: one local file, one server, one token, one folder of files; links to the
    first two are opened as concurrent calls need them and kept for the next calls."""

    def __init__(self, connect: Callable[[], Link], files: blobs.Files,
                 idle: list[Link] | None = None) -> None:
        self.connect, self.files = connect, files
        self.syncing = threading.Lock()
        self._idle, self._guard = list(idle or []), threading.Lock()

    @contextmanager
    def link(self) -> Iterator[Link]:
        """A link of its own for the length of a call."""
        with self._guard:
            taken = self._idle.pop() if self._idle else None
        taken = taken or self.connect()
        try:
            yield taken
        finally:
            with self._guard:
                self._idle.append(taken)

    def call(self, tool: str, args: a.Strict) -> dict[str, Any]:
        """Run one tool with validated arguments on a link of its own."""
        with self.link() as link:
            method: Callable[[Any], dict[str, Any]] = getattr(Call(self, link), tool)
            return method(args)

    def close(self) -> None:
        """Close the links no call holds."""
        with self._guard:
            idle, self._idle = self._idle, []
        for link in idle:
            link.close()


class Call:
    """The tools, for one call on one link."""

    def __init__(self, agent: Agent, link: Link) -> None:
        self.agent, self.store, self.api = agent, link.store, link.api

    def inbox(self, args: a.Inbox) -> dict[str, Any]:
        """Sync (one sync at a time), then one page of work items in feed order."""
        with self.agent.syncing:
            sync.sync(self.store, self.api)
        rows = self.store.rows(_PAGE, (args.after, args.state, args.state, args.limit + 1))
        items = [{"item_id": r["item_id"], "seq": r["seq"], "from": r["sender"],
                  "subject": r["subject"],
                  "kind": r["kind"] if r["item_type"] == "message" else "memory",
                  **({"state": r["state"]} if args.state == "all" else {})}
                 for r in rows[:args.limit]]
        page: dict[str, Any] = {"items": items}
        if len(rows) > args.limit:
            page["next_after"] = items[-1]["seq"]
        return page

    def read_message(self, args: a.ReadMessage) -> dict[str, Any]:
        """One stored item in full (local only)."""
        shown = self._item(args.item_id)
        state = (shown.get("work") or {}).get("state")
        message = shown.get("message")
        if message is not None:
            answer = {"item_id": args.item_id, "message_id": message["message_id"],
                      "thread_id": message["thread_id"], "from": message["producer_id"],
                      "to": message["recipient_ids"], "kind": message["kind"],
                      "subject": message["subject"], "text": message["body_text"],
                      "in_reply_to": message["in_reply_to"], "options": message["options"],
                      "attachments": message["attachment_ids"], "state": state}
            return {k: v for k, v in answer.items() if v not in (None, [])}
        revision = shown.get("memory_revision")
        if revision is not None:
            return {"item_id": args.item_id, "collection_id": revision["collection_id"],
                    "revision": revision["revision"], "entries": len(revision["entries"]),
                    "state": state}
        return {"item_id": args.item_id, "receipt": shown.get("receipt")}

    def _item(self, item_id: str) -> dict[str, Any]:
        if self.store.value("SELECT 1 FROM local_feed_items WHERE item_id = ?", (item_id,)) is None:
            raise ToolFailure("NOT_FOUND", f"no item {item_id} here (see inbox)",
                              {"field": "item_id"})
        return views.item(self.store, item_id)

    def mark_done(self, args: a.MarkDone) -> dict[str, Any]:
        """Local done (with the ``processed`` ACK queued), then the ACK; its outcome is read
        back from the outbox: a refusal is the server's envelope, no answer yet a reason."""
        item_ids = list(dict.fromkeys(args.item_ids))
        for item_id in item_ids:
            if self.store.value("SELECT 1 FROM local_work WHERE item_id = ?", (item_id,)) is None:
                raise ToolFailure("NOT_FOUND", f"no work item {item_id} here (see inbox)",
                                  {"field": "item_ids"})
        before = self.store.value("SELECT coalesce(max(outbound_id), 0) FROM local_outbound")
        moved = work.mark_done(self.store, item_ids)
        faults.hit("done.after_commit")
        acks = [r["outbound_id"] for r in self.store.rows(_OWN_ACKS, (before, json.dumps(moved)))]
        reason = ""
        try:
            outbox.flush(self.store, self.api)
            for ack in acks:  # one another call is submitting: its answer
                outbox.submit_queued(self.store, self.api, ack)
        except ConsumerError as error:  # the ACK stays queued and goes out with the next call
            reason = str(error)
        return self._acked(moved, acks, reason)

    def _acked(self, moved: list[str], acks: list[int], reason: str) -> dict[str, Any]:
        states = [self._outbound(ack) for ack in acks]
        for row in states:
            if row["state"] == "failed":
                refusal = json.loads(row["result_json"])["error"]
                raise refused(row["result_status"], refusal["code"], f"done here, but the "
                              f"server refused the processed ACK: {refusal['message']}",
                              refusal.get("details") or {})
        if any(row["state"] == "pending" for row in states):
            return {"done": moved, "acked": False,
                    "reason": f"{reason or 'not sent yet'}; the ACK goes out with the next call"}
        return {"done": moved, "acked": True}

    def send(self, args: a.Send) -> dict[str, Any]:
        """A message through the outbox: the same call again never sends twice."""
        recipients = tuple(dict.fromkeys(args.to))
        argument_limits.check_message(args.subject, args.text, recipients, args.attachment_ids)
        send = outbox.Send(recipients, args.subject, args.text, args.kind, args.thread_id,
                           attachments=tuple(args.attachment_ids))
        return self._send("send", args.key, _call_arguments(args), send)

    def reply(self, args: a.Reply) -> dict[str, Any]:
        """A reply to a stored message: to its sender, in its thread."""
        argument_limits.check_message(args.subject, args.text, (), args.attachment_ids)
        message = self._item(args.item_id).get("message")
        if message is None:
            raise ToolFailure("INVALID_REQUEST", f"{args.item_id} is not a message",
                              {"field": "item_id"})
        subject = args.subject or argument_limits.subject_prefix("Re: ", message["subject"])
        send = outbox.Send((message["producer_id"],), subject, args.text, args.kind,
                           message["thread_id"], message["message_id"], args.item_id,
                           tuple(args.attachment_ids))
        return self._send("reply", args.key, _call_arguments(args), send)

    def _send(self, tool: str, key: str | None, arguments: dict[str, Any],
              send: outbox.Send) -> dict[str, Any]:
        request_id = keyed_request_id(tool, key, arguments)
        row = self._queue(request_id, lambda: outbox.enqueue_send(self.store, send, request_id))
        if row is not None and not _same_send(self.store, row, send):
            raise ToolFailure("IDEMPOTENCY_CONFLICT", "this key was used for another message",
                              {"field": "key"})
        result = self._submitted(request_id)  # checked when it was recorded (outbox.submit)
        return {"message_id": result["message_id"], "thread_id": result["thread_id"],
                **({"repeat": True} if row is not None else {})}

    def memory_get(self, args: a.MemoryGet) -> dict[str, Any]:
        """A page of a revision's active entries (the head's by default)."""
        head = int(self.api.collection(args.collection_id)["current_revision"])
        revision = head if args.revision is None else args.revision
        answer: dict[str, Any] = {"collection_id": args.collection_id, "revision": revision,
                                  "head": head, "entries": []}
        if revision == 0:
            return answer
        collection = segment(args.collection_id, "collection_id")
        page = answers.item_page(self.api.get(
            f"/v1/collections/{collection}/revisions/{revision}/items", cursor=args.cursor,
            limit=args.limit), args.limit, None, args.cursor)
        answer["entries"] = [{"item_id": e["item_id"], "path": e["path"],
                              "blob_id": e["blob_id"],
                              **({"metadata": e["metadata"]} if e.get("metadata") else {})}
                             for e in page["items"] if e["state"] == "active"]
        if page["has_more"]:
            answer["cursor"] = page["next_cursor"]
        return answer

    def memory_publish(self, args: a.MemoryPublish) -> dict[str, Any]:
        """Compare-and-swap on ``expected_revision``; a conflict is an answer, not an error."""
        argument_limits.check_publish(len(args.entries), len(args.delete_ids))
        if len({e.item_id for e in args.entries}) != len(args.entries):
            raise ToolFailure("INVALID_REQUEST", "an item_id appears twice in entries",
                              {"field": "entries"})
        publish = outbox.Publish(args.collection_id, args.expected_revision, args.mode,
                                 tuple((e.item_id, e.path, e.blob_id) for e in args.entries),
                                 tuple(dict.fromkeys(args.delete_ids)))
        request_id = keyed_request_id("memory_publish", args.key,
                                      args.model_dump(exclude={"key"}))
        row = self._queue(request_id,
                          lambda: outbox.enqueue_publish(self.store, publish, request_id))
        if row is not None and outbox.request_body(self.store, row) != {
                **_publish_body(publish), "request_id": request_id}:
            raise ToolFailure("IDEMPOTENCY_CONFLICT", "this key was used for another publish",
                              {"field": "key"})
        try:
            result = self._submitted(request_id)  # checked when it was recorded
        except ToolFailure as failure:
            current = failure.details.get("current_revision")
            if failure.code != "REVISION_CONFLICT" or type(current) is not int:
                raise
            return {"published": False, "conflict": True, "current_revision": current}
        return {"published": True, "revision": result["revision"], "changed": result["changed"]}

    def attach(self, args: a.Attach) -> dict[str, Any]:
        return blobs.attach(self.api, self.agent.files, args.path, args.content_type)

    def read_blob(self, args: a.ReadBlob) -> dict[str, Any]:
        return blobs.read(self.api, self.agent.files, args.blob_id, args.save_to)

    def _queued(self, request_id: str) -> Row | None:
        return self.store.row("SELECT * FROM local_outbound WHERE request_id = ?", (request_id,))

    def _queue(self, request_id: str, enqueue: Callable[[], int]) -> Row | None:
        """The write queued under ``request_id`` before this call, else None once ``enqueue``
        queued it; an identical call running alongside may queue it first (UNIQUE
        request_id): then that call's is this call's write."""
        row = self._queued(request_id)
        if row is not None:
            return row
        try:
            enqueue()
        except apsw.ConstraintError:
            row = self._queued(request_id)
            if row is None:
                raise
            return row
        return None

    def _outbound(self, outbound_id: int) -> Row:
        row = self.store.row("SELECT * FROM local_outbound WHERE outbound_id = ?", (outbound_id,))
        assert row is not None  # outbound rows are permanent
        return row

    def _submitted(self, request_id: str) -> dict[str, Any]:
        """Submit every queued write, this one last (waiting for another call submitting it),
        then its final answer (its refusal as a failure). A temporary failure leaves it queued:
        the same call again sends it once."""
        row = self._queued(request_id)
        assert row is not None  # queued by the caller; outbound rows are permanent
        try:
            outbox.flush(self.store, self.api)
            outbox.submit_queued(self.store, self.api, row["outbound_id"])
        except ServerError as error:
            raise refused(error.status, error.code, f"{error.message}; queued: the same call "
                          "again sends it once", error.details) from None
        except ConsumerError as error:
            raise ToolFailure("UNAVAILABLE", f"{error}; queued: the same call again sends "
                              "it once") from None
        row = self._outbound(row["outbound_id"])
        if row["state"] == "pending":  # another call's submission of it failed for now
            raise ToolFailure("UNAVAILABLE", "not sent yet; queued: the same call again sends "
                              "it once")
        answer: dict[str, Any] = json.loads(row["result_json"])
        if row["state"] == "failed":
            refusal = answer["error"]
            raise refused(row["result_status"], refusal["code"], refusal["message"],
                          refusal.get("details") or {})
        return answer


def _same_send(store: LocalStore, row: Row, send: outbox.Send) -> bool:
    recipients = [r["actor_id"] for r in store.rows(
        "SELECT actor_id FROM local_outbound_recipients WHERE outbound_id = ? ORDER BY position",
        (row["outbound_id"],))]
    return (row["operation"] == "message.send" and recipients == list(send.recipients)
            and outbox.attachment_ids(store, row["outbound_id"]) == list(send.attachments)
            and (row["subject"], row["body_text"], row["kind"], row["thread_id"],
                 row["in_reply_to"]) == (send.subject, send.text, send.kind, send.thread_id,
                                         send.in_reply_to))


def _publish_body(publish: outbox.Publish) -> dict[str, Any]:
    """The request a publish makes, as :func:`outbox.request_body` rebuilds it."""
    body: dict[str, Any] = {"expected_revision": publish.expected_revision, "mode": publish.mode,
                            "items": [{"item_id": i, "path": p, "blob_id": b}
                                      for i, p, b in sorted(publish.entries)]}
    if publish.deletes:
        body["delete_ids"] = sorted(publish.deletes)
    return body
