"""Submission plans (protocol.md §5): reserve a key, record the prepared object, look it up."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import TOKEN_DEAD, authority_params
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
    outcome_sql,
    plan,
    stmt,
    verdict_read,
    with_plan,
)
from waypost.reference.storage.rows import decode, only, select_list
from waypost.reference.storage.rules import Rule, details_of
from waypost.reference.storage.stages import ADVANCED

SETTLED = "SETTLED"

#: The submission is already final (committed or failed): the outcome carries its result.
ALREADY_SETTLED = Rule(
    SETTLED, "NOT EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id"
    " AND state IN ('reserved', 'prepared'))", None, "", "", "the key's stable result answers")


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
    #: what the outcome read tells of a broken rule of the operation's own
    details: dict[str, Any] = field(default_factory=dict)
    #: the rules the reservation's guard checked (:func:`...rules.refusal` of a refused one)
    rules: tuple[Rule, ...] = ()


#: An operation's own rules for its reservation, with the parameters they bind.
Checks = tuple[Sequence[Rule], Mapping[str, SqlValue]]


def key_params(principal: Principal, operation: str, request_id: str) -> dict[str, SqlValue]:
    return {"space_id": principal.space_id, "producer_id": principal.actor_id,
            "operation": operation, "request_id": request_id}


BY_KEY = """LEFT JOIN submissions s ON s.space_id = :space_id AND s.producer_id = :producer_id
    AND s.operation = :operation AND s.request_id = :request_id"""


async def reserve(driver: Driver, principal: Principal, now: int, operation: str,
                  request_id: str, fingerprint: bytes, submission_id: str, resource_id: str,
                  thread_id: str | None = None, feed_item_id: str | None = None,
                  object_ref: str | None = None, blob_id: str | None = None,
                  checks: Checks = ((), {})) -> Reservation:
    """Reserve (space, producer, operation, request_id), fixing the fingerprint and the reserved
    ids; an existing reservation is read back, unchanged. ``checks`` are the operation's own
    rules (after the token's) with the parameters they bind: the first broken one refuses,
    with what the outcome read tells of it."""
    own, facts = checks
    rules = (TOKEN_DEAD, *own)
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {
        "plan": plan_id, **facts, **authority_params(principal, now, operation),
        **key_params(principal, operation, request_id),
        "submission_id": submission_id, "fingerprint": fingerprint, "now": now,
        "resource_id": resource_id, "thread_id": thread_id, "feed_item_id": feed_item_id,
        "object_ref": object_ref, "blob_id": blob_id}
    writes = [
        guard(plan_id, rules, params),
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
    outcome = stmt(outcome_sql(OUTCOME_COLUMNS.format(details=details_of(own)),
                               f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id"),
                   params)
    decided = decided_from(await driver.run(plan("reserve", plan_id, writes, outcome, rules)))
    created = decided.record is not None and decided.record.submission_id == submission_id
    return Reservation(decided.verdict, decided.record, created, decided.sequence,
                       decided.details, rules)


def state_read(plan_id: str, params: Mapping[str, SqlValue]) -> Statement:
    """The outcome read of a plan about ``:submission_id``: the verdict and the submission's
    state after the plan (decoded by :func:`verdict_from`)."""
    return verdict_read(plan_id, Verdict, "JOIN submissions s ON s.submission_id = :submission_id",
                        params, state="s.state")


def record_read(plan_id: str, params: Mapping[str, SqlValue]) -> Statement:
    """The outcome read of a plan about ``:submission_id`` that answers from it: the verdict
    and the submission after the plan (decoded by :func:`decided_from`, no details)."""
    return stmt(_RECORD_READ, with_plan(params, plan_id))


def settle_on_verdict(plan_id: str, verdict: str, sets: str,
                      params: Mapping[str, SqlValue]) -> Statement:
    """The write that makes a guard's refusal ``verdict`` the key's stable result: ``sets``
    (e.g. ``state = 'failed', result_status = 410, error_code = …``) and the time it was settled,
    only if this plan's verdict is ``verdict``."""
    return stmt(f"""UPDATE submissions SET {sets}, committed_at = :now
        WHERE submission_id = :submission_id AND EXISTS (SELECT 1 FROM commit_guards
            WHERE plan_id = :plan AND verdict = '{verdict}')""", {**params, "plan": plan_id})


#: A failure can be recorded while the key is pending and the token live.
RECORD_FAILURE_RULES = (ALREADY_SETTLED, TOKEN_DEAD)


def record_failure(principal: Principal, now: int, submission_id: str, status: int, code: str,
                   detail: str) -> CommitPlan:
    """Record a business failure decided after reservation as the key's stable result."""
    plan_id = new_plan_id()
    params: dict[str, SqlValue] = {**authority_params(principal, now, ""),
                                   "submission_id": submission_id, "status": status,
                                   "code": code, "detail": detail}
    writes = [
        guard(plan_id, RECORD_FAILURE_RULES, params),
        guarded(plan_id, f"""
            UPDATE submissions SET state = 'failed', result_status = :status,
                error_code = :code, error_detail = :detail, committed_at = :now
            WHERE submission_id = :submission_id AND {GUARD_OK}""", params),
    ]
    return plan("record_failure", plan_id, writes, state_read(plan_id, params),
                RECORD_FAILURE_RULES)


FOUND_COLUMNS = f"{SUBMISSION_COLUMNS},\n    {SEQUENCE} AS sequence"


#: The outcome columns of a one-plan operation: verdict, details, then the key's submission.
OUTCOME_COLUMNS = f"g.verdict AS verdict, {{details}}, {FOUND_COLUMNS}"
_RECORD_READ = outcome_sql(OUTCOME_COLUMNS.format(details="NULL AS details"),
                           "JOIN submissions s ON s.submission_id = :submission_id\n"
                           "    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id")


class Decided(NamedTuple):
    """The outcome of a one-plan operation: the verdict, what the outcome read tells of a breach
    (the rule's details), the key's submission after the plan (ours on ``ok``, the holder's on
    :data:`KEY_TAKEN`), its feed sequence, and what else the plan's outcome read chose to
    carry (columns after the submission's)."""

    verdict: str
    details: dict[str, Any]
    record: SubmissionRecord | None
    sequence: int | None
    extra: tuple[Any, ...]


def decided_from(rows: Sequence[Row], extra: int = 0) -> Decided:
    """Decode an outcome read of :data:`OUTCOME_COLUMNS` followed by ``extra`` columns."""
    verdict, details, *row = only(rows)
    told = json.loads(details) if details is not None else {}
    found, tail = (row[:len(row) - extra], tuple(row[len(row) - extra:])) if extra else (row, ())
    if found[0] is None:
        return Decided(str(verdict), told, None, None, tail)
    record, sequence = found_from(found)
    return Decided(str(verdict), told, record, sequence, tail)


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


#: SQL: a committed ACK's per-item results as recorded at commit, for the submission ``s``, as
#: one JSON array of ``[position, item_id, stage, receipt_version, changed]`` (decoded by
#: :func:`ack_lines_from`): one value, so that an outcome read can carry it.
ACK_LINES = f"""(SELECT json_group_array(json_array(position, item_id,
        CASE WHEN {ADVANCED} THEN requested_stage ELSE prior_stage END,
        CASE WHEN {ADVANCED} THEN prior_version + 1 ELSE prior_version END,
        CASE WHEN {ADVANCED} THEN 1 ELSE 0 END))
    FROM submission_ack_items WHERE submission_id = s.submission_id)"""


def ack_items_statement(submission_id: str) -> Statement:
    """A committed ACK's :data:`ACK_LINES`, decoded by :func:`ack_lines_from`."""
    return stmt(f"SELECT {ACK_LINES} AS lines FROM submissions s WHERE s.submission_id = :sid",
                {"sid": submission_id})


def ack_lines_from(lines: str | None) -> list[AckLine]:
    """Decode :data:`ACK_LINES`, in the ACK's order."""
    return [AckLine(str(item_id), str(stage), int(version), bool(changed))
            for _, item_id, stage, version, changed in sorted(json.loads(lines or "[]"))]
