"""``message.send`` (one plan: the key, the message with its body, its feed item) and the message
read (protocol.md §5, §8)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Protocol

from waypost.reference.domain import values
from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.errors import Forbidden, NotFound, not_found
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.requests import SendMessage, parse_send
from waypost.reference.service import answers, blobs, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import messages as sql
from waypost.reference.storage import references
from waypost.reference.storage import submissions as submission_sql
from waypost.reference.storage.plan import Row
from waypost.reference.storage.rows import texts

OPERATION = "message.send"


Found = tuple[submission_sql.SubmissionRecord, int | None]


async def _preflight(ctx: Context, principal: Principal, request: SendMessage) -> Found | None:
    """Why the plan refused, as the first failing check with its details, from one read: the
    key's submission, the recipients (explicit, or the space's default), the thread's members,
    the replied-to message, the referenceable attachments. Returns the key's submission if an
    attempt holds it (then nothing else is checked), None if every check passes."""
    space_id, explicit = principal.space_id, request.recipient_ids
    statements = [submission_sql.lookup_statement(principal, OPERATION, request.request_id),
                  sql.default_actor_statement(space_id) if explicit is None
                  else sql.actors_statement(space_id, list(explicit))]
    if not request.new_thread:
        assert request.thread_id is not None
        statements.append(sql.thread_statements(space_id, request.thread_id, [
            principal.actor_id, *(explicit or ())], with_default=explicit is None))
        if request.in_reply_to is not None:
            statements.append(sql.reply_statement(space_id, request.in_reply_to))
    if request.attachment_ids:
        statements.append(references.referenceable_statement(principal, request.attachment_ids))
    results = iter(await ctx.driver.read(statements))
    found_rows = next(results)
    found = submission_sql.found_from(found_rows[0]) if found_rows else None
    if found is not None:
        return found
    recipients = _recipients(principal, explicit, next(results))
    if not request.new_thread:
        _check_thread(principal, request, recipients, next(results),
                      next(results) if request.in_reply_to is not None else None)
    if request.attachment_ids:
        blobs.check_referenceable_rows(next(results), request.attachment_ids, "attachment_ids",
                                       "attachments must be")
    return None


def _recipients(principal: Principal, explicit: Sequence[str] | None,
                rows: list[Row]) -> list[str]:
    """Check the recipients: each must exist; the token must be allowed to send to each."""
    if explicit is None:
        wanted = [sql.default_actor_from(rows)]
    else:
        wanted, known = list(explicit), set(texts(rows))
        for actor_id in wanted:
            if actor_id not in known:
                raise NotFound("recipient not found", field="recipient_ids", actor_id=actor_id)
    for actor_id in wanted:
        if not principal.grants.may_send_to(actor_id):
            raise Forbidden("the token may not send to this recipient", field="recipient_ids",
                            actor_id=actor_id)
    return wanted


def _check_thread(principal: Principal, request: SendMessage, recipients: list[str],
                  members: list[Row], replied: list[Row] | None) -> None:
    member_ids = set(texts(members))
    if principal.actor_id not in member_ids:
        raise NotFound("thread not found", field="thread.thread_id")
    for actor_id in recipients:
        if actor_id not in member_ids:
            raise Forbidden("recipient is not a member of the thread", field="recipient_ids",
                            actor_id=actor_id)
    if replied is not None:
        reply = sql.reply_from(replied[0]) if replied else None
        readable = reply is not None and reply.thread_id == request.thread_id and principal.has(
            "message.read") and (reply.producer_id == principal.actor_id
                                 or principal.has("space.observe")
                                 or principal.actor_id in reply.recipient_ids)
        if not readable:
            raise NotFound("message not found", field="in_reply_to")


async def send(ctx: Context, principal: Principal, raw: Any) -> Outcome:
    """Publish a message with its recipients, feed item and stable result, or replay it.

    The plan checks everything itself, so a first attempt goes straight to it; only when it
    refuses does the read of :func:`_preflight` run, to answer with the first failing check
    and its details (or to find the key an earlier attempt holds)."""
    request = parse_send(raw, ctx.limits)
    if not principal.has(OPERATION):
        raise Forbidden("the token lacks the message.send scope", field="scope")
    fingerprint = digest(request.normalised)
    message = _fresh(request, fingerprint)
    for _attempt in range(2):  # a first attempt; a reservation older than 0004, finished
        ctx.faults.hit("commit.before")
        verdict, record, sequence = sql.sent_from(await ctx.driver.run(
            sql.send_message(principal, ctx.clock.now_ms(), message)))
        ctx.faults.hit("commit.after")
        if verdict == "ok":
            assert record is not None
            ctx.signal.committed(principal.space_id)
            return await answers.stable_result(ctx, OPERATION, record, sequence)
        if verdict != sql.KEY_TAKEN and message.resumed:  # its checks were made back then
            raise submissions.refuse(verdict, "message")
        if verdict != sql.KEY_TAKEN:
            found = await _preflight(ctx, principal, request)  # raises the first failing check
            if found is None:  # the checks pass now: the state moved between plan and read
                raise submissions.refuse(verdict, "message")
            record, sequence = found
        assert record is not None
        held = await _held(ctx, request, fingerprint, record, sequence)
        if isinstance(held, Outcome):
            return held
        message = held
    # The reservation's ids were taken by another attempt meanwhile: it finishes the key.
    raise submissions.refuse("SUBMISSION_PENDING", "request_id")


def _fresh(request: SendMessage, fingerprint: bytes) -> sql.MessageSend:
    """A first attempt: fresh ids for everything the send creates; the recipients as given
    (the space's default actor, resolved by the plan, when none are)."""
    thread_id = values.new_id("thr") if request.new_thread else request.thread_id
    assert thread_id is not None
    return _message(request, fingerprint, values.new_id("sub"), values.new_id("msg"), thread_id,
                    values.new_id("fi"), request.recipient_ids)


async def _held(ctx: Context, request: SendMessage, fingerprint: bytes,
                record: submission_sql.SubmissionRecord,
                sequence: int | None) -> Outcome | sql.MessageSend:
    """The key is held: a different request is a conflict, a final one replays; a reservation
    made before migration 0004 (a send then took three plans) is finished with its ids."""
    submissions.check_fingerprint(record, fingerprint)
    if not record.pending:
        return await submissions.replay(ctx, OPERATION, record, sequence)
    assert record.thread_id is not None
    assert record.feed_item_id is not None
    (rows,) = await ctx.driver.read([sql.reserved_recipients_statement(record.submission_id)])
    return replace(_message(request, fingerprint, record.submission_id, record.resource_id,
                            record.thread_id, record.feed_item_id, texts(rows)), resumed=True)


def _message(request: SendMessage, fingerprint: bytes, submission_id: str, message_id: str,
             thread_id: str, feed_item_id: str,
             recipients: Sequence[str] | None) -> sql.MessageSend:
    return sql.MessageSend(
        request.request_id, fingerprint, submission_id, message_id, thread_id,
        request.new_thread, feed_item_id, recipients, request.in_reply_to, request.kind,
        request.subject, canonical_json(request.body_document()).decode(),
        request.attachment_ids, request.metadata)


class StoredBody(Protocol):
    """Where a message's body is kept: in its row (``body``) or, for a message stored before
    bodies moved into the row, in the blob store (``body_ref``); and its verified facts."""

    @property
    def message_id(self) -> str: ...
    @property
    def body(self) -> str | None: ...
    @property
    def body_ref(self) -> str | None: ...
    @property
    def body_size(self) -> int: ...
    @property
    def body_sha256(self) -> bytes: ...


async def verified_body(ctx: Context, message: StoredBody) -> bytes:
    """The stored body's bytes, checked against the size and SHA-256 recorded at send."""
    raw = message.body.encode() if message.body is not None \
        else await ctx.blobs.read(message.body_ref or "")
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
    raw_body = await verified_body(ctx, message)
    return Outcome(200, {
        "message_id": message.message_id, "thread_id": message.thread_id,
        "in_reply_to": message.in_reply_to, "producer_id": message.producer_id,
        "recipient_ids": recipient_ids, "kind": message.kind, "subject": message.subject,
        "body": json.loads(raw_body), "attachment_ids": texts(attachments),
        "metadata": None if message.metadata_json is None else json.loads(message.metadata_json),
        "committed_at": values.format_timestamp(message.committed_at),
        "feed_item_id": message.item_id, "sequence": values.sequence_text(message.sequence),
    })

