"""Rules of messages: sends of every shape, some deliberately wrong, and reads of them
(P01, P02, P05, P06, P08, P16)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from waypost.properties.commands import messages
from waypost.properties.model.state import SPACE_ACTORS
from waypost.properties.rules.driver import KINDS, RuleDriver, sample, words
from waypost.properties.rules.hypothesis_hooks import StepDraws


def send(d: RuleDriver, data: StepDraws) -> None:
    """New thread, reply in a thread, default or explicit recipients, non-members, unknown
    recipients, attachments (P02, P05, P06, P16). Most draws are valid, some deliberately
    not."""
    kind, subject, text = (data.draw(st.sampled_from(KINDS)), data.draw(words),
                           data.draw(words))
    token = sample(data, d.handles())
    space = d.world.space_name(d.world.token(token))
    wrong = data.draw(st.sampled_from([False, False, False, True]))  # a deliberate error
    invalid = ["zz-ghost", SPACE_ACTORS["B" if space == "A" else "A"][0]] if wrong else []
    recipients = data.draw(st.none() | st.lists(
        st.sampled_from(list(SPACE_ACTORS[space]) + invalid), min_size=1, max_size=3))
    thread, reply = _thread(d, data, token, wrong)
    options = data.draw(st.none() | st.lists(words, max_size=3))
    attachments = None
    sealed = [n for n, u in enumerate(d.model.uploads) if u.state == "sealed" or wrong]
    attach: bool = data.draw(st.booleans())
    if sealed and attach:
        attachments = data.draw(st.lists(st.sampled_from(sealed), max_size=3, unique=True))
    d.run(messages.send, token=token, recipients=recipients, thread=thread, reply=reply,
          kind=kind, subject=subject, text=text, options=options, attachments=attachments)


def _thread(d: RuleDriver, data: StepDraws, token: str, wrong: bool) -> tuple[Any, int | None]:
    """A new thread, the thread of an earlier message (mostly one the sender is a member of)
    perhaps replying to a message, or (when ``wrong``) a missing thread."""
    choice = data.draw(st.sampled_from(["new", "existing"] + (["missing"] if wrong else [])))
    order = d.world.message_order
    if choice == "existing" and order:
        sender = d.world.token(token)
        member_of = [n for n, mid in enumerate(order)
                     if sender.actor_id in d.model.threads.get(
                         (sender.space, d.model.messages[mid].thread_id), ())]
        thread = data.draw(st.sampled_from(list(range(len(order))) if wrong or not member_of
                                           else member_of))
        reply = data.draw(st.integers(0, len(order) - 1)) if data.draw(st.booleans()) else None
        return thread, reply
    return ("missing" if choice == "missing" else "new"), None


def read_message(d: RuleDriver, data: StepDraws) -> None:
    """Readers get the exact message; others, foreign or not, the same 404 (P01, P05)."""
    if not d.world.message_order:
        return send(d, data)
    last = len(d.world.message_order) - 1
    target = data.draw(st.sampled_from([None, *[data.draw(st.integers(0, last))] * 4]))
    d.run(messages.read_message, token=sample(data, d.handles()), target=target)
