"""``message.send`` (one plan: the key, the message with its body, its feed item; the rules it
checks and the errors they answer are the plan's, ``storage/messages.py``) and the message read
(protocol.md §5, §8)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Protocol

from waypost.reference.domain import values
from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.errors import Forbidden, not_found
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.requests import SendMessage, parse_send
from waypost.reference.service import answers, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.wakeups import Route, route_keys
from waypost.reference.service.woken import publishing, wake_items
from waypost.reference.storage import messages as sql
from waypost.reference.storage.rows import texts
from waypost.reference.storage.rules import KEY_TAKEN, refusal
from waypost.reference.storage.submissions import decided_from

OPERATION = "message.send"


async def send(ctx: Context, principal: Principal, raw: Any) -> Outcome:
    """Publish a message with its recipients, feed item and stable result, or replay it: one
    plan, whose guard names the rule a refused send broke and whose outcome read tells the
    details (the first recipient or attachment at fault), or reads back the key's holder."""
    request = parse_send(raw, ctx.limits)
    if not principal.has(OPERATION):
        raise Forbidden("the token lacks the message.send scope", field="scope")
    fingerprint = digest(request.normalised)
    write = new_send(request, fingerprint)
    ctx.faults.hit("commit.before")
    plan = sql.send_message(principal, ctx.clock.now_ms(), write)
    route = None if request.recipient_ids is None else Route(
        "message", principal.actor_id, write.thread_id, None, tuple(request.recipient_ids))
    sent = decided_from(await publishing(
        ctx, principal.space_id, None if route is None else route_keys(principal.space_id, route),
        plan))
    ctx.faults.hit("commit.after")
    if sent.verdict not in ("ok", KEY_TAKEN):
        raise refusal(plan.rules, sent.verdict, sent.details)
    assert sent.record is not None
    if sent.verdict == "ok":
        if route is None:
            # to the space's default actor, whom the plan resolved: its route is read back
            await wake_items(ctx, principal.space_id, [write.feed_item_id])
        else:
            ctx.signal.committed(principal.space_id, [route])
        return await answers.stable_result(ctx, OPERATION, sent.record, sent.sequence)
    submissions.check_fingerprint(sent.record, fingerprint)
    return await submissions.replay(ctx, OPERATION, sent.record, sent.sequence)


def new_send(request: SendMessage, fingerprint: bytes) -> sql.MessageSend:
    """A first attempt: fresh ids for everything the send creates; the recipients as given
    (the space's default actor, resolved by the plan, when none are)."""
    thread_id = values.new_id("thr") if request.new_thread else request.thread_id
    assert thread_id is not None
    return _message(request, fingerprint, values.new_id("sub"), values.new_id("msg"), thread_id,
                    values.new_id("fi"), request.recipient_ids)


def _message(request: SendMessage, fingerprint: bytes, submission_id: str, message_id: str,
             thread_id: str, feed_item_id: str,
             recipients: Sequence[str] | None) -> sql.MessageSend:
    return sql.MessageSend(
        request.request_id, fingerprint, submission_id, message_id, thread_id,
        request.new_thread, feed_item_id, recipients, request.in_reply_to, request.kind,
        request.subject, canonical_json(request.body_document()).decode(),
        request.attachment_ids, request.metadata)


class StoredBody(Protocol):
    """A message's body as its row keeps it, with its verified facts."""

    @property
    def message_id(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def body_size(self) -> int: ...
    @property
    def body_sha256(self) -> bytes: ...


def verified_body(message: StoredBody) -> bytes:
    """The stored body's bytes, checked against the size and SHA-256 recorded at send."""
    raw = message.body.encode()
    if len(raw) != message.body_size or hashlib.sha256(raw).digest() != message.body_sha256:
        raise RuntimeError(f"stored body of {message.message_id} fails its verified facts")
    return raw


async def read_message(ctx: Context, principal: Principal, message_id: str) -> Outcome:
    """The full message, for its producer, its recipients, or ``space.observe`` — each with
    ``message.read``. Anything else, in any space, is the same ``404``."""
    mid = values.object_id(message_id, "message_id")
    rows, recipients, attachments = await ctx.driver.read(
        sql.message_statements(principal.space_id, mid))
    if not rows:
        raise not_found("message")
    message = sql.message_from(rows[0])
    recipient_ids = texts(recipients)
    if not (message.producer_id == principal.actor_id or principal.actor_id in recipient_ids
            or principal.has("space.observe")):
        raise not_found("message")
    if not principal.has("message.read"):
        raise Forbidden("the token lacks the message.read scope", field="scope")
    raw_body = verified_body(message)
    return Outcome(200, {
        "message_id": message.message_id, "thread_id": message.thread_id,
        "in_reply_to": message.in_reply_to, "producer_id": message.producer_id,
        "recipient_ids": recipient_ids, "kind": message.kind, "subject": message.subject,
        "body": json.loads(raw_body), "attachment_ids": texts(attachments),
        "metadata": None if message.metadata_json is None else json.loads(message.metadata_json),
        "committed_at": values.format_timestamp(message.committed_at),
        "feed_item_id": message.item_id, "sequence": values.sequence_text(message.sequence),
    })

