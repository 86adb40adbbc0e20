"""Rules of timing: consumers long-polling one space while another client sends to them; a
server restart between commands; a retry after the server clock moved hours or days (P06,
P05, P03). Each is drawn rarely: a long poll costs a fraction of a second, a restart a re-read
of the example."""

from __future__ import annotations

from hypothesis import strategies as st

from waypost.properties.commands import timing
from waypost.properties.commands.timing import ADVANCES, probe_item
from waypost.properties.rules.driver import RuleDriver, sample, words
from waypost.properties.rules.hypothesis_hooks import StepDraws


def long_polls(d: RuleDriver, data: StepDraws) -> None:
    """Two or three consumers of space A that would see a new message of the sender long-poll
    at once while the sender sends it to them (P06)."""
    model = d.model
    tokens = [model.tokens[handle] for handle in d.handles("A")]
    senders = [t.handle for t in tokens if model.live(t) and t.has("message.send")
               and t.recipients_any]
    if not senders:
        return
    sender = model.tokens[sample(data, senders)]
    readers = [t.handle for t in tokens if t.handle != sender.handle and model.live(t)
               and t.has("event.subscribe")
               and model.visible(probe_item(sender, (t.actor_id,)), t)]
    if len(readers) < 2:
        return
    chosen = data.draw(st.lists(st.sampled_from(readers), min_size=2,
                                max_size=min(3, len(readers)), unique=True))
    d.run(timing.long_polls, readers=chosen, sender=sender.handle, subject=data.draw(words))


def restart(d: RuleDriver, data: StepDraws) -> None:
    """Restart the server where the target offers the hook; everything reads back the same
    (P05, P03)."""
    if d.model.hooks:
        d.run(timing.restart)


def late_retry(d: RuleDriver, data: StepDraws) -> None:
    """An earlier submission again after the server clock moved an hour, a day or a week
    (P03)."""
    if d.model.submissions:
        d.run(timing.late_retry, submission=data.draw(st.integers(0, len(d.model.submissions) - 1)),
              advance_ms=data.draw(st.sampled_from(ADVANCES)))
