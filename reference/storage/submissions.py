"""Submission plans (protocol.md §5): reserve a key, record the prepared object, look it up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import NOT_LIVE, authority_params
from waypost.reference.storage.driver import Driver
from waypost.reference.storage.plan import (
    GUARD_OK,
    SEQUENCE,
    CommitPlan,
    Row,
    SqlValue,
    Statement,
    Verdict,
    guard,
    guarded,
    new_plan_id,
    outcome_read,
    plan,
    stmt,
    verdict_read,
)
from waypost.reference.storage.rows import decode, only, select_list
from waypost.reference.storage.stages import ADVANCED

SETTLED = "SETTLED"

#: The submission is already final (committed or failed): the outcome carries its result.
SETTLED_CASE = ("NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
                " AND state IN ('reserved', 'prepared'))", SETTLED)

#: The submission holds no prepared object yet, so nothing can be committed from it.
NOT_PREPARED_CASE = ("NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
                     " AND state = 'prepared')", "NOT_READY")


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


SUBMISSION_COLUMNS = select_list(SubmissionRecord, "s.",
                                 checkpoint_sequence="CAST(s.checkpoint_sequence AS TEXT)")


def record_from(row: Sequence[SqlValue]) -> SubmissionRecord:
    """Decode :data:`SUBMISSION_COLUMNS` (the checkpoint arrives as decimal text)."""
    return decode(SubmissionRecord, row, checkpoint_sequence=int)


def found_from(row: Sequence[SqlValue]) -> tuple[SubmissionRecord, int | None]:
    """Decode :data:`SUBMISSION_COLUMNS` followed by the ``sequence`` of the key's feed item."""
    *columns, sequence = row
    return record_from(columns), None if sequence is None else int(sequence)


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


BY_KEY = """LEFT JOIN submissions s ON s.space_id = :space_id AND s.producer_id = :producer_id
    AND s.operation = :operation AND s.request_id = :request_id"""


async def reserve(driver: Driver, principal: Principal, now: int, operation: str,
                  request_id: str, fingerprint: bytes, submission_id: str, resource_id: str,
                  thread_id: str | None = None, feed_item_id: str | None = None,
                  object_ref: str | None = None, blob_id: str | None = None) -> Reservation:
    """Reserve (space, producer, operation, request_id), fixing the fingerprint and the reserved
    ids; an existing reservation is read back, unchanged."""
    rows = await driver.run(reserve_plan(
        principal, now, operation, request_id, fingerprint, submission_id, resource_id,
        thread_id, feed_item_id, object_ref, blob_id))
    return reservation_from(rows, submission_id)


def reserve_plan(principal: Principal, now: int, operation: str, request_id: str,
                 fingerprint: bytes, submission_id: str, resource_id: str,
                 thread_id: str | None = None, feed_item_id: str | None = None,
                 object_ref: str | None = None, blob_id: str | None = None) -> CommitPlan:
    """The plan of :func:`reserve`."""
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {
        **authority_params(principal, now, operation), **key_params(principal, operation,
                                                                    request_id),
        "submission_id": submission_id, "fingerprint": fingerprint, "now": now,
        "resource_id": resource_id, "thread_id": thread_id, "feed_item_id": feed_item_id,
        "object_ref": object_ref, "blob_id": blob_id}
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
    ]
    outcome = outcome_read(plan_id, f"g.verdict AS verdict, {FOUND_COLUMNS}",
                           f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id", params)
    return plan("reserve", plan_id, writes, outcome)


def reservation_from(rows: Sequence[Row], submission_id: str) -> Reservation:
    """Decode a reservation's outcome read (``submission_id`` is the one it proposed)."""
    verdict, *row = only(rows)
    if row[0] is None:  # refused before any row was written: the key's columns are all NULL
        return Reservation(str(verdict), None, False)
    record, sequence = found_from(row)
    return Reservation(str(verdict), record, record.submission_id == submission_id, sequence)


def state_read(plan_id: str, params: Mapping[str, SqlValue]) -> Statement:
    """The outcome read of a plan about ``:submission_id``: the verdict and the submission's
    state after the plan (decoded by :func:`verdict_from`)."""
    return verdict_read(plan_id, Verdict, "JOIN submissions s ON s.submission_id = :submission_id",
                        params, state="s.state")


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
    return plan("record_failure", plan_id, writes, state_read(plan_id, params))


FOUND_COLUMNS = f"{SUBMISSION_COLUMNS},\n    {SEQUENCE} AS sequence"


def lookup_statement(principal: Principal, operation: str, request_id: str) -> Statement:
    """The submission of one key, with the feed sequence of its item if any (decoded by
    :func:`found_from`)."""
    return stmt(f"""
        SELECT {FOUND_COLUMNS}
        FROM submissions s LEFT JOIN feed_items f ON f.item_id = s.feed_item_id
        WHERE s.space_id = :space_id AND s.producer_id = :producer_id
          AND s.operation = :operation AND s.request_id = :request_id""",
        key_params(principal, operation, request_id))


@dataclass(frozen=True)
class AckLine:
    """One item of a committed ACK as recorded: the stage and version it has after the ACK."""

    item_id: str
    stage: str
    receipt_version: int
    changed: bool


def ack_items_statement(submission_id: str) -> Statement:
    """Per-item ACK results as recorded at commit, decoded by :func:`ack_line_from`."""
    columns = select_list(
        AckLine, stage=f"CASE WHEN {ADVANCED} THEN requested_stage ELSE prior_stage END",
        receipt_version=f"CASE WHEN {ADVANCED} THEN prior_version + 1 ELSE prior_version END",
        changed=ADVANCED)
    return stmt(f"""
        SELECT {columns}
        FROM submission_ack_items WHERE submission_id = :sid ORDER BY position""",
        {"sid": submission_id})


def ack_line_from(row: Row) -> AckLine:
    """Decode a row of :func:`ack_items_statement`."""
    return decode(AckLine, row, receipt_version=int, changed=bool)
