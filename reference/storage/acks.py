"""The ACK commit plan: every receipt advance, its receipt feed item, the checkpoint and the
stable per-item result are written together or not at all (P05, P09, P10)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import authority_cases, authority_params
from waypost.reference.storage.counter import sequence_exhausted
from waypost.reference.storage.feed import FILTERED, VISIBLE, visibility_params
from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    SqlValue,
    guard,
    guarded,
    new_plan_id,
    plan,
)
from waypost.reference.storage.stages import ADVANCED
from waypost.reference.storage.submissions import SETTLED_CASE, state_read

_OTHER_CONSUMER = ("NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
                   " AND resource_id = :consumer_id)", "OTHER_CONSUMER")
_INVISIBLE_ITEM = (f"""EXISTS (SELECT 1 FROM json_each(:lines) j WHERE NOT EXISTS (
        SELECT 1 FROM feed_items f WHERE f.space_id = :space_id
        AND f.item_id = json_extract(j.value, '$[1]') AND f.item_type <> 'receipt'
        AND {VISIBLE} AND {FILTERED}))""", "NOT_FOUND:items")
_VIEW_CHANGED = ("NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id"
                 " AND consumer_id = :consumer_id AND view_revision = :view_revision)",
                 "CURSOR_STALE")


@dataclass(frozen=True)
class AckLine:
    """One item to acknowledge, with the ids its advance would use if it is one."""

    item_id: str
    stage: str
    receipt_id: str
    receipt_item_id: str


def acknowledge(principal: Principal, now: int, submission_id: str, lines: list[AckLine],
                checkpoint: int | None) -> CommitPlan:
    """Record prior stages, advance receipts where the stage is higher, append one receipt feed
    item per real advance (holding the stage of that moment), move the checkpoint forward."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {
        **visibility_params(principal),
        **authority_params(principal, now, "receipt.write"),
        "space_id": principal.space_id, "actor_id": principal.actor_id,
        "consumer_id": principal.consumer.consumer_id,
        "view_revision": principal.consumer.view_revision,
        "grant_fingerprint": principal.grant_fingerprint,
        "submission_id": submission_id, "checkpoint": checkpoint,
        "lines": json.dumps([[n, line.item_id, line.stage, line.receipt_id, line.receipt_item_id]
                             for n, line in enumerate(lines)]),
    }
    advanced = f"a.submission_id = :submission_id AND {ADVANCED}"
    writes = [guard(plan_id, [SETTLED_CASE, _OTHER_CONSUMER, *authority_cases(), _VIEW_CHANGED,
                              _INVISIBLE_ITEM, sequence_exhausted("json_array_length(:lines)")],
                    p)]
    writes += [guarded(plan_id, sql, p) for sql in (
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
    )]
    return plan("acknowledge", plan_id, writes, state_read(plan_id, p))
