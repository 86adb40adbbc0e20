"""The ACK as one plan: it claims the key and writes every receipt advance, its receipt feed
item, the checkpoint and the stable per-item result together, or nothing (P05, P09, P10). Its
rules, and the errors they answer, are the plan's guard (``storage/rules.py``)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import authority_params, authority_rules
from waypost.reference.storage.counter import sequence_exhausted
from waypost.reference.storage.feed import FILTERED, VISIBLE, visibility_params
from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    SqlValue,
    guard_sql,
    guarded_sql,
    new_plan_id,
    outcome_sql,
    plan,
    stmt,
)
from waypost.reference.storage.rules import KEY_HELD, Rule, details_of, first
from waypost.reference.storage.stages import ADVANCED
from waypost.reference.storage.submissions import ACK_LINES, BY_KEY, OUTCOME_COLUMNS, key_params

OPERATION = "receipt.ack"
SCOPE = "receipt.write"


@dataclass(frozen=True)
class AckLine:
    """One item to acknowledge, with the ids its advance would use if it is one."""

    item_id: str
    stage: str
    receipt_id: str
    receipt_item_id: str


@dataclass(frozen=True)
class AckWrite:
    """Everything one ACK writes: its key with its fingerprint, a fresh submission id, its
    lines, the checkpoint it carries, and what the cursor's binding to the principal is
    (``""`` when it fits or there is none, else the verdict of :data:`ACK_RULES` it breaks)."""

    request_id: str
    fingerprint: bytes
    submission_id: str
    lines: list[AckLine]
    checkpoint: int | None
    binding: str


#: The cursor's binding (checked in Python: it is in the cursor's signed text) as rules, so
#: that they come after the key like every resource rule (a replay answers whatever the view).
CURSOR_OF_ANOTHER = Rule("CURSOR_OF_ANOTHER", ":binding = 'CURSOR_OF_ANOTHER'", None,
                         "CURSOR_INVALID", "cursor", "cursor is invalid")
CURSOR_OF_ANOTHER_VIEW = Rule("CURSOR_OF_ANOTHER_VIEW", ":binding = 'CURSOR_OF_ANOTHER_VIEW'",
                              None, "CURSOR_STALE", "cursor",
                              "cursor was minted for another view or grant")
#: The consumer's view moved on since the principal was read (WP-RCPT-9).
VIEW_CHANGED = "VIEW_CHANGED"


def _ack_rules() -> tuple[Rule, ...]:
    """The rules of :func:`acknowledge`, in the order the protocol checks them (§4.5, §8.6)."""
    items = "json_each(:lines) j"
    item = "json_extract(j.value, '$[1]')"
    visible = (f"EXISTS (SELECT 1 FROM feed_items f WHERE f.space_id = :space_id"
               f" AND f.item_id = {item} AND {VISIBLE} AND {FILTERED})")
    receipt = (f"EXISTS (SELECT 1 FROM feed_items f WHERE f.space_id = :space_id"
               f" AND f.item_id = {item} AND f.item_type = 'receipt')")
    told = f"json_object('field', 'items[' || j.key || '].item_id', 'item_id', {item})"
    return (
        *authority_rules(SCOPE),
        KEY_HELD,
        CURSOR_OF_ANOTHER,
        CURSOR_OF_ANOTHER_VIEW,
        Rule(VIEW_CHANGED, "NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id"
             " AND consumer_id = :consumer_id AND view_revision = :view_revision)", None,
             "CURSOR_STALE", "", "the consumer's view changed during the request; read again"),
        Rule("ITEM_NOT_FOUND", f"EXISTS (SELECT 1 FROM {items} WHERE NOT {visible})",
             first(items, f"NOT {visible}", told), "NOT_FOUND", "", "feed item not found"),
        Rule("ITEM_IS_RECEIPT", f"EXISTS (SELECT 1 FROM {items} WHERE {receipt})",
             first(items, receipt, told), "INVALID_REQUEST", "",
             "receipt items cannot be acknowledged"),
        sequence_exhausted("json_array_length(:lines)"),
    )


ACK_RULES = _ack_rules()


def acknowledge(principal: Principal, now: int, ack: AckWrite) -> CommitPlan:
    """Claim the key; record prior stages, advance receipts where the stage is higher, append
    one receipt feed item per real advance (holding the stage of that moment), move the
    checkpoint forward. A key another attempt holds (an ACK is one plan, so its holder is
    final) refuses with ``KEY_TAKEN``; the outcome read gives the key's submission (ours or the
    holder's) with its per-item lines (:data:`...submissions.ACK_LINES`)."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {
        "plan": plan_id, **visibility_params(principal),
        **authority_params(principal, now, SCOPE),
        **key_params(principal, OPERATION, ack.request_id),
        "fingerprint": ack.fingerprint, "actor_id": principal.actor_id,
        "view_revision": principal.consumer.view_revision,
        "grant_fingerprint": principal.grant_fingerprint,
        "submission_id": ack.submission_id, "checkpoint": ack.checkpoint,
        "binding": ack.binding,
        "lines": json.dumps([[n, line.item_id, line.stage, line.receipt_id, line.receipt_item_id]
                             for n, line in enumerate(ack.lines)]),
    }
    writes, outcome = _ack_sql()
    return plan("acknowledge", plan_id, [stmt(sql, p) for sql in writes], stmt(outcome, p),
                ACK_RULES)


@functools.cache
def _ack_sql() -> tuple[tuple[str, ...], str]:
    """The SQL texts of the ACK plan, built once."""
    rules = ACK_RULES
    advanced = f"a.submission_id = :submission_id AND {ADVANCED}"
    key = f"""INSERT INTO submissions (submission_id, space_id, producer_id, operation,
            request_id, fingerprint, state, reserved_at, resource_id)
        SELECT :submission_id, :space_id, :producer_id, :operation, :request_id, :fingerprint,
            'reserved', :now, :consumer_id
        WHERE {GUARD_OK}
        ON CONFLICT (space_id, producer_id, operation, request_id) DO NOTHING"""
    writes = tuple(guarded_sql(sql) for sql in (
        key,
        f"""INSERT INTO submission_ack_items (submission_id, position, item_id, requested_stage,
                prior_stage, prior_version, receipt_id, receipt_item_id)
            SELECT :submission_id, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'),
                json_extract(j.value, '$[2]'), COALESCE(r.stage, 'none'), COALESCE(r.version, 0),
                COALESCE(r.receipt_id, json_extract(j.value, '$[3]')),
                json_extract(j.value, '$[4]')
            FROM json_each(:lines) j
            LEFT JOIN receipts r ON r.space_id = :space_id AND r.consumer_id = :consumer_id
                AND r.subject_item_id = json_extract(j.value, '$[1]')
            WHERE {GUARD_OK}""",
        f"""INSERT INTO feed_items (item_id, space_id, item_type, producer_id, thread_id,
                resource_id, committed_at)
            SELECT a.receipt_item_id, :space_id, 'receipt', :actor_id, s.thread_id, a.receipt_id,
                :now
            FROM submission_ack_items a
            JOIN feed_items s ON s.space_id = :space_id AND s.item_id = a.item_id
            WHERE {advanced} AND {GUARD_OK}
            ORDER BY a.position""",
        f"""INSERT INTO feed_recipients (space_id, item_id, actor_id, sequence)
            SELECT :space_id, a.receipt_item_id, s.producer_id, r.sequence
            FROM submission_ack_items a
            JOIN feed_items s ON s.space_id = :space_id AND s.item_id = a.item_id
            JOIN feed_items r ON r.item_id = a.receipt_item_id
            WHERE {advanced} AND {GUARD_OK}""",
        f"""INSERT INTO feed_receipt_updates (space_id, item_id, receipt_id, receipt_version,
                subject_item_id, subject_resource_id, consumer_id, actor_id, stage, updated_at)
            SELECT :space_id, a.receipt_item_id, a.receipt_id, a.prior_version + 1, a.item_id,
                s.resource_id, :consumer_id, :actor_id, a.requested_stage, :now
            FROM submission_ack_items a
            JOIN feed_items s ON s.space_id = :space_id AND s.item_id = a.item_id
            WHERE {advanced} AND {GUARD_OK}""",
        f"""INSERT INTO receipts (space_id, receipt_id, consumer_id, subject_item_id, stage,
                version, updated_at)
            SELECT :space_id, a.receipt_id, :consumer_id, a.item_id, a.requested_stage,
                a.prior_version + 1, :now
            FROM submission_ack_items a WHERE {advanced} AND {GUARD_OK}
            ON CONFLICT (space_id, consumer_id, subject_item_id) DO UPDATE
            SET stage = excluded.stage, version = excluded.version,
                updated_at = excluded.updated_at""",
        f"""INSERT INTO consumer_checkpoints (space_id, consumer_id, view_revision,
                grant_fingerprint, sequence, updated_at)
            SELECT :space_id, :consumer_id, :view_revision, :grant_fingerprint,
                CAST(:checkpoint AS INTEGER), :now
            WHERE :checkpoint IS NOT NULL AND {GUARD_OK}
            ON CONFLICT (space_id, consumer_id, view_revision, grant_fingerprint) DO UPDATE
            SET sequence = excluded.sequence, updated_at = excluded.updated_at
            WHERE excluded.sequence > consumer_checkpoints.sequence""",
        f"""UPDATE submissions SET state = 'committed', result_status = 200, committed_at = :now,
                checkpoint_sequence = CASE WHEN :checkpoint IS NULL THEN NULL ELSE (
                    SELECT sequence FROM consumer_checkpoints WHERE space_id = :space_id
                    AND consumer_id = :consumer_id AND view_revision = :view_revision
                    AND grant_fingerprint = :grant_fingerprint) END
            WHERE submission_id = :submission_id AND {GUARD_OK}""",
    ))
    return (guard_sql(rules), *writes), outcome_sql(
        f"{OUTCOME_COLUMNS.format(details=details_of(rules))}, {ACK_LINES} AS lines",
        f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id")
