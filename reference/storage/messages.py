"""The send plan (claims the key and publishes the message with its body, recipients, feed item
and stable result at once) and the message reads."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import authority_cases, authority_params
from waypost.reference.storage.counter import sequence_exhausted
from waypost.reference.storage.plan import (
    GUARD_OK,
    SEQUENCE,
    CommitPlan,
    Row,
    SqlValue,
    Statement,
    guard_sql,
    guarded_sql,
    json_list,
    new_plan_id,
    outcome_sql,
    plan,
    stmt,
)
from waypost.reference.storage.references import referenceable
from waypost.reference.storage.rows import decode, only, select_list
from waypost.reference.storage.submissions import (
    BY_KEY,
    FOUND_COLUMNS,
    SubmissionRecord,
    found_from,
    key_params,
)


@dataclass(frozen=True)
class MessageSend:
    """Everything one send publishes: the key with its fingerprint, the ids (fresh, or those a
    reservation made before migration 0004 fixed), the recipients and the body."""

    request_id: str
    fingerprint: bytes
    submission_id: str
    message_id: str
    thread_id: str
    new_thread: bool
    feed_item_id: str
    #: the recipients; None means the space's default actor, resolved inside the plan
    recipient_ids: Sequence[str] | None
    in_reply_to: str | None
    kind: str
    subject: str
    body: str
    attachment_ids: Sequence[str]
    metadata: dict[str, Any] | None
    #: the ids are a reservation's (made before migration 0004), whose submission row exists
    resumed: bool = False


#: The key is another attempt's, or already final: nothing is written, the outcome reads it.
KEY_TAKEN = "KEY_TAKEN"


def send_message(principal: Principal, now: int, message: MessageSend) -> CommitPlan:
    """``message.send`` as one plan: claim the key, check authority, recipients, thread, reply
    and attachments, then publish the submission's stable result, the message with its body, its
    recipients and its feed item at once. A key reserved before migration 0004 (a pending
    ``submission_id`` given back here) is finished with its reserved ids; any other holder of the
    key refuses with :data:`KEY_TAKEN` and the outcome reads that holder back."""
    plan_id = new_plan_id()
    encoded = message.body.encode()
    p: dict[str, SqlValue] = {
        "plan": plan_id, **authority_params(principal, now, "message.send"),
        **key_params(principal, "message.send", message.request_id),
        "fingerprint": message.fingerprint, "submission_id": message.submission_id,
        "message_id": message.message_id, "thread_id": message.thread_id,
        "new_thread": int(message.new_thread), "feed_item_id": message.feed_item_id,
        "recipients": None if message.recipient_ids is None else json_list(
            message.recipient_ids), "in_reply_to": message.in_reply_to,
        "kind": message.kind, "subject": message.subject, "body": message.body,
        "body_sha256": hashlib.sha256(encoded).digest(), "body_size": len(encoded),
        "attachments": json_list(message.attachment_ids),
        "metadata": None if message.metadata is None else json.dumps(message.metadata),
    }
    writes, outcome = _send_sql(message.resumed, message.new_thread,
                                message.recipient_ids is not None, message.in_reply_to is not None,
                                bool(message.attachment_ids))
    return plan("send_message", plan_id, [stmt(sql, p) for sql in writes], stmt(outcome, p))


@functools.lru_cache(maxsize=64)
def _send_sql(resumed: bool, new_thread: bool, listed: bool, reply: bool,
              attachments: bool) -> tuple[tuple[str, ...], str]:
    """The SQL texts of a send plan of this shape, built once: its guard and writes (those that
    would write nothing, no new thread or no attachment, are left out), and its outcome read."""
    recipients = LISTED if listed else RECIPIENTS
    key = f"""INSERT INTO submissions (submission_id, space_id, producer_id, operation,
            request_id, fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id,
            result_status, committed_at)
        SELECT :submission_id, :space_id, :producer_id, :operation, :request_id, :fingerprint,
            'committed', :now, :message_id, :thread_id, :feed_item_id, 201, :now
        WHERE {GUARD_OK}
        ON CONFLICT (space_id, producer_id, operation, request_id) DO NOTHING"""
    if resumed:  # the reservation's row exists: it becomes the stable result
        key = f"""UPDATE submissions SET state = 'committed', result_status = 201,
                committed_at = :now
            WHERE submission_id = :submission_id AND state IN ('reserved', 'prepared')
            AND {GUARD_OK}"""
    thread = (f"""INSERT INTO threads (space_id, thread_id, created_at)
            SELECT :space_id, :thread_id, :now WHERE {GUARD_OK}""",
              f"""INSERT INTO thread_members (space_id, thread_id, actor_id, added_at)
            SELECT :space_id, :thread_id, actor_id, :now FROM (
                SELECT :producer_id AS actor_id UNION ALL
                SELECT actor_id FROM ({recipients}) WHERE actor_id <> :producer_id)
            WHERE {GUARD_OK}""")
    attached = f"""INSERT INTO message_attachments (space_id, message_id, position, blob_id)
        SELECT :space_id, :message_id, key, value FROM json_each(:attachments)
        WHERE {GUARD_OK}"""
    guarded = tuple(guarded_sql(sql) for sql in (
            key,
            *(thread if new_thread else ()),
            f"""INSERT INTO messages (space_id, message_id, submission_id, producer_id,
                    thread_id, in_reply_to, kind, subject, body_ref, body_sha256, body_size,
                    metadata_json, committed_at, body)
                SELECT :space_id, :message_id, :submission_id, :producer_id, :thread_id,
                    :in_reply_to, :kind, :subject, NULL, :body_sha256, :body_size, :metadata,
                    :now, :body
                WHERE {GUARD_OK}""",
            f"""INSERT INTO message_recipients (space_id, message_id, actor_id)
                SELECT :space_id, :message_id, actor_id FROM ({recipients})
                WHERE {GUARD_OK}""",
            *((attached,) if attachments else ()),
            f"""INSERT INTO feed_items (item_id, space_id, item_type, producer_id, thread_id,
                    resource_id, committed_at)
                SELECT :feed_item_id, :space_id, 'message', :producer_id, :thread_id,
                    :message_id, :now WHERE {GUARD_OK}""",
            f"""INSERT INTO feed_recipients (space_id, item_id, actor_id, sequence)
                SELECT :space_id, :feed_item_id, actor_id,
                    (SELECT sequence FROM feed_items WHERE item_id = :feed_item_id)
                FROM ({recipients}) WHERE {GUARD_OK}""",
        ))
    writes = (guard_sql(_send_cases(recipients, new_thread, reply, attachments)), *guarded)
    return writes, outcome_sql(f"g.verdict AS verdict, {FOUND_COLUMNS}",
                               f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id")


#: The send's recipients as listed.
LISTED = "SELECT value AS actor_id FROM json_each(:recipients)"
#: The send's recipients: the listed ones, or the space's default actor.
RECIPIENTS = ("SELECT value AS actor_id FROM json_each(COALESCE(:recipients, (SELECT"
              " json_array(default_actor_id) FROM spaces WHERE space_id = :space_id)))")


def _send_cases(recipients: str, new_thread: bool, reply: bool,
                attachments: bool) -> list[tuple[str, str]]:
    """The guard of :func:`send_message`, in the order the protocol checks them. The checks of
    an existing thread, of a reply and of attachments are left out of a send that has none
    (they could not fail there, and each costs the guard a search)."""
    member = ("EXISTS (SELECT 1 FROM thread_members m WHERE m.space_id = :space_id"
              " AND m.thread_id = :thread_id AND m.actor_id = {who})")
    thread = [
        ("NOT " + member.format(who=":producer_id"), "NOT_FOUND:thread_id"),
        (f"EXISTS ({recipients} WHERE NOT " + member.format(who="value") + ")",
         "FORBIDDEN:recipient_ids")]
    reply_case = [
        ("NOT EXISTS (SELECT 1 FROM messages r WHERE"
         " r.space_id = :space_id AND r.message_id = :in_reply_to AND r.thread_id = :thread_id"
         " AND EXISTS (SELECT 1 FROM token_scopes WHERE token_id = :token_id"
         "   AND scope = 'message.read')"
         " AND (r.producer_id = :producer_id OR EXISTS (SELECT 1 FROM message_recipients mr"
         "   WHERE mr.space_id = r.space_id AND mr.message_id = r.message_id"
         "   AND mr.actor_id = :producer_id) OR EXISTS (SELECT 1 FROM token_scopes"
         "   WHERE token_id = :token_id AND scope = 'space.observe')))",
         "NOT_FOUND:in_reply_to")]
    attachment_case = [
        ("EXISTS (SELECT 1 FROM json_each(:attachments) j WHERE NOT"
         f" {referenceable('j.value', ':producer_id')})", "REFERENCE_INVALID:attachment_ids")]
    return [
        ("EXISTS (SELECT 1 FROM submissions WHERE space_id = :space_id"
         " AND producer_id = :producer_id AND operation = :operation"
         " AND request_id = :request_id AND (submission_id <> :submission_id"
         " OR state NOT IN ('reserved', 'prepared')))", KEY_TAKEN),
        *authority_cases(),
        (f"EXISTS ({recipients} WHERE NOT EXISTS (SELECT 1 FROM actors a"
         " WHERE a.space_id = :space_id AND a.actor_id = value))", "NOT_FOUND:recipient_ids"),
        # the token's mode first: a token that may send to anyone reads no recipient list
        ("(SELECT recipients_mode FROM tokens WHERE token_id = :token_id) = 'listed'"
         f" AND EXISTS ({recipients} WHERE value NOT IN (SELECT recipient_actor_id"
         " FROM token_recipient_grants WHERE token_id = :token_id))", "FORBIDDEN:recipient_ids"),
        *(() if new_thread else thread),
        *(reply_case if reply else ()),
        *(attachment_case if attachments else ()),
        sequence_exhausted("1"),
    ]


def sent_from(rows: Sequence[Row]) -> tuple[str, SubmissionRecord | None, int | None]:
    """Decode the outcome of :func:`send_message`: the verdict, the key's submission after the
    plan (ours on ``ok``, the holder's on :data:`KEY_TAKEN`) and its feed sequence."""
    verdict, *row = only(rows)
    if row[0] is None:
        return str(verdict), None, None
    record, sequence = found_from(row)
    return str(verdict), record, sequence


def reserved_recipients_statement(submission_id: str) -> Statement:
    """The recipients a reservation made before migration 0004 fixed."""
    return stmt("SELECT actor_id FROM submission_recipients WHERE submission_id = :sid"
                " ORDER BY actor_id", {"sid": submission_id})


@dataclass(frozen=True)
class MessageRow:
    """A published message's columns with its feed item."""

    message_id: str
    thread_id: str
    in_reply_to: str | None
    producer_id: str
    kind: str
    subject: str
    body_ref: str | None
    body_sha256: bytes
    body_size: int
    metadata_json: str | None
    committed_at: int
    body: str | None
    item_id: str
    sequence: int


def message_from(row: Row) -> MessageRow:
    """Decode the first statement of :func:`message_statements`."""
    return decode(MessageRow, row, sequence=int)


def message_statements(space_id: str, message_id: str) -> list[Statement]:
    """The message row (with its feed item, see :func:`message_from`), its recipients, its
    attachments in order."""
    p: dict[str, SqlValue] = {"space_id": space_id, "message_id": message_id}
    columns = select_list(MessageRow, "m.", item_id="f.item_id", sequence=SEQUENCE)
    return [
        stmt(f"""SELECT {columns}
                FROM messages m
                JOIN feed_items f ON f.space_id = m.space_id AND f.item_type = 'message'
                    AND f.resource_id = m.message_id
                WHERE m.space_id = :space_id AND m.message_id = :message_id""", p),
        stmt("""SELECT actor_id FROM message_recipients
                WHERE space_id = :space_id AND message_id = :message_id ORDER BY actor_id""", p),
        stmt("""SELECT blob_id FROM message_attachments
                WHERE space_id = :space_id AND message_id = :message_id ORDER BY position""", p),
    ]


def thread_statements(space_id: str, thread_id: str, actor_ids: Sequence[str],
                      with_default: bool = False) -> Statement:
    """Which of ``actor_ids`` (and, ``with_default``, the space's default actor) are members of
    the thread (none if it does not exist)."""
    return stmt("""SELECT actor_id FROM thread_members WHERE space_id = :space_id
                   AND thread_id = :thread_id AND (actor_id IN (SELECT value FROM json_each(:ids))
                   OR (:with_default AND actor_id = (SELECT default_actor_id FROM spaces
                                                      WHERE space_id = :space_id)))""",
                {"space_id": space_id, "thread_id": thread_id, "ids": json_list(actor_ids),
                 "with_default": int(with_default)})


def actors_statement(space_id: str, actor_ids: Sequence[str]) -> Statement:
    """Which of ``actor_ids`` are actors of the space."""
    return stmt("""SELECT actor_id FROM actors WHERE space_id = :space_id
                   AND actor_id IN (SELECT value FROM json_each(:ids))""",
                {"space_id": space_id, "ids": json_list(actor_ids)})


def default_actor_statement(space_id: str) -> Statement:
    """The space's default recipient, decoded by :func:`default_actor_from`."""
    return stmt("SELECT default_actor_id FROM spaces WHERE space_id = :space_id",
                {"space_id": space_id})


def default_actor_from(rows: Sequence[Row]) -> str:
    """The one ``default_actor_id`` of :func:`default_actor_statement`."""
    return str(only(rows)[0])


@dataclass(frozen=True)
class ReplyRow:
    """What decides whether a message may be replied to: its thread, producer, recipients."""

    thread_id: str
    producer_id: str
    recipient_ids: tuple[str, ...]


def reply_statement(space_id: str, message_id: str) -> Statement:
    """The thread, producer and recipients of a message one replies to (see
    :func:`reply_from`)."""
    columns = select_list(ReplyRow, "m.", recipient_ids="""(SELECT json_group_array(actor_id)
                        FROM message_recipients r
                        WHERE r.space_id = m.space_id AND r.message_id = m.message_id)""")
    return stmt(f"""SELECT {columns}
                   FROM messages m WHERE m.space_id = :space_id AND m.message_id = :message_id""",
                {"space_id": space_id, "message_id": message_id})


def reply_from(row: Row) -> ReplyRow:
    """Decode :func:`reply_statement` (the recipients arrive as a JSON list)."""
    return decode(ReplyRow, row, recipient_ids=lambda text: tuple(json.loads(text)))
