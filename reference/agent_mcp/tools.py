"""What each tool does, on the consumer's local file and the server: one protocol operation a
tool, answers kept small. Runs on a worker thread, one call at a time (one local file)."""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any
from urllib.parse import quote

from waypost.reference.agent_mcp import arguments as a
from waypost.reference.agent_mcp import blobs
from waypost.reference.agent_mcp.errors import ToolFailure
from waypost.reference.consumer import faults, outbox, sync, views, work
from waypost.reference.consumer.client import Api, ConsumerError, ServerError
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


def keyed_request_id(tool: str, key: str | None, arguments: dict[str, Any]) -> str:
    """The request_id a write gets from its call: the same key (by default the arguments
    themselves) gives the same id, so a repeated call finds its first write."""
    seed = key if key is not None else json.dumps(arguments, sort_keys=True, ensure_ascii=False)
    digest = hashlib.sha256(f"{tool}\0{key is not None}\0{seed}".encode()).hexdigest()[:32]
    prefix = "publish" if tool == "memory_publish" else "send"
    return f"wpc-{prefix}-{digest}"


class Agent:
    """The tools of one agent: one local file, one server, one token, one folder of files."""

    def __init__(self, store: LocalStore, api: Api, files: blobs.Files) -> None:
        self.store, self.api, self.files = store, api, files
        self.lock = threading.Lock()

    def inbox(self, args: a.Inbox) -> dict[str, Any]:
        """Sync, then one page of work items in feed order."""
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
        for item_id in args.item_ids:
            if self.store.value("SELECT 1 FROM local_work WHERE item_id = ?", (item_id,)) is None:
                raise ToolFailure("NOT_FOUND", f"no work item {item_id} here (see inbox)",
                                  {"field": "item_ids"})
        before = self.store.value("SELECT coalesce(max(outbound_id), 0) FROM local_outbound")
        moved = work.mark_done(self.store, list(dict.fromkeys(args.item_ids)))
        faults.hit("done.after_commit")
        reason = ""
        try:
            outbox.flush(self.store, self.api)
        except ConsumerError as error:  # the ACK stays queued and goes out with the next call
            reason = str(error)
        acks = self.store.rows("SELECT state, result_json FROM local_outbound WHERE"
                               " outbound_id > ? AND operation = 'receipt.ack'"
                               " ORDER BY outbound_id", (before,))
        for ack in acks:
            if ack["state"] == "failed":
                refusal = json.loads(ack["result_json"])["error"]
                raise ToolFailure(refusal["code"], f"done here, but the server refused the "
                                  f"processed ACK: {refusal['message']}",
                                  refusal.get("details") or {})
        if any(ack["state"] == "pending" for ack in acks):
            return {"done": moved, "acked": False,
                    "reason": f"{reason or 'not sent yet'}; the ACK goes out with the next call"}
        return {"done": moved, "acked": True}

    def send(self, args: a.Send) -> dict[str, Any]:
        """A message through the outbox: the same call again never sends twice."""
        send = outbox.Send(tuple(dict.fromkeys(args.to)), args.subject, args.text, args.kind,
                           args.thread_id)
        return self._send("send", args.key, args.model_dump(exclude={"key"}), send)

    def reply(self, args: a.Reply) -> dict[str, Any]:
        """A reply to a stored message: to its sender, in its thread."""
        message = self._item(args.item_id).get("message")
        if message is None:
            raise ToolFailure("INVALID_REQUEST", f"{args.item_id} is not a message",
                              {"field": "item_id"})
        subject = args.subject or ("Re: " + message["subject"])[:256]
        send = outbox.Send((message["producer_id"],), subject, args.text, args.kind,
                           message["thread_id"], message["message_id"], args.item_id)
        return self._send("reply", args.key, args.model_dump(exclude={"key"}), send)

    def _send(self, tool: str, key: str | None, arguments: dict[str, Any],
              send: outbox.Send) -> dict[str, Any]:
        request_id = keyed_request_id(tool, key, arguments)
        row = self._queued(request_id)
        if row is None:
            outbox.enqueue_send(self.store, send, request_id)
        elif not _same_send(self.store, row, send):
            raise ToolFailure("IDEMPOTENCY_CONFLICT", "this key was used for another message",
                              {"field": "key"})
        result = self._submitted(request_id)
        return {"message_id": result["message_id"], "thread_id": result["thread_id"],
                **({"repeat": True} if row is not None else {})}

    def memory_get(self, args: a.MemoryGet) -> dict[str, Any]:
        """A page of a revision's active entries (the head's by default)."""
        collection = quote(args.collection_id, safe="")
        head = int(self.api.collection(collection)["current_revision"])
        revision = head if args.revision is None else args.revision
        answer: dict[str, Any] = {"collection_id": args.collection_id, "revision": revision,
                                  "head": head, "entries": []}
        if revision == 0:
            return answer
        page = self.api.get(f"/v1/collections/{collection}/revisions/{revision}/items",
                            cursor=args.cursor, limit=args.limit)
        answer["entries"] = [{"item_id": e["item_id"], "path": e["path"], "blob_id": e["blob_id"],
                              **({"metadata": e["metadata"]} if e.get("metadata") else {})}
                             for e in page["items"]]
        if page.get("has_more"):
            answer["cursor"] = page["next_cursor"]
        return answer

    def memory_publish(self, args: a.MemoryPublish) -> dict[str, Any]:
        """Compare-and-swap on ``expected_revision``; a conflict is an answer, not an error."""
        if len({e.item_id for e in args.entries}) != len(args.entries):
            raise ToolFailure("INVALID_REQUEST", "an item_id appears twice in entries",
                              {"field": "entries"})
        publish = outbox.Publish(args.collection_id, args.expected_revision, args.mode,
                                 tuple((e.item_id, e.path, e.blob_id) for e in args.entries),
                                 tuple(dict.fromkeys(args.delete_ids)))
        request_id = keyed_request_id("memory_publish", args.key,
                                      args.model_dump(exclude={"key"}))
        row = self._queued(request_id)
        if row is None:
            outbox.enqueue_publish(self.store, publish, request_id)
        elif outbox.request_body(self.store, row) != {
                **_publish_body(publish), "request_id": request_id}:
            raise ToolFailure("IDEMPOTENCY_CONFLICT", "this key was used for another publish",
                              {"field": "key"})
        try:
            result = self._submitted(request_id)
        except ToolFailure as failure:
            if failure.code != "REVISION_CONFLICT":
                raise
            return {"published": False, "conflict": True,
                    "current_revision": failure.details.get("current_revision")}
        return {"published": True, "revision": result["revision"], "changed": result["changed"]}

    def attach(self, args: a.Attach) -> dict[str, Any]:
        return blobs.attach(self.api, self.files, args.path, args.content_type)

    def read_blob(self, args: a.ReadBlob) -> dict[str, Any]:
        return blobs.read(self.api, self.files, args.blob_id, args.save_to)

    def _queued(self, request_id: str) -> Row | None:
        return self.store.row("SELECT * FROM local_outbound WHERE request_id = ?", (request_id,))

    def _submitted(self, request_id: str) -> dict[str, Any]:
        """Submit every queued write, then the final answer of this one (its error as a
        failure). A temporary failure leaves it queued: the same call again sends it once."""
        try:
            outbox.flush(self.store, self.api)
        except ServerError as error:
            raise ToolFailure(error.code, f"{error.message}; queued: the same call again "
                              "sends it once", error.details) from None
        except ConsumerError as error:
            raise ToolFailure("UNAVAILABLE", f"{error}; queued: the same call again sends "
                              "it once") from None
        row = self._queued(request_id)
        assert row is not None
        answer: dict[str, Any] = json.loads(row["result_json"])
        if row["state"] == "failed":
            refusal = answer["error"]
            raise ToolFailure(refusal["code"], refusal["message"], refusal.get("details") or {})
        return answer


def _same_send(store: LocalStore, row: Row, send: outbox.Send) -> bool:
    recipients = [r["actor_id"] for r in store.rows(
        "SELECT actor_id FROM local_outbound_recipients WHERE outbound_id = ? ORDER BY position",
        (row["outbound_id"],))]
    return (row["operation"] == "message.send" and recipients == list(send.recipients)
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
