"""Commands of the kit: each performs real HTTP requests, compares every answer with the
model's prediction, and updates the model. Commands take only concrete, JSON-able arguments
(handles of tokens, indexes of messages, items and cursors), so a replay file that lists them
reruns the same requests deterministically."""

from __future__ import annotations

import hashlib
import itertools
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from waypost.properties import faults, fingerprints, memory
from waypost.properties.history import analyse
from waypost.properties.http import Answer, Session
from waypost.properties.model import (
    Actor,
    Consumer,
    HeldCursor,
    Item,
    Message,
    Model,
    Recorded,
    Token,
    Upload,
    message_item_json,
)
from waypost.properties.violations import PropertyViolation, check

FULL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write",
               "event.subscribe", "blob.write"]
SPACE_ACTORS = {"A": ("a0", "a1", "a2"), "B": ("b0",)}
MISSING = "zz-missing"


class World:
    """One example's spaces, the model of them, and the session that reaches the server."""

    def __init__(self, session: Session, prefix: str) -> None:
        self.session = session
        session.trace = []  # one example's exchanges only
        self.model = Model()
        self.prefix = prefix
        self.space_ids = {name: f"{prefix}{name}" for name in SPACE_ACTORS}
        self.commands: list[dict[str, Any]] = []
        self.message_order: list[str] = []
        self._next = 0

    # ----- helpers ---------------------------------------------------------------------------

    def rid(self) -> str:
        self._next += 1
        return f"{self.prefix}{self._next}"

    def token(self, handle: str) -> Token:
        return self.model.tokens[handle]

    def as_(self, token: Token, method: str, path: str, body: Any = None,
            params: dict[str, Any] | None = None) -> Answer:
        return self.session.call(method, path, bearer=token.secret, who=token.handle, body=body,
                                 params=params)

    def admin_ok(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.session.admin(method, path, body)
        if answer.status not in (200, 201):
            raise RuntimeError(f"provisioning {method} {path} failed: {answer.status} "
                               f"{answer.json}")
        data: dict[str, Any] = answer.json
        return data

    def run(self, name: str, args: dict[str, Any]) -> None:
        """Perform one command by name (the state machine and replays both come here)."""
        self.commands.append({"command": name, "args": args})
        try:
            getattr(self, f"do_{name}")(**args)
        except PropertyViolation as violation:  # the evidence of this very example
            violation.commands = list(self.commands)
            violation.exchanges = [e.as_json() for e in self.session.trace]
            raise

    def expect_refusal(self, answer: Answer, allowed: set[str], pid: str, what: str) -> None:
        check(pid, answer.status >= 400 and answer.code in allowed,
              f"{what}: expected one of {sorted(allowed)}, got {answer.status} {answer.code}",
              answer=answer.json)

    def expect_like_missing(self, answer: Answer, reader: Token, path: str, probed: str,
                            pid: str, what: str) -> None:
        """``NOT_FOUND``, and exactly the answer a missing id gets (the probed id masked)."""
        self.expect_refusal(answer, {"NOT_FOUND"}, pid, what)
        missing = self.as_(reader, "GET", path.format(MISSING))
        check(pid, (answer.status, _masked(answer.json, probed)) == (
            missing.status, _masked(missing.json, MISSING)),
              f"{what} must answer exactly like a missing one",
              probed=answer.json, missing=missing.json)

    # ----- provisioning ----------------------------------------------------------------------

    def do_setup(self) -> None:
        """Two spaces: A (a0 default, a1, a2) and B (b0); an inbox and a full token each."""
        described = self.session.admin("GET", "/v1/describe")
        capabilities = described.json.get("capabilities", {}) if isinstance(
            described.json, dict) else {}
        self.model.hooks = bool(capabilities.get("test_hooks"))
        if self.model.hooks:
            clock = self.session.admin("GET", "/_test/clock")
            self.model.now_ms = _ms(clock.json["now"])
        for name, actors in SPACE_ACTORS.items():
            space = self.space_ids[name]
            self.admin_ok("POST", "/admin/v1/spaces", {
                "request_id": f"{space}.create", "space_id": space, "display_name": name,
                "source_uri": f"waypost-kit://{space}",
                "default_actor": {"actor_id": actors[0], "kind": "agent",
                                  "display_name": actors[0]}})
            self.model.spaces[space] = actors[0]
            for actor in actors:
                if actor != actors[0]:
                    self.admin_ok("POST", f"/admin/v1/spaces/{space}/actors", {
                        "request_id": self.rid(), "actor_id": actor, "kind": "agent",
                        "display_name": actor})
                self.model.actors[(space, actor)] = Actor(actor, space)
                self.do_provision(name, actor, "inbox", {}, FULL_SCOPES, None)
        memory.setup_collections(self)

    def do_provision(self, space_name: str, actor: str, view: str,
                     filter: dict[str, list[str]], scopes: list[str],
                     recipients: list[str] | None, blobs: list[int] | None = None,
                     collections: list[list[Any]] | None = None) -> None:
        """A new consumer of ``actor`` with ``view`` and ``filter``, and a token for it with
        ``collections`` grants (``[[collection_id, [actions]], …]``)."""
        space = self.space_ids[space_name]
        consumer_id = f"c{len(self.model.consumers)}"
        body: dict[str, Any] = {"request_id": self.rid(), "consumer_id": consumer_id,
                                "actor_id": actor, "view": view}
        if filter:
            body["filter"] = filter
        self.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", body)
        self.model.consumers[(space, consumer_id)] = Consumer(
            consumer_id, space, actor, view, 1, {k: frozenset(v) for k, v in filter.items()})
        granted = [self.model.uploads[k].blob_id for k in blobs or []]
        self.issue(space, actor, consumer_id, scopes, recipients, granted,
                   {cid: frozenset(actions) for cid, actions in collections or []})

    def issue(self, space: str, actor: str, consumer_id: str, scopes: list[str],
              recipients: list[str] | None, blob_references: list[str] | None = None,
              collections: dict[str, frozenset[str]] | None = None) -> Token:
        grant = {"mode": "any"} if recipients is None else {"mode": "listed",
                                                             "actor_ids": recipients}
        collection_grants = [{"collection_id": cid, "actions": sorted(actions)}
                             for cid, actions in sorted((collections or {}).items())]
        issued = self.admin_ok("POST", f"/admin/v1/spaces/{space}/tokens", {
            "request_id": self.rid(), "actor_id": actor, "consumer_id": consumer_id,
            "scopes": scopes, "recipients": grant, "collections": collection_grants,
            "blob_references": blob_references or []})
        expected = fingerprints.grant_fingerprint(scopes, grant, collection_grants,
                                                  blob_references or [])
        check("P04", issued.get("grant_fingerprint") == expected,
              "grant fingerprint differs from SHA-256(JCS(normalised grants))",
              answer=issued, expected=expected)
        handle = f"t{len(self.model.tokens)}"
        token = Token(handle, issued["token_id"], issued["token"], space, actor, consumer_id,
                      frozenset(scopes), recipients is None, frozenset(recipients or ()),
                      expected, blob_references=frozenset(blob_references or ()),
                      collections=dict(collections or {}))
        self.model.tokens[handle] = token
        return token

    def do_rotate(self, token: str) -> None:
        """A second token with identical grants: same fingerprint, cursors stay valid (P07)."""
        old = self.token(token)
        self.issue(old.space, old.actor_id, old.consumer_id, sorted(old.scopes),
                   None if old.recipients_any else sorted(old.recipient_ids),
                   sorted(old.blob_references), old.collections)

    def do_regrant(self, token: str) -> None:
        """Another token for the same consumer with other grants: a new grant fingerprint, so
        held cursors of the old grants are CURSOR_STALE and its checkpoint starts at 0 (P07)."""
        old = self.token(token)
        scopes = sorted(set(old.scopes) ^ {"event.subscribe"})
        self.issue(old.space, old.actor_id, old.consumer_id, scopes,
                   None if old.recipients_any else sorted(old.recipient_ids),
                   sorted(old.blob_references), old.collections)

    def do_ack_limits(self, token: str) -> None:
        """Past the published ACK limit is RESOURCE_LIMIT; neither items nor a checkpoint is
        INVALID_REQUEST; nothing is saved either way (P10)."""
        acker = self.token(token)
        limit = 20
        over = self.as_(acker, "POST", "/v1/acks", {"request_id": self.rid(), "items": [
            {"item_id": f"fi-{n}", "stage": "received"} for n in range(limit + 1)]})
        empty = self.as_(acker, "POST", "/v1/acks", {"request_id": self.rid(), "items": []})
        if not self.model.live(acker):
            self.expect_refusal(over, {"UNAUTHENTICATED"}, "P02", "ACK with a dead token")
            return
        self.expect_refusal(over, {"RESOURCE_LIMIT", "FORBIDDEN"}, "P10", "an ACK of 21 items")
        self.expect_refusal(empty, {"INVALID_REQUEST", "FORBIDDEN"}, "P10", "an empty ACK")

    def do_revoke(self, token: str) -> None:
        target = self.token(token)
        self.admin_ok("POST", f"/admin/v1/tokens/{target.token_id}/revoke",
                      {"request_id": self.rid()})
        target.revoked = True

    def do_disable(self, space_name: str, actor: str) -> None:
        space = self.space_ids[space_name]
        self.admin_ok("POST", f"/admin/v1/spaces/{space}/actors/{actor}/disable",
                      {"request_id": self.rid()})
        self.model.actors[(space, actor)].disabled = True

    def do_change_view(self, token: str, view: str, filter: dict[str, list[str]]) -> None:
        consumer = self.model.consumer_of(self.token(token))
        body: dict[str, Any] = {"request_id": self.rid(), "view": view}
        if filter:
            body["filter"] = filter
        self.admin_ok(
            "POST", f"/admin/v1/spaces/{consumer.space}/consumers/{consumer.consumer_id}/view",
            body)
        consumer.view_revision += 1  # tracked by the kit: answers need not show it
        consumer.view = view
        consumer.filter = {k: frozenset(v) for k, v in filter.items()}

    # ----- messages --------------------------------------------------------------------------

    def send_body(self, token: Token, recipients: list[str] | None, thread: Any,
                  reply: int | None, kind: str, subject: str, text: str,
                  options: list[str] | None, attachments: list[int] | None = None
                  ) -> dict[str, Any]:
        body: dict[str, Any] = {"request_id": self.rid(), "kind": kind, "subject": subject,
                                "body": {"text": text}}
        if recipients is not None:
            body["recipient_ids"] = recipients
        if thread == "new":
            body["thread"] = {"new": True}
        elif thread == "missing":
            body["thread"] = {"thread_id": MISSING}
        else:
            body["thread"] = {"thread_id": self.model.messages[self.message_order[thread]].thread_id}
        if reply is not None:
            body["in_reply_to"] = self.message_order[reply]
        if options is not None:
            body["body"]["options"] = options
        if attachments is not None:
            body["attachment_ids"] = [self.model.uploads[k].blob_id for k in attachments]
        return body

    def do_send(self, token: str, recipients: list[str] | None, thread: Any, reply: int | None,
                kind: str, subject: str, text: str, options: list[str] | None,
                attachments: list[int] | None = None) -> None:
        """``message.send``: success publishes exactly one message item; refusals nothing."""
        sender = self.token(token)
        body = self.send_body(sender, recipients, thread, reply, kind, subject, text, options,
                              attachments)
        self.submit_send(sender, body)

    def do_reuse_key(self, token: str, submission: int) -> None:
        """Another actor sends with a request_id some actor already used: a key is (space,
        producer, operation, request_id), so this is a new submission, never a replay of the
        other one; and the other's key is invisible to this actor's lookup (P03, P01)."""
        sub = self.recorded(submission)
        if sub.operation != "message.send":
            return
        sender = self.token(token)
        if sender.actor_id == sub.actor_id and sender.space == sub.space:
            return
        lookup = self.as_(sender, "GET", f"/v1/submissions/message.send/{sub.body['request_id']}")
        if self.model.live(sender) and (sender.space, sender.actor_id, "message.send",
                                        sub.body["request_id"]) not in self.model.submissions:
            self.expect_refusal(lookup, {"NOT_FOUND"}, "P03", "a lookup of another actor's key")
        if (sender.space, sender.actor_id, "message.send",
                sub.body["request_id"]) in self.model.submissions:
            return  # this actor used the id too: that is a plain retry, covered elsewhere
        body = dict(sub.body)
        if sender.space != sub.space:
            body = {**body, "thread": {"new": True}}
            body.pop("in_reply_to", None)
            body.pop("recipient_ids", None)
            body.pop("attachment_ids", None)
        self.submit_send(sender, body)

    def submit_send(self, sender: Token, body: dict[str, Any]) -> None:
        """Send ``body`` and compare the answer with the model (shared by send and reuse)."""
        answer = self.as_(sender, "POST", "/v1/messages", body)
        if not self.model.live(sender):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "send with a dead token")
            return
        errors = self.model.send_errors(sender, body)
        if errors:
            pid = "P02" if errors <= {"FORBIDDEN"} else "P05"
            self.expect_refusal(answer, errors, pid, "send")
            return
        if not check("P05", answer.status == 201, f"send should publish, got {answer.status}",
                     answer=answer.json, request=body):
            return
        result = answer.json
        if not check("P05", {"message_id", "thread_id", "feed_item_id", "sequence",
                             "committed_at"} <= set(result), "send answer shape", answer=result):
            return
        check("P03", not answer.replayed, "a first answer must not say Waypost-Replayed")
        self.record_message(sender, body, result)
        self.model.submissions[(sender.space, sender.actor_id, "message.send",
                                body["request_id"])] = Recorded(
            "message.send", sender.space, sender.actor_id, sender.handle, body,
            fingerprints.send_fingerprint(body), 201, result)

    def record_message(self, sender: Token, body: dict[str, Any], result: dict[str, Any]) -> None:
        space = sender.space
        recipients = tuple(sorted(set(body.get("recipient_ids",
                                               [self.model.spaces[space]]))))
        thread_id = result["thread_id"]
        if "new" in body["thread"]:
            check("P05", (space, thread_id) not in self.model.threads,
                  "a new thread must get a new id", answer=result)
            self.model.threads[(space, thread_id)] = {sender.actor_id, *recipients}
        else:
            check("P05", thread_id == body["thread"]["thread_id"], "reply in the same thread",
                  answer=result)
        sequence = int(result["sequence"])
        bound = [i.sequence for i in self.model.items.get(space, []) if i.sequence]
        check("P06", all(sequence > s for s in bound),
              "a new item's sequence must be above every earlier one (never reused)",
              sequence=sequence, highest=max(bound, default=0))
        item = self.model.append(space, type="message", producer_id=sender.actor_id,
                                 recipient_ids=recipients, thread_id=thread_id,
                                 item_id=result["feed_item_id"], sequence=sequence,
                                 message={"message_id": result["message_id"],
                                          "subject": body["subject"], "kind": body["kind"]})
        item.shown = message_item_json(item, result["committed_at"])
        content = body["body"]
        shown = {"message_id": result["message_id"], "thread_id": thread_id,
                 "in_reply_to": body.get("in_reply_to"), "producer_id": sender.actor_id,
                 "recipient_ids": list(recipients), "kind": body["kind"],
                 "subject": body["subject"],
                 "body": {"text": content["text"], "options": content.get("options", []),
                          "source_uri": content.get("source_uri")},
                 "attachment_ids": body.get("attachment_ids", []),
                 "metadata": body.get("metadata"),
                 "committed_at": result["committed_at"], "feed_item_id": result["feed_item_id"],
                 "sequence": result["sequence"]}
        self.model.messages[result["message_id"]] = Message(
            result["message_id"], space, thread_id, sender.actor_id, recipients, shown, item)
        self.message_order.append(result["message_id"])
        for blob_id in body.get("attachment_ids", []):
            self.model.attachments.setdefault(blob_id, []).append(result["message_id"])

    def do_read_message(self, token: str, target: int | None) -> None:
        """Full message to producer, recipients, observers with ``message.read``; else 404."""
        reader = self.token(token)
        message_id = MISSING if target is None else self.message_order[target]
        answer = self.as_(reader, "GET", f"/v1/messages/{message_id}")
        if not self.model.live(reader):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "read with a dead token")
            return
        message = self.model.messages.get(message_id)
        if message is None or not self.model.readable_by(message, reader):
            pid = "P01" if message is not None and message.space != reader.space else "P08"
            self.expect_like_missing(answer, reader, "/v1/messages/{}", message_id, pid,
                                     "an invisible or foreign message")
            return
        if not reader.has("message.read"):
            self.expect_refusal(answer, {"FORBIDDEN"}, "P02", "read without message.read")
            return
        check("P05", answer.status == 200 and _protocol(answer.json, message.shown)
              == message.shown, "the message must read back exactly as published",
              answer=answer.json, expected=message.shown)

    # ----- feed ------------------------------------------------------------------------------

    def do_read_feed(self, token: str, cursor: int | None, limit: int) -> None:
        """One page from the checkpoint or a held cursor, compared item by item (P06–P08)."""
        reader = self.token(token)
        params: dict[str, Any] = {"limit": limit}
        held = None if cursor is None else self.model.cursors[cursor]
        if held is not None:
            params["cursor"] = held.text
        answer = self.as_(reader, "GET", "/v1/feed", params=params)
        if not self.model.live(reader):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "feed with a dead token")
            return
        if held is not None:
            problem = self.model.cursor_problem(held, reader)
            if problem:
                pid = "P01" if held.space != reader.space else "P07"
                self.expect_refusal(answer, {problem}, pid, "a cursor of another binding")
                return
        position = held.position if held is not None else self.model.checkpoint(reader)
        self.check_page(reader, position, limit, answer)

    def check_page(self, reader: Token, position: int, limit: int, answer: Answer) -> int:
        """Compare one page with the model; bind receipt items seen for the first time;
        return the page's end position."""
        if not check("P06", answer.status == 200 and isinstance(answer.json, dict)
                     and {"items", "next_cursor", "has_more"} <= set(answer.json),
                     f"feed read failed: {answer.status}", answer=answer.json):
            return position
        page = answer.json
        expected = self.model.visible_after(reader, position)
        shown = page["items"]
        check("P06", len(shown) <= limit, "a page holds at most limit items",
              shown=len(shown), limit=limit)
        want = expected[:min(limit, len(shown)) if page["has_more"] else limit]
        anomalies = analyse([self.expected_id(item, got) for item, got in
                             zip(want, shown + [None] * len(want), strict=False)],
                            [got["item_id"] for got in shown],
                            [int(got["sequence"]) for got in shown])
        types = {**{i.item_id: i.type for i in want if i.item_id},
                 **{got["item_id"]: got.get("type") for got in shown}}
        # Items the consumer must never see point at visibility (P08) or, when they are all
        # receipts, at receipt history (P09); anything else is paging itself (P06).
        visible = self.model.visible_after(reader, 0)
        visible_ids = {i.item_id for i in visible if i.item_id}
        unbound = [i for i in visible if i.item_id is None]
        by_id = {got["item_id"]: got for got in shown}
        strays = {item_id for a in anomalies if a.kind == "unexpected"
                  for item_id in a.item_ids if item_id not in visible_ids
                  and not any(self.matches_unbound(i, by_id.get(item_id, {})) for i in unbound)}
        stray_types = {types.get(item_id) for item_id in strays}
        pid = ("P06" if not strays
               else "P09" if stray_types == {"receipt"}
               else "P12" if stray_types == {"memory_revision"} and not self.known_revisions(
                   [got for got in shown if got["item_id"] in strays])
               else "P08")
        if not check(pid, not anomalies, "the page differs from the consumer's visible items",
                     anomalies=[a.as_json() for a in anomalies], position=position,
                     limit=limit):
            return position
        for item, got in zip(want, shown, strict=True):
            self.compare_item(item, got)
        check("P06", page["has_more"] == (len(expected) > len(shown)), "has_more is wrong",
              has_more=page["has_more"], visible=len(expected), shown=len(shown))
        end = int(shown[-1]["sequence"]) if shown else position
        consumer = self.model.consumer_of(reader)
        self.model.cursors.append(HeldCursor(page["next_cursor"], reader.space, reader.actor_id,
                                             reader.consumer_id, consumer.view_revision,
                                             reader.grant_fingerprint, end))
        return end

    def known_revisions(self, shown: list[dict[str, Any]]) -> bool:
        """Whether every revision item shown is one the model knows was published (an unknown
        one is a revision that should not exist, e.g. from a no-op publish)."""
        known = {(c.collection_id, revision) for c in self.model.collections.values()
                 for revision in c.items}
        return all((got.get("memory_revision", {}).get("collection_id"),
                    got.get("memory_revision", {}).get("revision")) in known for got in shown)

    def expected_id(self, item: Item, got: dict[str, Any] | None) -> str:
        """The id the model expects at this place; an unbound item (a receipt or a revision,
        whose id no answer told) takes the id shown if the item shown is that item."""
        if item.item_id is not None:
            return item.item_id
        if got is not None and self.matches_unbound(item, got):
            return str(got["item_id"])
        return f"<{item.type} {item.receipt or item.memory} not shown>"

    def matches_unbound(self, item: Item, got: dict[str, Any]) -> bool:
        wanted = item.receipt if item.type == "receipt" else item.memory
        detail = got.get(item.type)
        return (got.get("type") == item.type and isinstance(detail, dict) and wanted is not None
                and all(detail.get(k) == v for k, v in wanted.items()))

    def compare_item(self, item: Item, got: dict[str, Any]) -> None:
        got = _protocol(got, item.shown) if item.shown is not None else got
        if item.shown is None:  # first sight of a receipt or revision: learn its server values
            bound = [i.sequence for i in self.model.items[item.space]
                     if i.sequence is not None and i.index < item.index]
            check("P06", all(int(got["sequence"]) > s for s in bound),
                  f"a {item.type} item must come after everything committed before it",
                  item=got)
            item.item_id, item.sequence = got["item_id"], int(got["sequence"])
            item.shown = got
            check("P09" if item.type == "receipt" else "P05",
                  got["producer_id"] == item.producer_id
                  and sorted(got["recipient_ids"]) == sorted(item.recipient_ids)
                  and got["thread_id"] == item.thread_id, f"{item.type} item routing", item=got)
            return
        check("P09" if item.type == "receipt" else "P06", got == item.shown,
              "a published item changed or differs from what was published",
              shown=got, expected=item.shown)

    def do_tamper(self, token: str, cursor: int, where: int) -> None:
        """Any changed character of a cursor is CURSOR_INVALID, with no data read (P07)."""
        reader = self.token(token)
        text = self.model.cursors[cursor].text
        index = where % len(text)
        replacement = "A" if text[index] != "A" else "B"
        tampered = text[:index] + replacement + text[index + 1:]
        answer = self.as_(reader, "GET", "/v1/feed", params={"cursor": tampered})
        if not self.model.live(reader):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "feed with a dead token")
            return
        self.expect_refusal(answer, {"CURSOR_INVALID"}, "P07", "a tampered cursor")

    def do_check_view(self, token: str, sizes: list[int] | None = None) -> None:
        """Page through the consumer's whole view from its checkpoint, following the server's
        cursors with the given page sizes (cycled): it must equal the model's visible set, in
        order, each item exactly once (P05, P06, P08, P09)."""
        reader = self.token(token)
        if not self.model.live(reader):
            return
        sizes = sizes or [100]
        position = self.model.checkpoint(reader)
        answer = self.as_(reader, "GET", "/v1/feed", params={"limit": sizes[0]})
        for page in itertools.count(1):
            limit = sizes[(page - 1) % len(sizes)]
            position = self.check_page(reader, position, limit, answer)
            if not isinstance(answer.json, dict) or not answer.json.get("has_more"):
                break
            answer = self.as_(reader, "GET", "/v1/feed", params={
                "limit": sizes[page % len(sizes)], "cursor": answer.json["next_cursor"]})

    # ----- receipts --------------------------------------------------------------------------

    def item_ref(self, ref: Any) -> Item | None:
        if ref is None:
            return None
        space, index = ref
        item: Item = self.model.items[self.space_ids[space]][index]
        return item

    def do_ack(self, token: str, lines: list[list[Any]], cursor: Any,
               recheck: bool = False) -> None:
        """An ACK of 0–20 distinct items and an optional checkpoint: all or nothing (P09, P10).
        With ``recheck``, the items it left processed are then acknowledged ``received`` and
        ``processed`` again: both must change nothing (the stage never goes back)."""
        acker = self.token(token)
        items = [self.item_ref(ref) for ref, _ in lines]
        body: dict[str, Any] = {"request_id": self.rid(), "items": [
            {"item_id": item.item_id if item is not None else MISSING, "stage": stage}
            for item, (_, stage) in zip(items, lines, strict=True)]}
        held = None
        tampered = cursor == "tampered"
        if tampered:
            body["checkpoint"] = {"cursor": "v1.tampered.cursor"}
        elif cursor is not None:
            held = self.model.cursors[cursor]
            body["checkpoint"] = {"cursor": held.text}
        answer = self.as_(acker, "POST", "/v1/acks", body)
        if not self.model.live(acker):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "ACK with a dead token")
            return
        errors = self.model.ack_errors(acker, items, held, tampered)
        if errors:
            foreign = any(i is not None and i.space != acker.space for i in items)
            self.expect_refusal(answer, errors, "P01" if foreign else "P10", "ACK")
            return
        position = None if held is None else held.position
        expected = self.model.apply_ack(acker, [(item, stage) for item, (_, stage)
                                                in zip(items, lines, strict=True)
                                                if item is not None], position)
        if not check("P10", answer.status == 200 and _protocol(answer.json, expected) == expected,
                     "the ACK answer differs from the model", answer=answer.json,
                     expected=expected):
            return
        check("P03", not answer.replayed, "a first answer must not say Waypost-Replayed")
        self.model.submissions[(acker.space, acker.actor_id, "receipt.ack",
                                body["request_id"])] = Recorded(
            "receipt.ack", acker.space, acker.actor_id, acker.handle, body,
            fingerprints.ack_fingerprint(body, position), 200, expected)
        done = [ref for (ref, _), result in zip(lines, expected["items"], strict=False)
                if result["stage"] == "processed"]
        if recheck and done:
            self.do_ack(token, [[ref, "received"] for ref in done], None)
            self.do_ack(token, [[ref, "processed"] for ref in done], None)

    # ----- submissions -----------------------------------------------------------------------

    def recorded(self, index: int) -> Recorded:
        return list(self.model.submissions.values())[index]

    def path_of(self, sub: Recorded) -> str:
        return sub.path or {"message.send": "/v1/messages", "receipt.ack": "/v1/acks",
                            "blob.prepare": "/v1/blobs"}[sub.operation]

    def do_retry(self, submission: int) -> None:
        """The same request again: the identical stable result, marked replayed (P03)."""
        sub = self.recorded(submission)
        sender = self.token(sub.token)
        answer = self.as_(sender, "POST", self.path_of(sub), sub.body)
        if not self.model.live(sender):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "retry with a dead token")
            return
        check("P03", (answer.status, _stable(answer.json)) == (sub.status, _stable(sub.result)),
              "a retry must return the identical stable result", answer=answer.json,
              status=answer.status, first=sub.result)
        check("P03", answer.replayed, "a replayed answer must carry Waypost-Replayed: true")

    def do_conflict(self, submission: int) -> None:
        """The same key with another request: IDEMPOTENCY_CONFLICT, nothing changes (P03)."""
        sub = self.recorded(submission)
        sender = self.token(sub.token)
        altered = dict(sub.body)
        if sub.operation == "message.send":
            altered["subject"] = sub.body["subject"] + " (changed)"
        elif sub.operation == "blob.prepare":
            altered["content_type"] = "application/x-changed"
        elif sub.operation == "blob.commit":
            return  # its body is only the request id; the path names the upload
        elif sub.operation == "memory.publish":
            altered["mode"] = "snapshot" if sub.body["mode"] == "delta" else "delta"
            altered.pop("delete_ids", None)
        else:
            first = dict(sub.body["items"][0]) if sub.body["items"] else None
            if first is None:
                return
            first["stage"] = "processed" if first["stage"] == "received" else "received"
            altered["items"] = [first, *sub.body["items"][1:]]
        answer = self.as_(sender, "POST", self.path_of(sub), altered)
        if not self.model.live(sender):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "retry with a dead token")
            return
        self.expect_refusal(answer, {"IDEMPOTENCY_CONFLICT"}, "P03", "a changed retry")

    def do_lookup(self, submission: int) -> None:
        """The submission lookup: committed, the fingerprint the kit computes, the result
        (P03, P04)."""
        sub = self.recorded(submission)
        asker = self.token(sub.token)
        answer = self.as_(asker, "GET",
                          f"/v1/submissions/{sub.operation}/{sub.body['request_id']}")
        if not self.model.live(asker):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "lookup with a dead token")
            return
        found = answer.json if isinstance(answer.json, dict) else {}
        if not check("P03", answer.status == 200 and found.get("state") == sub.state
                     and found.get("result") == {"status": sub.status, "body": sub.result},
                     f"the key must hold the {sub.state} stable result", answer=answer.json,
                     status=answer.status):
            return
        check("P04", found.get("fingerprint") == sub.fingerprint,
              "the recorded fingerprint is not SHA-256(JCS(normalised request))",
              answer=answer.json, expected=sub.fingerprint)

    # ----- uploads and blobs ----------------------------------------------------------------

    def do_prepare(self, token: str, content: str, filename: str | None) -> None:
        """``blob.prepare`` fixes ids and expected facts (P15); ``content`` is hex."""
        owner = self.token(token)
        data = bytes.fromhex(content)
        body: dict[str, Any] = {"request_id": self.rid(), "size": len(data),
                                "sha256": hashlib.sha256(data).hexdigest(),
                                "content_type": "application/octet-stream"}
        if filename is not None:
            body["filename"] = filename
        answer = self.as_(owner, "POST", "/v1/blobs", body)
        if not self.model.live(owner):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "prepare with a dead token")
            return
        if not owner.has("blob.write"):
            self.expect_refusal(answer, {"FORBIDDEN"}, "P02", "prepare without blob.write")
            return
        if not check("P15", answer.status == 201 and isinstance(answer.json, dict)
                     and {"upload_id", "blob_id", "upload_url", "expires_at"} <= set(answer.json),
                     f"prepare should answer 201, got {answer.status}", answer=answer.json):
            return
        prepared = answer.json
        self.model.uploads.append(Upload(prepared["upload_id"], prepared["blob_id"], owner.space,
                                         owner.actor_id, data, body["content_type"], filename,
                                         prepared["expires_at"]))
        normal = {k: v for k, v in body.items() if k != "request_id"}
        self.model.submissions[(owner.space, owner.actor_id, "blob.prepare",
                                body["request_id"])] = Recorded(
            "blob.prepare", owner.space, owner.actor_id, owner.handle, body,
            fingerprints.sha256_jcs(normal), 201, prepared)

    def expired(self, upload: Upload) -> bool:
        return (self.model.hooks and upload.state != "sealed"
                and _ms(upload.expires_at) <= self.model.now_ms)

    def upload_refusal(self, who: Token, upload: Upload, scope: str) -> set[str] | None:
        """The errors that apply before the upload's own state is looked at, if any."""
        if not self.model.live(who):
            return {"UNAUTHENTICATED"}
        if not who.has(scope):
            return {"FORBIDDEN", "NOT_FOUND"} if upload.owner_id != who.actor_id else {"FORBIDDEN"}
        if upload.space != who.space or upload.owner_id != who.actor_id:
            return {"NOT_FOUND"}
        return None

    def do_put(self, token: str, upload: int, right: bool) -> None:
        """Content must match size and SHA-256; create-only: a second or late PUT with other
        bytes never changes what is stored (P15)."""
        who, slot = self.token(token), self.model.uploads[upload]
        data = slot.content if right else slot.content + b"~"
        answer = self.session.put(f"/v1/uploads/{slot.upload_id}/content", data,
                                  bearer=who.secret, who=who.handle)
        refused = self.upload_refusal(who, slot, "blob.write")
        if refused is not None:
            self.expect_refusal(answer, refused, "P16" if refused == {"NOT_FOUND"} else "P02",
                                "PUT by someone else")
            return
        if self.expired(slot) and slot.state == "awaiting":
            self.expect_refusal(answer, {"UPLOAD_EXPIRED", "CONTENT_MISMATCH"}, "P15",
                                "PUT after expiry")
            return
        if not right:
            self.expect_refusal(answer, {"CONTENT_MISMATCH"}, "P15", "PUT of other bytes")
            return
        if check("P15", 200 <= answer.status < 300, f"PUT of the declared bytes: {answer.status}",
                 answer=answer.json) and slot.state == "awaiting":
            slot.state = "stored"

    def do_seal(self, token: str, upload: int) -> None:
        """``blob.commit``: a stored upload becomes a blob with its verified facts (P15)."""
        who, slot = self.token(token), self.model.uploads[upload]
        body = {"request_id": self.rid()}
        path = f"/v1/uploads/{slot.upload_id}/commit"
        answer = self.as_(who, "POST", path, body)
        refused = self.upload_refusal(who, slot, "blob.write")
        if refused is not None:
            self.expect_refusal(answer, refused, "P16" if refused == {"NOT_FOUND"} else "P02",
                                "commit by someone else")
            return
        if self.expired(slot):
            self.expect_refusal(answer, {"UPLOAD_EXPIRED"}, "P15", "commit after expiry")
            return
        if slot.state == "awaiting":
            self.expect_refusal(answer, {"NOT_READY"}, "P15", "commit before content")
            return
        if not check("P15", answer.status == 200 and answer.json == slot.sealed_answer,
                     "commit must answer the sealed blob's facts", answer=answer.json,
                     expected=slot.sealed_answer):
            return
        slot.state = "sealed"
        self.model.submissions[(who.space, who.actor_id, "blob.commit", body["request_id"])] = \
            Recorded("blob.commit", who.space, who.actor_id, who.handle, body,
                     fingerprints.sha256_jcs({"upload_id": slot.upload_id}), 200,
                     slot.sealed_answer, path)

    def do_read_blob(self, token: str, upload: int | None) -> None:
        """Blob metadata and bytes to the owner, readers of an attaching message and grant
        holders only; to anyone else exactly like a missing blob (P16, P01)."""
        reader = self.token(token)
        slot = None if upload is None else self.model.uploads[upload]
        blob_id = MISSING if slot is None else slot.blob_id
        answer = self.as_(reader, "GET", f"/v1/blobs/{blob_id}")
        if not self.model.live(reader):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "blob read, dead token")
            return
        if slot is None or not self.model.blob_readable(slot.blob_id, reader):
            pid = "P01" if slot is not None and slot.space != reader.space else "P16"
            self.expect_like_missing(answer, reader, "/v1/blobs/{}", blob_id, pid,
                                     "a blob the reader may not see")
            return
        expected = {**slot.sealed_answer, "filename": slot.filename}
        shown = {k: v for k, v in (answer.json or {}).items() if k != "sealed_at"} \
            if isinstance(answer.json, dict) else None
        if not check("P16", answer.status == 200 and shown == expected,
                     "blob metadata differs", answer=answer.json, expected=expected):
            return
        if slot.sealed is None:
            slot.sealed = answer.json
        check("P15", answer.json == slot.sealed, "sealed blob metadata changed",
              answer=answer.json, first=slot.sealed)
        content = self.session.get_bytes(f"/v1/blobs/{blob_id}/content", bearer=reader.secret,
                                         who=reader.handle)
        check("P15", content.status == 200 and content.data == slot.content
              and hashlib.sha256(slot.content).hexdigest() in content.etag,
              "a sealed blob's bytes must be exactly the verified content",
              status=content.status, etag=content.etag, size=len(content.data))

    def do_advance_clock(self, ms: int) -> None:
        """Move the server clock (test hook) so uploads expire (P15)."""
        if not self.model.hooks:
            return
        answer = self.session.admin("POST", "/_test/clock", {"advance_ms": ms})
        if answer.status == 200:
            self.model.now_ms = _ms(answer.json["now"])

    # ----- faults (properties/faults.py) ------------------------------------------------------

    def do_fault_send(self, token: str, point: str, action: str, restart: bool,
                      send: dict[str, Any]) -> None:
        faults.send(self, token, point, action, restart, send)

    def do_fault_publish(self, token: str, point: str, action: str, restart: bool,
                         publish: dict[str, Any]) -> None:
        faults.publish(self, token, point, action, restart, publish)

    def do_parallel_retries(self, token: str, copies: int, send: dict[str, Any]) -> None:
        faults.parallel_retries(self, token, copies, send)

    def do_concurrent_sends(self, token: str, subjects: list[str]) -> None:
        faults.concurrent_sends(self, token, subjects)

    # ----- memory (properties/memory.py) ------------------------------------------------------

    def do_publish(self, token: str, collection: str, offset: int, mode: str,
                   items: list[list[Any]], deletes: list[int], manifest: bool) -> None:
        memory.publish(self, token, collection, offset, mode, items, deletes, manifest)

    def do_race(self, token: str, collection: str, items: list[list[Any]]) -> None:
        memory.race(self, token, collection, items)

    def do_revision_limit(self, token: str, collection: str) -> None:
        memory.revision_limit(self, token, collection)

    def do_read_collection(self, token: str, collection: str) -> None:
        memory.read_collection(self, token, collection)

    def do_read_revision(self, token: str, collection: str, revision: int, sizes: list[int],
                         tombstones: bool) -> None:
        memory.read_revision(self, token, collection, revision, sizes, tombstones)

    def do_cursor_elsewhere(self, token: str, collection: str, revision: int) -> None:
        memory.cursor_elsewhere(self, token, collection, revision)

    # ----- isolation -------------------------------------------------------------------------

    def do_probe_foreign(self, token: str, item: list[Any]) -> None:
        """An item of the other space answers an ACK exactly like a missing one (P01)."""
        prober = self.token(token)
        target = self.item_ref(item)
        if target is None or target.space == prober.space or not self.model.live(prober) \
                or not prober.has("receipt.write"):
            return
        answers = [self.as_(prober, "POST", "/v1/acks", {
            "request_id": self.rid(), "items": [{"item_id": item_id, "stage": "received"}]})
            for item_id in (target.item_id, MISSING)]
        shapes = [(a.status, a.code, _masked(a.json, item_id))
                  for a, item_id in zip(answers, (target.item_id, MISSING), strict=True)]
        check("P01", answers[0].status == 404 and shapes[0] == shapes[1],
              "a foreign item must answer exactly like a missing one",
              foreign=answers[0].json, missing=answers[1].json)


def _stable(answer: Any) -> Any:
    """What a replay must repeat: a success body whole; of an error envelope its code and
    details (the human message may be worded anew)."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return {"code": answer["error"].get("code"), "details": answer["error"].get("details")}
    return answer


def _ms(text: str) -> int:
    """An RFC 3339 time of the server as epoch milliseconds."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _masked(answer: Any, probed: str | None) -> Any:
    """An answer with the probed id replaced, so a foreign and a missing id compare equal when
    a server echoes the id it was given."""
    text = json.dumps(answer, sort_keys=True)
    return json.loads(text.replace(probed, "<id>")) if probed else answer


def _protocol(got: Any, expected: Any) -> Any:
    """``got`` restricted to the keys the kit expects (servers may add fields), with recipient
    sets compared as sets (sorted)."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return {key: (sorted(got[key]) if key == "recipient_ids" and isinstance(got[key], list)
                      else _protocol(got[key], expected[key]))
                for key in expected if key in got}
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        return [_protocol(g, e) for g, e in zip(got, expected, strict=True)]
    return got
