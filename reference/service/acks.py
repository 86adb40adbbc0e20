"""``receipt.ack``: up to 20 receipts and a checkpoint, all or nothing (P09, P10)."""

from __future__ import annotations

from typing import Any

from waypost.reference.domain import cursor, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import Forbidden, IdempotencyConflict, InvalidRequest, NotFound
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.requests import Ack, parse_ack
from waypost.reference.service import answers, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.feed import check_binding
from waypost.reference.storage import acks as sql
from waypost.reference.storage import feed as feed_sql
from waypost.reference.storage import submissions as submission_sql
from waypost.reference.storage.plan import verdict_from
from waypost.reference.storage.submissions import SETTLED

OPERATION = "receipt.ack"


async def _check_items(ctx: Context, principal: Principal, request: Ack) -> None:
    """Every item must be visible to the consumer (else 404 naming it) and not a receipt."""
    ids = [item.item_id for item in request.items]
    (rows,) = await ctx.driver.read([feed_sql.visible_items_statement(principal, ids)])
    types = feed_sql.visible_types(rows)
    for index, item in enumerate(request.items):
        if item.item_id not in types:
            raise NotFound("feed item not found", field=f"items[{index}].item_id",
                           item_id=item.item_id)
        if types[item.item_id] == "receipt":
            raise InvalidRequest("receipt items cannot be acknowledged",
                                 field=f"items[{index}].item_id", item_id=item.item_id)


async def _check_new(ctx: Context, principal: Principal, request: Ack,
                     decoded: cursor.FeedCursor | None) -> None:
    if decoded is not None:
        check_binding(principal, decoded)
    await _check_items(ctx, principal, request)


async def acknowledge(ctx: Context, principal: Principal, raw: Any) -> Outcome:
    """Save every receipt advance and the checkpoint together, or nothing; or replay."""
    request = parse_ack(raw, ctx.limits)
    if not principal.has("receipt.write"):
        raise Forbidden("the token lacks the receipt.write scope", field="scope")
    decoded = None
    if request.checkpoint_cursor is not None:
        decoded = cursor.decode(ctx.cursor_key, request.checkpoint_cursor)
    checkpoint = None if decoded is None else decoded.position
    fingerprint = digest(request.normalised(checkpoint))
    found = await submissions.find(ctx, principal, OPERATION, request.request_id)
    if found is None:
        await _check_new(ctx, principal, request, decoded)
        record, sequence = submissions.reserved(await submission_sql.reserve(
            ctx.driver, principal, ctx.clock.now_ms(), OPERATION, request.request_id,
            fingerprint, values.new_id("sub"), principal.consumer.consumer_id))
        ctx.faults.hit("reserve.after")
    else:
        record, sequence = found
        if record.pending and record.fingerprint == fingerprint:
            # a retry of an unfinished ACK is checked like a new one: the view may have moved
            await _check_new(ctx, principal, request, decoded)
    submissions.check_fingerprint(record, fingerprint)
    if record.pending:
        lines = [sql.AckLine(item.item_id, item.stage, values.new_id("rcp"), values.new_id("fi"))
                 for item in request.items]
        plan = sql.acknowledge(principal, ctx.clock.now_ms(), record.submission_id, lines,
                               checkpoint)
        ctx.faults.hit("commit.before")
        verdict = verdict_from(await ctx.driver.run(plan)).verdict
        ctx.faults.hit("ack.after_commit")
        ctx.faults.hit("commit.after")
        if verdict == "OTHER_CONSUMER":
            raise IdempotencyConflict("this ACK was started through another consumer",
                                      field="request_id")
        if verdict not in ("ok", SETTLED):
            raise submissions.refuse(verdict, "feed item")
        found = await submissions.find(ctx, principal, OPERATION, request.request_id)
        assert found is not None
        record, sequence = found
        if verdict == "ok":
            ctx.signal.committed(principal.space_id)
            return await answers.stable_result(ctx, OPERATION, record, sequence)
    return await submissions.replay(ctx, OPERATION, record, sequence)
