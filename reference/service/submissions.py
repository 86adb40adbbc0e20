"""Stable results of idempotent submissions: replay, conflict, resume, and the lookup route."""

from __future__ import annotations

from waypost.reference.domain import values
from waypost.reference.domain.errors import IdempotencyConflict, from_code, not_found
from waypost.reference.domain.principal import Principal
from waypost.reference.service import answers
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import submissions as sql
from waypost.reference.storage.rules import refusal


async def find(ctx: Context, principal: Principal, operation: str,
               request_id: str) -> tuple[sql.SubmissionRecord, int | None] | None:
    """The submission of the caller's own key, with its feed sequence, if any."""
    (rows,) = await ctx.driver.read([sql.lookup_statement(principal, operation, request_id)])
    if not rows:
        return None
    return sql.found_from(rows[0])


def reserved(reservation: sql.Reservation) -> tuple[sql.SubmissionRecord, int | None]:
    """The submission a reservation found or made (a concurrent attempt may have committed it
    meanwhile), with its feed sequence; a refused reservation raises the error of the rule it
    broke."""
    if reservation.verdict != "ok":
        raise refusal(reservation.rules, reservation.verdict, reservation.details)
    assert reservation.record is not None
    return reservation.record, reservation.sequence


def check_fingerprint(record: sql.SubmissionRecord, fingerprint: bytes) -> None:
    """Same key, different request: ``409 IDEMPOTENCY_CONFLICT``, nothing changes."""
    if record.fingerprint != fingerprint:
        raise IdempotencyConflict("request_id was used for a different request",
                                  field="request_id")


async def replay(ctx: Context, operation: str, record: sql.SubmissionRecord,
                 sequence: int | None) -> Outcome:
    """The stored result again, marked ``Waypost-Replayed: true`` (errors too)."""
    outcome = await answers.stable_result(ctx, operation, record, sequence)
    if outcome.status >= 400:
        error = from_code(outcome.body["error"]["code"], outcome.body["error"]["message"],
                          outcome.body["error"]["details"])
        error.replayed = True
        raise error
    outcome.replayed = True
    return outcome


async def lookup(ctx: Context, principal: Principal, operation: str, request_id: str) -> Outcome:
    """``GET /v1/submissions/{operation}/{request_id}``: the caller's own key only."""
    if operation not in answers.OPERATIONS:
        raise not_found("submission")
    rid = values.request_id(request_id)
    found = await find(ctx, principal, operation, rid)
    if found is None:
        raise not_found("submission")
    record, sequence = found
    result = None
    if not record.pending:
        outcome = await answers.stable_result(ctx, operation, record, sequence)
        result = {"status": outcome.status, "body": outcome.body}
    return Outcome(200, {"operation": operation, "request_id": rid,
                         "state": "pending" if record.pending else record.state,
                         "fingerprint": record.fingerprint.hex(), "result": result})
