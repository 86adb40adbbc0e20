"""Commits that publish feed items, as the long polls and cursors' claims hear of them.

:func:`publishing` runs such a plan and touches its keys when it has ended in the database,
whatever becomes of the request. :func:`wake_items` wakes the long polls that committed feed
items concern, where the committing request does not know their routes itself (an ACK's
receipts, a send to the space's default actor): the routes are read back, and only when
somebody in the space waits."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from waypost.reference.service.context import Context
from waypost.reference.service.wakeups import Key, Route
from waypost.reference.storage import feed as feed_sql
from waypost.reference.storage.plan import CommitPlan, Row

T = TypeVar("T")

#: How long after a failed plan its commit may still land (over the D1 gateway client's 60 s
#: timeout).
UNKNOWN_OUTCOME_SECONDS = 120.0


async def to_the_end(write: Awaitable[T], ended: Callable[[asyncio.Future[T]], None]) -> T:
    """``write`` carried to its end whatever becomes of the request awaiting it (shielded
    from its cancellation), and ``ended`` called on the loop once it has ended, before the
    request resumes: what the signal learns of a write never waits on its answer."""
    run = asyncio.ensure_future(write)
    run.add_done_callback(ended)  # before the request's own (the shield's): called first
    return await asyncio.shield(run)


async def publishing(ctx: Context, space_id: str, keys: Sequence[Key] | None,
                     plan: CommitPlan) -> list[Row]:
    """Run ``plan``, which may publish feed items under ``keys`` (None: any key of the space);
    the signal is touched when the plan has ended, also where this request was cancelled or
    fails after it: a cursor's claim that nothing changed must never outlive a commit."""
    signal = ctx.signal

    def ended(done: asyncio.Future[list[Row]]) -> None:
        signal.touched(space_id, keys)
        if not done.cancelled() and done.exception() is not None:
            # its outcome unknown (a D1 round trip that failed may still commit): once more
            # after the longest it could take, so that no claim made meanwhile outlives it
            asyncio.get_running_loop().call_later(UNKNOWN_OUTCOME_SECONDS, signal.touched,
                                                  space_id, keys)
    return await to_the_end(ctx.driver.run(plan), ended)


async def wake_items(ctx: Context, space_id: str, item_ids: Sequence[str]) -> None:
    """Wake the waits the feed items ``item_ids`` (committed) concern; if their routes cannot
    be read, every wait of the space (each reads once more and waits again)."""
    if not ctx.signal.waiting(space_id):
        return
    try:
        (rows,) = await ctx.driver.read([feed_sql.routes_statement(space_id, item_ids)])
    except Exception:  # the commit is saved: its answer must not fail for this
        ctx.signal.wake_all(space_id)  # every reader it may concern reads once more
        return
    ctx.signal.committed(space_id, [Route(*route) for route in feed_sql.routes_from(rows)])
