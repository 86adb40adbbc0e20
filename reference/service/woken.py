"""Waking the long polls that committed feed items concern, where the committing request does
not know their routes itself (an ACK's receipts, a send to the space's default actor): the
routes are read back, and only when somebody in the space waits."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.service.context import Context
from waypost.reference.service.wakeups import Route
from waypost.reference.storage import feed as feed_sql


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
