"""The answer of each idempotent operation, rebuilt from what its submission fixed.

One builder per operation, in one table: the first answer and every replay (and the submission
lookup) come from the same builder, so they cannot drift apart. Builders read only the storage
core, never another service, which keeps this module below ``blobs``, ``memory``, ``messages``
and ``acks``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from waypost.reference.domain import values
from waypost.reference.domain.errors import from_code
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import submissions as sql
from waypost.reference.storage import uploads as upload_sql

#: How a recorded failure reads, in its first answer and in every replay alike.
RECORDED_MESSAGES = {
    "REVISION_CONFLICT": "expected_revision is not the collection's head",
    "UPLOAD_EXPIRED": "the upload expired before it was sealed",
    "INVALID_REQUEST": "the input is invalid on the collection's head",
}

Builder = Callable[[Context, sql.SubmissionRecord, "int | None"], Awaitable[dict[str, Any]]]


async def _sent(_ctx: Context, record: sql.SubmissionRecord,
                sequence: int | None) -> dict[str, Any]:
    assert sequence is not None
    assert record.committed_at is not None
    return {"message_id": record.resource_id, "thread_id": record.thread_id,
            "feed_item_id": record.feed_item_id, "sequence": values.sequence_text(sequence),
            "committed_at": values.format_timestamp(record.committed_at)}


async def _acknowledged(ctx: Context, record: sql.SubmissionRecord,
                        _sequence: int | None) -> dict[str, Any]:
    (rows,) = await ctx.driver.read([sql.ack_items_statement(record.submission_id)])
    return acknowledged(record, sql.ack_lines_from(rows[0][0]))


def acknowledged(record: sql.SubmissionRecord, lines: list[sql.AckLine]) -> dict[str, Any]:
    """A committed ACK's answer from its recorded lines (WP-RCPT-8, WP-RCPT-12)."""
    checkpoint = record.checkpoint_sequence
    return {"items": [{"item_id": line.item_id, "stage": line.stage,
                       "receipt_version": line.receipt_version, "changed": line.changed}
                      for line in lines],
            "checkpoint_sequence": None if checkpoint is None
            else values.sequence_text(checkpoint)}


async def _prepared(ctx: Context, record: sql.SubmissionRecord,
                    _sequence: int | None) -> dict[str, Any]:
    (rows,) = await ctx.driver.read([upload_sql.upload_by_submission(record.submission_id)])
    return prepared(upload_sql.upload_from(rows[0]))


def prepared(upload: upload_sql.UploadRow) -> dict[str, Any]:
    """A prepared upload's answer (WP-HTTP-15)."""
    return {"upload_id": upload.upload_id, "blob_id": upload.blob_id,
            "upload_url": f"/v1/uploads/{upload.upload_id}/content",
            "expires_at": values.format_timestamp(upload.expires_at)}


async def _sealed(ctx: Context, record: sql.SubmissionRecord,
                  _sequence: int | None) -> dict[str, Any]:
    assert record.blob_id is not None
    (rows,) = await ctx.driver.read([upload_sql.blob_by_id(record.blob_id)])
    return sealed(upload_sql.blob_from(rows[0]))


def sealed(blob: upload_sql.BlobRow) -> dict[str, Any]:
    """A sealed blob's answer to ``blob.commit`` (WP-HTTP-15)."""
    return {"blob_id": blob.blob_id, "size": blob.size, "sha256": blob.sha256.hex(),
            "content_type": blob.content_type}


async def _published(_ctx: Context, record: sql.SubmissionRecord,
                     _sequence: int | None) -> dict[str, Any]:
    assert record.revision is not None
    if record.result_status == 201:
        return {"revision": record.revision, "parent_revision": record.revision - 1,
                "changed": True}
    return {"revision": record.revision, "changed": False}


BUILDERS: dict[str, Builder] = {
    "message.send": _sent,
    "receipt.ack": _acknowledged,
    "blob.prepare": _prepared,
    "blob.commit": _sealed,
    "memory.publish": _published,
}
OPERATIONS = tuple(BUILDERS)


async def stable_result(ctx: Context, operation: str, record: sql.SubmissionRecord,
                        sequence: int | None) -> Outcome:
    """A final submission's answer: its recorded failure, or the body its builder rebuilds from
    the fixed columns and rows (``sequence`` is the feed sequence of a sent message)."""
    assert record.result_status is not None
    if record.state == "failed":
        assert record.error_code is not None
        error = from_code(record.error_code, RECORDED_MESSAGES.get(
            record.error_code, "the recorded result of this request"),
                          json.loads(record.error_detail or "{}"))
        return Outcome(record.result_status, error.envelope())
    return Outcome(record.result_status, await BUILDERS[operation](ctx, record, sequence))
