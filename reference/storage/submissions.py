"""Submission plans (protocol.md §5): reserve a key, record the prepared object, look it up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import NOT_LIVE, authority_params
from waypost.reference.storage.control import json_list
from waypost.reference.storage.driver import Driver
from waypost.reference.storage.plan import (
    GUARD_OK,
    SEQUENCE,
    CommitPlan,
    Row,
    SqlValue,
    Statement,
    guard,
    guarded,
    new_plan_id,
    plan,
    stmt,
    verdict_read,
)

SETTLED = "SETTLED"

#: The submission is already final (committed or failed): the outcome carries its result.
SETTLED_CASE = ("NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
                " AND state IN ('reserved', 'prepared'))", SETTLED)

SUBMISSION_COLUMNS = """s.submission_id, s.fingerprint, s.state, s.resource_id, s.thread_id,
    s.feed_item_id, s.object_ref, s.object_sha256, s.object_size, s.result_status,
    s.committed_at, CAST(s.checkpoint_sequence AS TEXT) AS checkpoint_sequence, s.error_code,
    s.error_detail, s.blob_id, s.revision"""


@dataclass(frozen=True)
class SubmissionRecord:
    """A submission row: key facts fixed at reservation, then its phase and stable result."""

    submission_id: str
    fingerprint: bytes
    state: str
    resource_id: str
    thread_id: str | None
    feed_item_id: str | None
    object_ref: str | None
    object_sha256: bytes | None
    object_size: int | None
    result_status: int | None
    committed_at: int | None
    checkpoint_sequence: int | None
    error_code: str | None
    error_detail: str | None
    blob_id: str | None
    revision: int | None

    @property
    def pending(self) -> bool:
        return self.state in ("reserved", "prepared")


def record_from(row: Sequence[SqlValue]) -> SubmissionRecord:
    """Decode :data:`SUBMISSION_COLUMNS` (the checkpoint arrives as decimal text)."""
    record = SubmissionRecord(*row)  # type: ignore[arg-type]
    checkpoint: Any = record.checkpoint_sequence
    return record if checkpoint is None else replace(record, checkpoint_sequence=int(checkpoint))


@dataclass(frozen=True)
class Reservation:
    """What reserving a key found: our new row, or the row an earlier attempt left."""

    verdict: str
    record: SubmissionRecord | None
    created: bool
    #: the feed sequence of the row's item, if an earlier attempt already committed it
    sequence: int | None = None


def key_params(principal: Principal, operation: str, request_id: str) -> dict[str, SqlValue]:
    return {"space_id": principal.space_id, "producer_id": principal.actor_id,
            "operation": operation, "request_id": request_id}


_BY_KEY = """LEFT JOIN submissions s ON s.space_id = :space_id AND s.producer_id = :producer_id
    AND s.operation = :operation AND s.request_id = :request_id"""


async def reserve(driver: Driver, principal: Principal, now: int, operation: str,
                  request_id: str, fingerprint: bytes, submission_id: str, resource_id: str,
                  thread_id: str | None = None, feed_item_id: str | None = None,
                  object_ref: str | None = None, blob_id: str | None = None,
                  recipient_ids: Sequence[str] = ()) -> Reservation:
    """Reserve (space, producer, operation, request_id), fixing the fingerprint, the reserved ids
    and resolved defaults (the recipients); an existing reservation is read back, unchanged."""
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {
        **authority_params(principal, now, operation), **key_params(principal, operation,
                                                                    request_id),
        "submission_id": submission_id, "fingerprint": fingerprint, "now": now,
        "resource_id": resource_id, "thread_id": thread_id, "feed_item_id": feed_item_id,
        "object_ref": object_ref, "blob_id": blob_id, "recipients": json_list(recipient_ids)}
    writes = [
        guard(plan_id, [(NOT_LIVE, "UNAUTHENTICATED")], params),
        guarded(plan_id, f"""
            INSERT INTO submissions (submission_id, space_id, producer_id, operation, request_id,
                fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id, object_ref,
                blob_id)
            SELECT :submission_id, :space_id, :producer_id, :operation, :request_id,
                :fingerprint, 'reserved', :now, :resource_id, :thread_id, :feed_item_id,
                :object_ref, :blob_id
            WHERE {GUARD_OK}
            ON CONFLICT (space_id, producer_id, operation, request_id) DO NOTHING""", params),
        guarded(plan_id, f"""
            INSERT INTO submission_recipients (submission_id, space_id, actor_id)
            SELECT :submission_id, :space_id, value FROM json_each(:recipients)
            WHERE {GUARD_OK} AND EXISTS (SELECT 1 FROM submissions
                WHERE submission_id = :submission_id)""", params),
    ]
    outcome = verdict_read(plan_id, f"{SUBMISSION_COLUMNS}, {SEQUENCE}",
                           f"{_BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id", params)
    (verdict, *row, sequence), = await driver.run(plan("reserve", plan_id, writes, outcome))
    assert isinstance(verdict, str)
    record = record_from(row) if row[0] is not None else None
    return Reservation(verdict, record, record is not None and record.submission_id == submission_id,
                       None if sequence is None else int(sequence))


async def mark_prepared(driver: Driver, principal: Principal, now: int, submission_id: str,
                        sha256: bytes, size: int) -> str:
    """Record the verified facts of the prepared object; returns the submission's state after."""
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {**authority_params(principal, now, ""),
                                   "submission_id": submission_id, "sha256": sha256,
                                   "size": size, "now": now}
    writes = [
        guard(plan_id, [(NOT_LIVE, "UNAUTHENTICATED")], params),
        guarded(plan_id, f"""
            UPDATE submissions SET state = 'prepared', object_sha256 = :sha256,
                object_size = :size, prepared_at = :now
            WHERE submission_id = :submission_id AND state = 'reserved' AND {GUARD_OK}""",
            params),
    ]
    outcome = verdict_read(plan_id, "s.state",
                           "JOIN submissions s ON s.submission_id = :submission_id", params)
    (verdict, state), = await driver.run(plan("mark_prepared", plan_id, writes, outcome))
    if verdict != "ok":
        return str(verdict)
    return str(state)


def settle_on_verdict(plan_id: str, verdict: str, sets: str,
                      params: Mapping[str, SqlValue]) -> Statement:
    """The write that makes a guard's refusal ``verdict`` the key's stable result: ``sets``
    (e.g. ``state = 'failed', result_status = 410, error_code = …``) and the time it was settled,
    only if this plan's verdict is ``verdict``."""
    return stmt(f"""UPDATE submissions SET {sets}, committed_at = :now
        WHERE submission_id = :submission_id AND EXISTS (SELECT 1 FROM commit_guards
            WHERE plan_id = :plan AND verdict = '{verdict}')""", {**params, "plan": plan_id})


def record_failure(principal: Principal, now: int, submission_id: str, status: int, code: str,
                   detail: str) -> CommitPlan:
    """Record a business failure decided after reservation as the key's stable result."""
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {**authority_params(principal, now, ""),
                                   "submission_id": submission_id, "status": status,
                                   "code": code, "detail": detail}
    writes = [
        guard(plan_id, [SETTLED_CASE, (NOT_LIVE, "UNAUTHENTICATED")], params),
        guarded(plan_id, f"""
            UPDATE submissions SET state = 'failed', result_status = :status,
                error_code = :code, error_detail = :detail, committed_at = :now
            WHERE submission_id = :submission_id AND {GUARD_OK}""", params),
    ]
    outcome = verdict_read(plan_id, "s.state",
                           "JOIN submissions s ON s.submission_id = :submission_id", params)
    return plan("record_failure", plan_id, writes, outcome)


def lookup_statement(principal: Principal, operation: str, request_id: str) -> Statement:
    """The submission of one key, with the feed sequence of its item if any."""
    return stmt(f"""
        SELECT {SUBMISSION_COLUMNS}, {SEQUENCE}
        FROM submissions s LEFT JOIN feed_items f ON f.item_id = s.feed_item_id
        WHERE s.space_id = :space_id AND s.producer_id = :producer_id
          AND s.operation = :operation AND s.request_id = :request_id""",
        key_params(principal, operation, request_id))


def recipients_statement(submission_id: str) -> Statement:
    return stmt("""SELECT actor_id FROM submission_recipients WHERE submission_id = :sid
                   ORDER BY actor_id""", {"sid": submission_id})


@dataclass(frozen=True)
class AckLine:
    """One item of a committed ACK as recorded: the stage and version it has after the ACK."""

    item_id: str
    stage: str
    receipt_version: int
    changed: bool


def ack_items_statement(submission_id: str) -> Statement:
    """Per-item ACK results as recorded at commit, decoded by :func:`ack_line_from`."""
    return stmt(f"""
        SELECT item_id,
               CASE WHEN {ADVANCED} THEN requested_stage ELSE prior_stage END AS stage,
               CASE WHEN {ADVANCED} THEN prior_version + 1 ELSE prior_version END
                   AS receipt_version,
               {ADVANCED} AS changed
        FROM submission_ack_items WHERE submission_id = :sid ORDER BY position""",
        {"sid": submission_id})


def ack_line_from(row: Row) -> AckLine:
    """Decode a row of :func:`ack_items_statement`."""
    item_id, stage, version, changed = row
    return AckLine(item_id, stage, int(version), bool(changed))


def stage_rank(column: str) -> str:
    """none < received < processed, as an SQL expression."""
    return f"(CASE {column} WHEN 'processed' THEN 2 WHEN 'received' THEN 1 ELSE 0 END)"


ADVANCED = f"({stage_rank('requested_stage')} > {stage_rank('prior_stage')})"
