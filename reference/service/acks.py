"""``receipt.ack``: up to 20 receipts and a checkpoint, all or nothing (P09, P10): one plan,
whose guard names the rule a refused ACK broke (``storage/acks.py``)."""

from __future__ import annotations

from typing import Any

from waypost.reference.domain import cursor, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import Forbidden
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.remembered import StalePrincipal
from waypost.reference.domain.requests import Ack, parse_ack
from waypost.reference.service import answers, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.feed import binding_fault
from waypost.reference.service.woken import publishing, wake_items
from waypost.reference.storage import acks as sql
from waypost.reference.storage.rules import KEY_TAKEN, refusal
from waypost.reference.storage.submissions import ack_lines_from, decided_from

OPERATION = sql.OPERATION


async def acknowledge(ctx: Context, principal: Principal, raw: Any,
                      remembered: bool = False) -> Outcome:
    """Save every receipt advance and the checkpoint together, or nothing; or replay. A
    ``remembered`` principal found stale (its consumer's view moved on) raises
    :class:`StalePrincipal` before anything is saved."""
    request = parse_ack(raw, ctx.limits)
    if not principal.has(sql.SCOPE):
        raise Forbidden("the token lacks the receipt.write scope", field="scope")
    decoded = None
    if request.checkpoint_cursor is not None:
        decoded = cursor.decode(ctx.cursor_key, request.checkpoint_cursor)
    binding = "" if decoded is None else binding_fault(principal, decoded)
    if binding and remembered:
        raise StalePrincipal  # the cursor may be of the consumer's newer view
    checkpoint = None if decoded is None else decoded.position
    fingerprint = digest(request.normalised(checkpoint))
    write = _new_ack(request, fingerprint, checkpoint, binding)
    ctx.faults.hit("commit.before")
    acked = decided_from(await publishing(  # its receipts' routes are read back after
        ctx, principal.space_id, None, sql.acknowledge(principal, ctx.clock.now_ms(), write)),
        extra=1)
    ctx.faults.hit("ack.after_commit")
    ctx.faults.hit("commit.after")
    if acked.verdict == sql.VIEW_CHANGED and remembered:
        raise StalePrincipal
    if acked.verdict not in ("ok", KEY_TAKEN):
        raise refusal(sql.ACK_RULES, acked.verdict, acked.details)
    record = acked.record
    assert record is not None
    if acked.verdict == "ok":
        await wake_items(ctx, principal.space_id, [line.receipt_item_id for line in write.lines])
    else:
        submissions.check_fingerprint(record, fingerprint)
    if record.state != "committed":  # an ACK is one plan: its holder is final
        raise RuntimeError(f"ACK submission {record.submission_id} is {record.state}")
    (lines,) = acked.extra
    outcome = Outcome(200, answers.acknowledged(record, ack_lines_from(lines)))
    outcome.replayed = acked.verdict == KEY_TAKEN
    return outcome


def _new_ack(request: Ack, fingerprint: bytes, checkpoint: int | None,
             binding: str) -> sql.AckWrite:
    """A first attempt: fresh ids for the submission and for every advance it may make."""
    return sql.AckWrite(
        request.request_id, fingerprint, values.new_id("sub"),
        [sql.AckLine(item.item_id, item.stage, values.new_id("rcp"), values.new_id("fi"))
         for item in request.items], checkpoint, binding)
