"""Rules of the feed: pages from the checkpoint or a held cursor, whole views with random page
sizes, tampered cursors and foreign items (P01, P06, P07, P08)."""

from __future__ import annotations

from hypothesis import strategies as st

from waypost.properties.commands import acks, feed
from waypost.properties.rules.driver import RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws


def read_feed(d: RuleDriver, data: StepDraws) -> None:
    """A page from the checkpoint or from any held cursor, also another consumer's (P06,
    P07, P08)."""
    limit = data.draw(st.integers(1, 7))
    cursors = d.model.cursors
    cursor = None
    from_cursor: bool = data.draw(st.booleans())
    if cursors and from_cursor:
        cursor = data.draw(st.integers(0, len(cursors) - 1))
    d.run(feed.read_feed, token=sample(data, d.handles()), cursor=cursor, limit=limit)


def check_view(d: RuleDriver, data: StepDraws) -> None:
    """Page through one consumer's whole view with random page sizes: every visible item
    exactly once, in order (P06, P08)."""
    sizes = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    d.run(feed.check_view, token=sample(data, d.handles()), sizes=sizes)


def probe(d: RuleDriver, data: StepDraws) -> None:
    """A tampered cursor is CURSOR_INVALID (P07); another space's item answers an ACK
    exactly like a missing one (P01)."""
    where = data.draw(st.integers(0, 10_000))
    foreign = d.bound_items("B")
    tamper: bool = data.draw(st.booleans())
    if d.model.cursors and (tamper or not foreign):
        cursor = data.draw(st.integers(0, len(d.model.cursors) - 1))
        d.run(feed.tamper, token=sample(data, d.handles()), cursor=cursor, where=where)
    elif foreign:
        d.run(acks.probe_foreign, token=sample(data, d.handles("A")), item=sample(data, foreign))
