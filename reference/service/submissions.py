"""Stable results of idempotent submissions: replay, conflict, resume, and the lookup route."""

from __future__ import annotations

import json
from typing import Any

from waypost.adapters.sql import submissions as sql
from waypost.reference import values
from waypost.reference.errors import (
    IdempotencyConflict,
    Unauthenticated,
    WaypostError,
    from_code,
    not_found,
)
from waypost.reference.principal import Principal
from waypost.reference.service.context import Context, Outcome

#: How a recorded failure reads, in its first answer and in every replay alike.
RECORDED_MESSAGES = {
    "REVISION_CONFLICT": "expected_revision is not the collection's head",
    "UPLOAD_EXPIRED": "the upload expired before it was sealed",
    "INVALID_REQUEST": "the input is invalid on the collection's head",
}

OPERATIONS = ("message.send", "receipt.ack", "blob.prepare", "blob.commit", "memory.publish")


async def find(ctx: Context, principal: Principal, operation: str,
               request_id: str) -> tuple[sql.SubmissionRecord, int | None] | None:
    """The submission of the caller's own key, with its feed sequence, if any."""
    (rows,) = await ctx.driver.read([sql.lookup_statement(principal, operation, request_id)])
    if not rows:
        return None
    *columns, sequence = rows[0]
    return sql.record_from(columns), None if sequence is None else int(sequence)


def reserved(reservation: sql.Reservation) -> tuple[sql.SubmissionRecord, int | None]:
    """The submission a reservation found or made (a concurrent attempt may have committed it
    meanwhile), with its feed sequence; a refused reservation raises its error."""
    if reservation.verdict != "ok":
        raise refuse(reservation.verdict)
    assert reservation.record is not None
    return reservation.record, reservation.sequence


def check_fingerprint(record: sql.SubmissionRecord, fingerprint: bytes) -> None:
    """Same key, different request: ``409 IDEMPOTENCY_CONFLICT``, nothing changes."""
    if record.fingerprint != fingerprint:
        raise IdempotencyConflict("request_id was used for a different request",
                                  field="request_id")


async def stable_result(ctx: Context, operation: str, record: sql.SubmissionRecord,
                        sequence: int | None) -> Outcome:
    """Rebuild a final submission's original answer from its fixed columns and rows."""
    if record.state == "failed":
        assert record.error_code is not None
        assert record.result_status is not None
        error = from_code(record.error_code, RECORDED_MESSAGES.get(
            record.error_code, "the recorded result of this request"),
                          json.loads(record.error_detail or "{}"))
        return Outcome(record.result_status, error.envelope())
    assert record.result_status is not None
    assert record.committed_at is not None
    body: dict[str, Any]
    if operation == "message.send":
        assert sequence is not None
        body = {"message_id": record.resource_id, "thread_id": record.thread_id,
                "feed_item_id": record.feed_item_id,
                "sequence": values.sequence_text(sequence),
                "committed_at": values.format_timestamp(record.committed_at)}
    elif operation == "receipt.ack":
        (rows,) = await ctx.driver.read([sql.ack_items_statement(record.submission_id)])
        checkpoint = record.checkpoint_sequence
        body = {"items": [{"item_id": item_id, "stage": stage, "receipt_version": version,
                           "changed": bool(changed)} for item_id, stage, version, changed in rows],
                "checkpoint_sequence": None if checkpoint is None
                else values.sequence_text(checkpoint)}
    elif operation in ("blob.prepare", "blob.commit"):
        from waypost.reference.service import blobs  # blobs builds on this module

        if operation == "blob.prepare":
            return await blobs.stable_prepare(ctx, record.submission_id)
        return await blobs.stable_blob(ctx, record)
    else:
        from waypost.reference.service import memory  # memory builds on this module

        body = memory.stable_publish(record)
    return Outcome(record.result_status, body)


async def replay(ctx: Context, operation: str, record: sql.SubmissionRecord,
                 sequence: int | None) -> Outcome:
    """The stored result again, marked ``Waypost-Replayed: true`` (errors too)."""
    outcome = await stable_result(ctx, operation, record, sequence)
    if outcome.status >= 400:
        error = from_code(outcome.body["error"]["code"], outcome.body["error"]["message"],
                          outcome.body["error"]["details"])
        error.replayed = True
        raise error
    outcome.replayed = True
    return outcome


def refuse(verdict: str, what: str = "resource") -> WaypostError:
    """Turn a plan's failure verdict (``CODE`` or ``CODE:field``) into its error."""
    code, _, field = verdict.partition(":")
    if code == "UNAUTHENTICATED":
        return Unauthenticated("missing, unknown, expired or revoked credential")
    error: WaypostError
    if code == "NOT_FOUND":
        error = not_found(field or what)
    else:
        error = from_code(code, f"{code.lower().replace('_', ' ')}: {field or what}")
    if field:
        error.details["field"] = field
    return error


async def lookup(ctx: Context, principal: Principal, operation: str, request_id: str) -> Outcome:
    """``GET /v1/submissions/{operation}/{request_id}``: the caller's own key only."""
    if operation not in OPERATIONS:
        raise not_found("submission")
    rid = values.request_id(request_id)
    found = await find(ctx, principal, operation, rid)
    if found is None:
        raise not_found("submission")
    record, sequence = found
    result = None
    if not record.pending:
        outcome = await stable_result(ctx, operation, record, sequence)
        result = {"status": outcome.status, "body": outcome.body}
    return Outcome(200, {"operation": operation, "request_id": rid,
                         "state": "pending" if record.pending else record.state,
                         "fingerprint": record.fingerprint.hex(), "result": result})
