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
from waypost.reference.storage.authority import authority_params, authority_rules
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
from waypost.reference.storage.rows import decode, select_list
from waypost.reference.storage.rules import KEY_HELD, Rule, details_of
from waypost.reference.storage.submissions import BY_KEY, OUTCOME_COLUMNS, key_params


@dataclass(frozen=True)
class MessageSend:
    """Everything one send publishes: the key with its fingerprint, fresh ids, the recipients
    and the body."""

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


def send_message(principal: Principal, now: int, message: MessageSend) -> CommitPlan:
    """``message.send`` as one plan: claim the key, check authority, recipients, thread, reply
    and attachments, then publish the submission's stable result, the message with its body, its
    recipients and its feed item at once. A key another attempt holds (a send is one plan, so
    its holder is final) refuses with :data:`KEY_TAKEN` and the outcome reads that holder
    back."""
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
    rules, writes, outcome = _send_sql(message.new_thread, message.recipient_ids is not None,
                                       message.in_reply_to is not None,
                                       bool(message.attachment_ids))
    return plan("send_message", plan_id, [stmt(sql, p) for sql in writes], stmt(outcome, p),
                rules)


@functools.lru_cache(maxsize=64)
def _send_sql(new_thread: bool, listed: bool, reply: bool,
              attachments: bool) -> tuple[tuple[Rule, ...], tuple[str, ...], str]:
    """A send plan of this shape, built once: its rules, the SQL texts of its guard and writes
    (those that would write nothing, no new thread or no attachment, are left out), and its
    outcome read's."""
    recipients = LISTED if listed else RECIPIENTS
    key = f"""INSERT INTO submissions (submission_id, space_id, producer_id, operation,
            request_id, fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id,
            result_status, committed_at)
        SELECT :submission_id, :space_id, :producer_id, :operation, :request_id, :fingerprint,
            'committed', :now, :message_id, :thread_id, :feed_item_id, 201, :now
        WHERE {GUARD_OK}
        ON CONFLICT (space_id, producer_id, operation, request_id) DO NOTHING"""
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
                    thread_id, in_reply_to, kind, subject, body_sha256, body_size,
                    metadata_json, committed_at, body)
                SELECT :space_id, :message_id, :submission_id, :producer_id, :thread_id,
                    :in_reply_to, :kind, :subject, :body_sha256, :body_size, :metadata,
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
    rules = send_rules(recipients, new_thread, reply, attachments)
    return rules, (guard_sql(rules), *guarded), outcome_sql(
        OUTCOME_COLUMNS.format(details=details_of(rules)),
        f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id")


#: The send's recipients as listed.
LISTED = "SELECT value AS actor_id FROM json_each(:recipients)"
#: The send's recipients: the listed ones, or the space's default actor.
RECIPIENTS = ("SELECT value AS actor_id FROM json_each(COALESCE(:recipients, (SELECT"
              " json_array(default_actor_id) FROM spaces WHERE space_id = :space_id)))")


def _first(recipients: str, broken: str) -> str:
    """SQL: ``{"actor_id": …}`` of the first recipient (in order) for which ``broken`` holds."""
    return f"json_object('actor_id', ({recipients} WHERE {broken} ORDER BY key LIMIT 1))"


def send_rules(recipients: str, new_thread: bool, reply: bool,
               attachments: bool) -> tuple[Rule, ...]:
    """The rules of :func:`send_message`, in the order the protocol checks them (§4.5). Those
    of an existing thread, of a reply and of attachments are left out of a send that has none
    (they could not fail there, and each costs the guard a search)."""
    member = ("EXISTS (SELECT 1 FROM thread_members m WHERE m.space_id = :space_id"
              " AND m.thread_id = :thread_id AND m.actor_id = {who})")
    unknown = ("NOT EXISTS (SELECT 1 FROM actors a WHERE a.space_id = :space_id"
               " AND a.actor_id = value)")
    ungranted = "value NOT IN (SELECT recipient_actor_id FROM token_recipient_grants" \
                " WHERE token_id = :token_id)"
    outsider = "NOT " + member.format(who="value")
    unreferenceable = f"NOT {referenceable('j.value', ':producer_id')}"
    rules = [
        *authority_rules("message.send"),
        KEY_HELD,
        Rule("RECIPIENT_UNKNOWN", f"EXISTS ({recipients} WHERE {unknown})",
             _first(recipients, unknown), "NOT_FOUND", "recipient_ids",
             "recipient not found"),
        # the token's mode first: a token that may send to anyone reads no recipient list
        Rule("RECIPIENT_NOT_GRANTED",
             "(SELECT recipients_mode FROM tokens WHERE token_id = :token_id) = 'listed'"
             f" AND EXISTS ({recipients} WHERE {ungranted})",
             _first(recipients, ungranted), "FORBIDDEN", "recipient_ids",
             "the token may not send to this recipient"),
    ]
    if not new_thread:
        rules += [
            Rule("THREAD_NOT_FOUND", "NOT " + member.format(who=":producer_id"), None,
                 "NOT_FOUND", "thread.thread_id", "thread not found"),
            Rule("RECIPIENT_NOT_MEMBER", f"EXISTS ({recipients} WHERE {outsider})",
                 _first(recipients, outsider), "FORBIDDEN", "recipient_ids",
                 "recipient is not a member of the thread")]
    if reply:
        rules.append(Rule(
            "REPLY_NOT_FOUND",
            "NOT EXISTS (SELECT 1 FROM messages r WHERE"
            " r.space_id = :space_id AND r.message_id = :in_reply_to AND r.thread_id = :thread_id"
            " AND EXISTS (SELECT 1 FROM token_scopes WHERE token_id = :token_id"
            "   AND scope = 'message.read')"
            " AND (r.producer_id = :producer_id OR EXISTS (SELECT 1 FROM message_recipients mr"
            "   WHERE mr.space_id = r.space_id AND mr.message_id = r.message_id"
            "   AND mr.actor_id = :producer_id) OR EXISTS (SELECT 1 FROM token_scopes"
            "   WHERE token_id = :token_id AND scope = 'space.observe')))", None,
            "NOT_FOUND", "in_reply_to", "message not found"))
    if attachments:
        rules.append(Rule(
            "ATTACHMENT_INVALID",
            f"EXISTS (SELECT 1 FROM json_each(:attachments) j WHERE {unreferenceable})",
            "json_object('blob_id', (SELECT j.value FROM json_each(:attachments) j"
            f" WHERE {unreferenceable} ORDER BY j.key LIMIT 1))", "REFERENCE_INVALID",
            "attachment_ids", "attachments must be sealed blobs of this space that the "
            "producer owns or may reference"))
    rules.append(sequence_exhausted("1"))
    return tuple(rules)


@dataclass(frozen=True)
class MessageRow:
    """A published message's columns with its feed item."""

    message_id: str
    thread_id: str
    in_reply_to: str | None
    producer_id: str
    kind: str
    subject: str
    body_sha256: bytes
    body_size: int
    metadata_json: str | None
    committed_at: int
    body: str
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
