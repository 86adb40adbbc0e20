"""The feed route: a consumer's view from its checkpoint or a cursor (protocol.md §6, §8)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from waypost.reference.domain import cursor, values
from waypost.reference.domain.errors import (
    CursorStale,
    Forbidden,
    InvalidRequest,
    WaypostError,
    credential_refused,
)
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.remembered import StalePrincipal
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.wakeups import Waiter
from waypost.reference.storage import feed as sql
from waypost.reference.storage.acks import ACK_RULES, CURSOR_OF_ANOTHER, CURSOR_OF_ANOTHER_VIEW
from waypost.reference.storage.rules import refusal


def mint(ctx: Context, principal: Principal, position: int) -> str:
    """A cursor bound to this consumer, view revision, filter and grant fingerprint."""
    return cursor.encode(ctx.cursor_key, cursor.FeedCursor(
        principal.space_id, principal.actor_id, principal.consumer.consumer_id,
        principal.consumer.view_revision, principal.consumer.filter_fingerprint,
        principal.grant_fingerprint.hex(), position))


def position_of(ctx: Context, principal: Principal, text: str) -> int:
    """Verify a cursor and its binding (P07): foreign → CURSOR_INVALID; minted for another view
    revision, filter or grant fingerprint → CURSOR_STALE."""
    decoded = cursor.decode(ctx.cursor_key, text)
    check_binding(principal, decoded)
    return decoded.position


def _position(ctx: Context, principal: Principal, text: str, remembered: bool) -> int:
    try:
        return position_of(ctx, principal, text)
    except CursorStale:
        if remembered:  # the cursor may be of the consumer's newer view
            raise StalePrincipal from None
        raise


def binding_fault(principal: Principal, decoded: cursor.FeedCursor) -> str:
    """``""`` when the cursor was minted for this principal's consumer, view, filter and
    grants; else the verdict of the binding it breaks (:data:`...storage.acks.CURSOR_OF_ANOTHER`,
    :data:`...storage.acks.CURSOR_OF_ANOTHER_VIEW`)."""
    if (decoded.space_id, decoded.actor_id, decoded.consumer_id) != (
            principal.space_id, principal.actor_id, principal.consumer.consumer_id):
        return CURSOR_OF_ANOTHER.verdict  # answered in the same words as a forged one
    if (decoded.view_revision, decoded.filter_fingerprint, decoded.grant_fingerprint) != (
            principal.consumer.view_revision, principal.consumer.filter_fingerprint,
            principal.grant_fingerprint.hex()):
        return CURSOR_OF_ANOTHER_VIEW.verdict
    return ""


def check_binding(principal: Principal, decoded: cursor.FeedCursor) -> None:
    """A cursor is usable only by the consumer, view, filter and grants it was minted for."""
    fault = binding_fault(principal, decoded)
    if fault:
        raise refusal(ACK_RULES, fault)


def refuse_stale(verdict: str) -> WaypostError:
    """The token died or the view changed between authentication and the page read."""
    if verdict == "UNAUTHENTICATED":
        return credential_refused()
    return CursorStale("the consumer's view changed during the request; read again",
                       field="cursor")


def item_json(row: sql.FeedRow) -> dict[str, Any]:
    """A feed row as the protocol's feed item shape."""
    item: dict[str, Any] = {
        "item_id": row.item_id, "sequence": values.sequence_text(row.sequence),
        "type": row.item_type, "producer_id": row.producer_id,
        "recipient_ids": list(row.recipient_ids), "thread_id": row.thread_id,
        "committed_at": values.format_timestamp(row.committed_at)}
    if row.item_type == "message":
        item["message"] = {"message_id": row.resource_id, "subject": row.subject,
                           "kind": row.kind}
    elif row.item_type == "receipt":
        assert row.updated_at is not None
        item["receipt"] = {
            "receipt_id": row.receipt_id, "receipt_version": row.receipt_version,
            "subject_item_id": row.subject_item_id,
            "subject_resource_id": row.subject_resource_id, "consumer_id": row.consumer_id,
            "actor_id": row.actor_id, "stage": row.stage,
            "updated_at": values.format_timestamp(row.updated_at)}
    else:
        item["memory_revision"] = {"collection_id": row.collection_id, "revision": row.revision,
                                   "parent_revision": row.parent_revision,
                                   "manifest_blob_id": row.manifest_blob_id}
    return item


async def _read_until(ctx: Context, principal: Principal, position: int | None, limit: int,
                      wait: int, waiter: Waiter | None,
                      remembered: bool) -> tuple[int, list[sql.FeedRow]]:
    """Read the page; while it is empty and the wait lasts, wait for a commit that concerns
    this reader and read again. A wait that ends with nothing having concerned the reader
    re-checks only its authority: its page is the one it read; and not even that where no
    control-plane write committed in this process since (its token unexpired)."""
    loop = asyncio.get_running_loop()
    deadline, first, woken, unchanged = loop.time() + wait, True, True, False
    while True:
        if waiter is not None:
            ctx.signal.read(waiter)  # registered before the read: a later commit wakes it
        if woken:
            now = ctx.clock.now_ms()
            page, current = await ctx.driver.read([
                sql.page_statement(principal, position, limit + 1),
                sql.current_statement(principal, now) if position is not None
                else sql.current_and_saved_statement(principal, now)])
        elif unchanged and (principal.expires_at is None
                            or principal.expires_at > ctx.clock.now_ms()):
            assert position is not None  # set by the first read
            return position, []  # nothing concerned it, and its authority is as it was
        else:  # nothing that concerns it was committed: only its authority may have changed
            page = []
            (current,) = await ctx.driver.read([
                sql.current_statement(principal, ctx.clock.now_ms())])
        verdict = sql.current_from(current)
        if verdict == "CURSOR_STALE" and remembered and first:
            raise StalePrincipal  # the view changed before this request: read as the new one
        if verdict != "ok":
            raise refuse_stale(verdict)
        first = False
        if position is None:
            position = sql.saved_from(current)
        rows = [sql.feed_row_from(row) for row in page]
        remaining = deadline - loop.time()
        if rows or remaining <= 0 or waiter is None:
            return position, rows
        woken = await ctx.signal.wait(waiter, remaining)
        unchanged = ctx.signal.unchanged(waiter)


def parse_limit(ctx: Context, raw: str | None, field: str = "limit", default: int = 50) -> int:
    if raw is None:
        return default
    if not re.fullmatch(r"[0-9]{1,4}", raw) or not 1 <= int(raw) <= ctx.limits.page_limit:
        raise InvalidRequest(f"{field} must be an integer from 1 to "
                                    f"{ctx.limits.page_limit}", field=field)
    return int(raw)


async def read_feed(ctx: Context, principal: Principal, cursor_text: str | None,
                    limit_text: str | None, wait_text: str | None,
                    remembered: bool = False) -> Outcome:
    """One page of the consumer's view; with ``wait`` it long-polls until an item arrives. A
    ``remembered`` principal found stale before any wait raises :class:`StalePrincipal`."""
    limit = parse_limit(ctx, limit_text)
    wait = 0
    if wait_text is not None:
        if not re.fullmatch(r"[0-9]{1,4}", wait_text) or int(wait_text) > ctx.limits.wait_seconds:
            raise InvalidRequest(f"wait must be 0 to {ctx.limits.wait_seconds} seconds",
                                        field="wait")
        wait = int(wait_text)
        if wait and not principal.has("event.subscribe"):
            raise Forbidden("long-polling needs the event.subscribe scope", field="wait")
    # without a cursor: after the saved checkpoint, read in the first page's snapshot
    position = None if cursor_text is None else _position(ctx, principal, cursor_text,
                                                          remembered)
    waiter = ctx.signal.listen(principal) if wait else None
    try:
        position, rows = await _read_until(ctx, principal, position, limit, wait, waiter,
                                           remembered)
    finally:
        if waiter is not None:
            ctx.signal.forget(waiter)
    items = [item_json(row) for row in rows[:limit]]
    last = (rows[limit - 1] if len(rows) > limit else rows[-1]).sequence if rows else position
    return Outcome(200, {"items": items, "next_cursor": mint(ctx, principal, last),
                         "has_more": len(rows) > limit})
