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
from waypost.reference.service.auth import still_live, unexpired
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.wakeups import Waiter
from waypost.reference.storage import feed as sql
from waypost.reference.storage.acks import ACK_RULES, CURSOR_OF_ANOTHER, CURSOR_OF_ANOTHER_VIEW
from waypost.reference.storage.plan import Row
from waypost.reference.storage.rules import refusal


def mint(ctx: Context, principal: Principal, position: int, known_at: int | None = None) -> str:
    """A cursor bound to this consumer, view revision, filter and grant fingerprint; with
    ``known_at``, the claim that the token's view held nothing after ``position`` at that
    count of the signal's touches (see :func:`_claimed`)."""
    seen = "" if known_at is None else f"{ctx.signal.origin}.{known_at}.{principal.token_id}"
    return cursor.encode(ctx.cursor_key, cursor.FeedCursor(
        principal.space_id, principal.actor_id, principal.consumer.consumer_id,
        principal.consumer.view_revision, principal.consumer.filter_fingerprint,
        principal.grant_fingerprint.hex(), position, seen=seen))


def position_of(ctx: Context, principal: Principal, text: str) -> int:
    """Verify a cursor and its binding (P07): foreign → CURSOR_INVALID; minted for another view
    revision, filter or grant fingerprint → CURSOR_STALE."""
    return _decoded(ctx, principal, text).position


def _decoded(ctx: Context, principal: Principal, text: str) -> cursor.FeedCursor:
    decoded = cursor.decode(ctx.cursor_key, text)
    check_binding(principal, decoded)
    return decoded


def _position(ctx: Context, principal: Principal, text: str,
              remembered: bool) -> tuple[int, int | None]:
    """The cursor's position, and the touch its claim holds if this process may trust it."""
    try:
        decoded = _decoded(ctx, principal, text)
    except CursorStale:
        if remembered:  # the cursor may be of the consumer's newer view
            raise StalePrincipal from None
        raise
    return decoded.position, _claimed(ctx, principal, decoded.seen)


def _claimed(ctx: Context, principal: Principal, seen: str) -> int | None:
    """The count of touches at which a cursor's page was complete, where this signal made the
    claim for this very token (scopes and grants decide a view, and they are a token's): the
    read that made it checked the token live, and :meth:`FeedSignal.quiet` tells whether
    anything of its view, its authority included, was touched since."""
    origin, _, rest = seen.partition(".")
    touches, _, token_id = rest.partition(".")
    if origin != ctx.signal.origin or token_id != principal.token_id or not touches.isdigit():
        return None
    return int(touches)


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
                      wait: int, waiter: Waiter | None, remembered: bool,
                      claimed: int | None) -> tuple[int, list[sql.FeedRow], int]:
    """Read the page; while it is empty and the wait lasts, wait for a commit that concerns
    this reader and read again. A wait that ends with nothing having concerned the reader
    re-checks only its authority: its page is the one it read; and not even that where no
    control-plane write committed in this process since (its token unexpired). A cursor whose
    claim (``claimed``) still holds needs no first read: its page is empty, its token live.
    Returns the position, the rows and the count of touches the answer is known at."""
    loop = asyncio.get_running_loop()
    deadline, first, woken, unchanged = loop.time() + wait, True, True, False
    signal = ctx.signal
    known_at = 0  # the count of touches the page was read at
    while True:
        touches = signal.touches  # noted before the read: a later commit touches after it
        if waiter is not None:
            signal.read(waiter)  # registered before the read: a later commit wakes it
        if first and claimed is not None and _still_empty(ctx, principal, claimed):
            assert position is not None  # a claim comes with a cursor
            page, current, known_at = [], None, touches
        elif woken:
            known_at = touches
            now = ctx.clock.now_ms()
            page, current = await ctx.driver.read([
                sql.page_statement(principal, position, limit + 1),
                sql.current_statement(principal, now) if position is not None
                else sql.current_and_saved_statement(principal, now)])
        elif unchanged and unexpired(ctx, principal):
            assert position is not None  # set by the first read
            return position, [], _known_at(ctx, principal, known_at)
        else:  # nothing that concerns it was committed: only its authority may have changed
            page = []
            (current,) = await ctx.driver.read([
                sql.current_statement(principal, ctx.clock.now_ms())])
        if current is not None:
            position = _current(current, position, remembered and first)
        first = False
        rows = [sql.feed_row_from(row) for row in page]
        remaining = deadline - loop.time()
        if rows or remaining <= 0 or waiter is None:
            assert position is not None
            return position, rows, _known_at(ctx, principal, known_at)
        woken = await signal.wait(waiter, remaining)
        unchanged = signal.unchanged(waiter)


def _current(current: list[Row], position: int | None, retry_stale: bool) -> int:
    """The position after a read's verdict on the token and view (the saved checkpoint where
    the read had no cursor); a stale view raises (:class:`StalePrincipal` where the request
    may run again as the consumer's new view)."""
    verdict = sql.current_from(current)
    if verdict == "CURSOR_STALE" and retry_stale:
        raise StalePrincipal  # the view changed before this request: read as the new one
    if verdict != "ok":
        raise refuse_stale(verdict)
    return sql.saved_from(current) if position is None else position


def _still_empty(ctx: Context, principal: Principal, claimed: int) -> bool:
    """Whether a claim made at touch ``claimed`` still holds: the token still live as the
    read that made it found it (:func:`...auth.still_live`), nothing of the view touched
    since, and no fault armed (a test deployment's fault points are in the reads)."""
    return (not ctx.faults.armed and still_live(ctx, principal, claimed)
            and ctx.signal.quiet(principal, claimed))


def _known_at(ctx: Context, principal: Principal, known_at: int) -> int:
    """The latest count of touches a page known at ``known_at`` holds for: now, where nothing
    of the view was touched since."""
    now = ctx.signal.touches
    return now if now != known_at and ctx.signal.quiet(principal, known_at) else known_at


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
    position, claimed = (None, None) if cursor_text is None else _position(
        ctx, principal, cursor_text, remembered)
    waiter = ctx.signal.listen(principal) if wait else None
    try:
        position, rows, known_at = await _read_until(ctx, principal, position, limit, wait,
                                                     waiter, remembered, claimed)
    finally:
        if waiter is not None:
            ctx.signal.forget(waiter)
    items = [item_json(row) for row in rows[:limit]]
    has_more = len(rows) > limit
    last = (rows[limit - 1] if has_more else rows[-1]).sequence if rows else position
    next_cursor = mint(ctx, principal, last, None if has_more else known_at)
    return Outcome(200, {"items": items, "next_cursor": next_cursor, "has_more": has_more})
