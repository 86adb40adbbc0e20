"""Rules of receipts: ACKs of visible, invisible, foreign and missing items with mixed stages,
with or without a checkpoint (P01, P05, P09, P10)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waypost.properties.commands import acks
from waypost.properties.model.state import SPACE_ACTORS, Token
from waypost.properties.rules.driver import STAGES, RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws
from waypost.properties.rules.messages import send


def ack(d: RuleDriver, data: StepDraws) -> None:
    """1–20 distinct items with mixed stages, mostly visible to the token's consumer, some
    invisible, foreign or missing; with or without a checkpoint (P01, P09, P10)."""
    if not d.bound_items("A"):
        return send(d, data)
    consumers = {(space, consumer) for space, consumer, _ in d.model.receipts}
    acked_before = [t.handle for t in d.model.tokens.values()
                    if (t.space, t.consumer_id) in consumers]
    token = sample(data, acked_before * 3 + d.handles())  # later ACKs meet earlier ones
    holder = d.world.token(token)
    wrong = data.draw(st.sampled_from([False, False, False, True]))  # a deliberate error
    refs = _items(d, data, holder, wrong)
    lines = [[ref, data.draw(st.sampled_from(stages_for(d, holder, ref)))] for ref in refs]
    cursor = _checkpoint(d, data, holder, wrong)
    if not lines and cursor is None:
        return
    d.run(acks.ack, token=token, lines=lines, cursor=cursor,
          recheck=data.draw(st.sampled_from([True, False, False])))


def _items(d: RuleDriver, data: StepDraws, holder: Token, wrong: bool) -> list[Any]:
    """Items to acknowledge: visible ones (again and again those acknowledged before); when
    ``wrong``, good items around one bad one, which must make the whole ACK fail (P05)."""
    visible = [[space, item.index] for space in SPACE_ACTORS
               for item in d.model.items.get(d.world.space_ids[space], [])
               if item.bound and d.model.visible(item, holder) and item.type != "receipt"]
    acked = {item_id for (space, consumer, item_id) in d.model.receipts
             if space == holder.space and consumer == holder.consumer_id}
    again = [ref for ref in visible if getattr(d.world.item_ref(ref), "item_id", None) in acked]
    revisions = [ref for ref in visible
                 if getattr(d.world.item_ref(ref), "type", None) == "memory_revision"]
    # stages on items already acknowledged: no-ops, regressions; receipts about revisions
    visible = visible + again * 3 + revisions * 2
    if wrong and visible:
        refs: list[Any] = data.draw(st.lists(st.sampled_from(visible), min_size=1, max_size=5,
                                             unique_by=repr))
        refs.insert(data.draw(st.integers(0, len(refs))), _bad(d, data, holder, refs))
        return refs
    # mostly items: a checkpoint-only ACK (no items) a quarter of the time
    some = 1 if visible and data.draw(st.sampled_from([True, True, True, False])) else 0
    chosen: list[Any] = data.draw(st.lists(st.sampled_from(visible or _others(d)), min_size=some,
                                           max_size=min(20, d.model.limits.get("ack_items", 20)),
                                           unique_by=repr))
    return chosen


def _others(d: RuleDriver) -> list[Any]:
    """Items of either space, and a missing one: most invisible or foreign to a holder."""
    return d.bound_items("A")[:3] + d.bound_items("B")[:2] + [None]


def _bad(d: RuleDriver, data: StepDraws, holder: Token, refs: list[Any]) -> Any:
    """The bad item of a wrong ACK: often a receipt item, which no ACK may name (WP-RCPT-4);
    else an invisible, foreign or missing one."""
    receipts = _receipts(d, holder)
    if receipts and data.draw(st.sampled_from([True, False, False])):
        return receipts[-1]
    return data.draw(st.sampled_from([o for o in _others(d) if o not in refs]))


def _receipts(d: RuleDriver, holder: Token) -> list[Any]:
    """The receipt items the holder sees, as references."""
    return [[space, item.index] for space in SPACE_ACTORS
            for item in d.model.items.get(d.world.space_ids[space], [])
            if item.bound and item.type == "receipt" and d.model.visible(item, holder)]


def _checkpoint(d: RuleDriver, data: StepDraws, holder: Token, wrong: bool) -> Any:
    """No checkpoint, a cursor of the holder's consumer, or (when ``wrong``) any held cursor
    or a tampered one."""
    mine = [n for n, held in enumerate(d.model.cursors)
            if held.consumer_id == holder.consumer_id and held.space == holder.space]
    pick = data.draw(st.sampled_from(["none", "mine", "any", "tampered"] if wrong
                                     else ["none", "mine"]))
    if pick == "mine" and mine:
        return data.draw(st.sampled_from(mine))
    if pick == "any" and d.model.cursors:
        return data.draw(st.integers(0, len(d.model.cursors) - 1))
    return "tampered" if pick == "tampered" else None


def stages_for(d: RuleDriver, holder: Token, ref: Any) -> tuple[str, ...]:
    """Stages to try: for an item already processed mostly a lower one (a regression a
    correct server must answer as a no-op), else both (P09)."""
    item = d.world.item_ref(ref)
    if item is None or item.item_id is None:
        return STAGES
    stage, _version = d.model.receipts.get(
        (holder.space, holder.consumer_id, item.item_id), ("none", 0))
    return ("received", "received", "processed") if stage == "processed" else STAGES
