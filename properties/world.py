"""Commands of the kit: each performs real HTTP requests, compares every answer with the
model's prediction, and updates the model. Commands take only concrete, JSON-able arguments
(handles of tokens, indexes of messages, items and cursors), so a replay file that lists them
reruns the same requests deterministically."""

from __future__ import annotations

import itertools
from typing import Any

from waypost.properties import fingerprints
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
    message_item_json,
)
from waypost.properties.violations import check

FULL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write",
               "event.subscribe"]
SPACE_ACTORS = {"A": ("a0", "a1", "a2"), "B": ("b0",)}
MISSING = "zz-missing"


class World:
    """One example's spaces, the model of them, and the session that reaches the server."""

    def __init__(self, session: Session, prefix: str) -> None:
        self.session = session
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
        getattr(self, f"do_{name}")(**args)

    def expect_refusal(self, answer: Answer, allowed: set[str], pid: str, what: str) -> None:
        check(pid, answer.status >= 400 and answer.code in allowed,
              f"{what}: expected one of {sorted(allowed)}, got {answer.status} {answer.code}",
              answer=answer.json)

    # ----- provisioning ----------------------------------------------------------------------

    def do_setup(self) -> None:
        """Two spaces: A (a0 default, a1, a2) and B (b0); an inbox and a full token each."""
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

    def do_provision(self, space_name: str, actor: str, view: str,
                     filter: dict[str, list[str]], scopes: list[str],
                     recipients: list[str] | None) -> None:
        """A new consumer of ``actor`` with ``view`` and ``filter``, and a token for it."""
        space = self.space_ids[space_name]
        consumer_id = f"c{len(self.model.consumers)}"
        body: dict[str, Any] = {"request_id": self.rid(), "consumer_id": consumer_id,
                                "actor_id": actor, "view": view}
        if filter:
            body["filter"] = filter
        created = self.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", body)
        check("P08", created.get("view_revision") == 1, "a new consumer starts at view "
              "revision 1", answer=created)
        self.model.consumers[(space, consumer_id)] = Consumer(
            consumer_id, space, actor, view, 1, {k: frozenset(v) for k, v in filter.items()})
        self.issue(space, actor, consumer_id, scopes, recipients)

    def issue(self, space: str, actor: str, consumer_id: str, scopes: list[str],
              recipients: list[str] | None) -> Token:
        grant = {"mode": "any"} if recipients is None else {"mode": "listed",
                                                             "actor_ids": recipients}
        issued = self.admin_ok("POST", f"/admin/v1/spaces/{space}/tokens", {
            "request_id": self.rid(), "actor_id": actor, "consumer_id": consumer_id,
            "scopes": scopes, "recipients": grant, "collections": [], "blob_references": []})
        expected = fingerprints.grant_fingerprint(scopes, grant, [], [])
        check("P04", issued.get("grant_fingerprint") == expected,
              "grant fingerprint differs from SHA-256(JCS(normalised grants))",
              answer=issued, expected=expected)
        handle = f"t{len(self.model.tokens)}"
        token = Token(handle, issued["token_id"], issued["token"], space, actor, consumer_id,
                      frozenset(scopes), recipients is None, frozenset(recipients or ()),
                      expected)
        self.model.tokens[handle] = token
        return token

    def do_rotate(self, token: str) -> None:
        """A second token with identical grants: same fingerprint, cursors stay valid (P07)."""
        old = self.token(token)
        self.issue(old.space, old.actor_id, old.consumer_id, sorted(old.scopes),
                   None if old.recipients_any else sorted(old.recipient_ids))

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
        changed = self.admin_ok(
            "POST", f"/admin/v1/spaces/{consumer.space}/consumers/{consumer.consumer_id}/view",
            body)
        consumer.view_revision += 1
        consumer.view = view
        consumer.filter = {k: frozenset(v) for k, v in filter.items()}
        check("P07", changed.get("view_revision") == consumer.view_revision,
              "a view change must bump the view revision", answer=changed)

    # ----- messages --------------------------------------------------------------------------

    def send_body(self, token: Token, recipients: list[str] | None, thread: Any,
                  reply: int | None, kind: str, subject: str, text: str,
                  options: list[str] | None) -> dict[str, Any]:
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
        return body

    def do_send(self, token: str, recipients: list[str] | None, thread: Any, reply: int | None,
                kind: str, subject: str, text: str, options: list[str] | None) -> None:
        """``message.send``: success publishes exactly one message item; refusals nothing."""
        sender = self.token(token)
        body = self.send_body(sender, recipients, thread, reply, kind, subject, text, options)
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
        if not check("P05", set(result) == {"message_id", "thread_id", "feed_item_id",
                                            "sequence", "committed_at"},
                     "send answer shape", answer=result):
            return
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
        bound = [i.sequence for items in self.model.items.values() for i in items if i.sequence]
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
                 "attachment_ids": [], "metadata": body.get("metadata"),
                 "committed_at": result["committed_at"], "feed_item_id": result["feed_item_id"],
                 "sequence": result["sequence"]}
        self.model.messages[result["message_id"]] = Message(
            result["message_id"], space, thread_id, sender.actor_id, recipients, shown, item)
        self.message_order.append(result["message_id"])

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
            self.expect_refusal(answer, {"NOT_FOUND"}, pid, "an invisible message")
            missing = self.as_(reader, "GET", f"/v1/messages/{MISSING}")
            check(pid, (answer.status, answer.json) == (missing.status, missing.json),
                  "an invisible or foreign message must answer exactly like a missing one",
                  foreign=answer.json, missing=missing.json)
            return
        if not reader.has("message.read"):
            self.expect_refusal(answer, {"FORBIDDEN"}, "P02", "read without message.read")
            return
        check("P05", answer.status == 200 and answer.json == message.shown,
              "the message must read back exactly as published", answer=answer.json,
              expected=message.shown)

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
        want = expected[:limit]
        anomalies = analyse([self.expected_id(item, got) for item, got in
                             zip(want, shown + [None] * len(want), strict=False)],
                            [got["item_id"] for got in shown],
                            [int(got["sequence"]) for got in shown])
        types = {**{i.item_id: i.type for i in want if i.item_id},
                 **{got["item_id"]: got.get("type") for got in shown}}
        involved = {types.get(item_id) for a in anomalies for item_id in a.item_ids}
        pid = ("P09" if involved == {"receipt"}
               else "P08" if all(a.kind == "unexpected" for a in anomalies) else "P06")
        if not check(pid, not anomalies, "the page differs from the consumer's visible items",
                     anomalies=[a.as_json() for a in anomalies], position=position,
                     limit=limit):
            return position
        for item, got in zip(want, shown, strict=True):
            self.compare_item(item, got)
        check("P06", page["has_more"] == (len(expected) > limit), "has_more is wrong",
              has_more=page["has_more"], visible=len(expected), limit=limit)
        end = int(shown[-1]["sequence"]) if shown else position
        consumer = self.model.consumer_of(reader)
        self.model.cursors.append(HeldCursor(page["next_cursor"], reader.space, reader.actor_id,
                                             reader.consumer_id, consumer.view_revision,
                                             reader.grant_fingerprint, end))
        return end

    def expected_id(self, item: Item, got: dict[str, Any] | None) -> str:
        """The id the model expects at this place; an unbound receipt takes the id shown if
        the item shown is that receipt."""
        if item.item_id is not None:
            return item.item_id
        if got is not None and self.matches_receipt(item, got):
            return str(got["item_id"])
        return f"<receipt v{item.receipt['receipt_version'] if item.receipt else '?'} not shown>"

    def matches_receipt(self, item: Item, got: dict[str, Any]) -> bool:
        receipt = got.get("receipt")
        return (got.get("type") == "receipt" and isinstance(receipt, dict)
                and item.receipt is not None
                and all(receipt.get(k) == v for k, v in item.receipt.items()))

    def compare_item(self, item: Item, got: dict[str, Any]) -> None:
        if item.shown is None:  # first sight of a receipt item: learn its server values
            bound = [i.sequence for i in self.model.items[item.space]
                     if i.sequence is not None and i.index < item.index]
            check("P06", all(int(got["sequence"]) > s for s in bound),
                  "a receipt item must come after everything committed before it",
                  item=got)
            item.item_id, item.sequence = got["item_id"], int(got["sequence"])
            item.shown = got
            check("P09", got["producer_id"] == item.producer_id
                  and got["recipient_ids"] == list(item.recipient_ids)
                  and got["thread_id"] == item.thread_id, "receipt item routing", item=got)
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

    def do_ack(self, token: str, lines: list[list[Any]], cursor: Any) -> None:
        """An ACK of 0–20 distinct items and an optional checkpoint: all or nothing (P09, P10)."""
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
        if not check("P10", answer.status == 200 and answer.json == expected,
                     "the ACK answer differs from the model", answer=answer.json,
                     expected=expected):
            return
        self.model.submissions[(acker.space, acker.actor_id, "receipt.ack",
                                body["request_id"])] = Recorded(
            "receipt.ack", acker.space, acker.actor_id, acker.handle, body,
            fingerprints.ack_fingerprint(body, position), 200, expected)

    # ----- submissions -----------------------------------------------------------------------

    def recorded(self, index: int) -> Recorded:
        return list(self.model.submissions.values())[index]

    def path_of(self, operation: str) -> str:
        return {"message.send": "/v1/messages", "receipt.ack": "/v1/acks"}[operation]

    def do_retry(self, submission: int) -> None:
        """The same request again: the identical stable result, marked replayed (P03)."""
        sub = self.recorded(submission)
        sender = self.token(sub.token)
        answer = self.as_(sender, "POST", self.path_of(sub.operation), sub.body)
        if not self.model.live(sender):
            self.expect_refusal(answer, {"UNAUTHENTICATED"}, "P02", "retry with a dead token")
            return
        check("P03", (answer.status, answer.json) == (sub.status, sub.result),
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
        else:
            first = dict(sub.body["items"][0]) if sub.body["items"] else None
            if first is None:
                return
            first["stage"] = "processed" if first["stage"] == "received" else "received"
            altered["items"] = [first, *sub.body["items"][1:]]
        answer = self.as_(sender, "POST", self.path_of(sub.operation), altered)
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
        if not check("P03", answer.status == 200 and found.get("state") == "committed"
                     and found.get("result") == {"status": sub.status, "body": sub.result},
                     "the key must hold the committed stable result", answer=answer.json,
                     status=answer.status):
            return
        check("P04", found.get("fingerprint") == sub.fingerprint,
              "the recorded fingerprint is not SHA-256(JCS(normalised request))",
              answer=answer.json, expected=sub.fingerprint)

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
        shapes = [(a.status, a.code, _without_ids(a.json)) for a in answers]
        check("P01", answers[0].status == 404 and shapes[0] == shapes[1],
              "a foreign item must answer exactly like a missing one",
              foreign=answers[0].json, missing=answers[1].json)


def _without_ids(envelope: Any) -> Any:
    """An error envelope with echoed ids removed (they differ by construction)."""
    if not isinstance(envelope, dict) or "error" not in envelope:
        return envelope
    details = {k: v for k, v in envelope["error"].get("details", {}).items() if k != "item_id"}
    return {**envelope["error"], "details": details}
