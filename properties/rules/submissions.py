"""Rules of idempotency: earlier writes again, changed, looked up, or under another actor's key
(P03, P04)."""

from __future__ import annotations

from hypothesis import strategies as st

from waypost.properties.commands import submissions
from waypost.properties.rules.driver import RuleDriver, sample
from waypost.properties.rules.hypothesis_hooks import StepDraws
from waypost.properties.rules.messages import send


def resubmit(d: RuleDriver, data: StepDraws) -> None:
    """An earlier write again: unchanged → the identical stable result; altered →
    IDEMPOTENCY_CONFLICT; looked up → the committed result and the kit's own fingerprint
    (P03, P04)."""
    if not d.model.submissions:
        return send(d, data)
    mode = data.draw(st.sampled_from(["retry", "retry", "conflict", "lookup", "reuse"]))
    if mode == "reuse":
        sends = [n for n, sub in enumerate(d.model.submissions.values())
                 if sub.operation == "message.send"]
        if sends:
            d.run(submissions.reuse_key, token=sample(data, d.handles()), submission=sample(data, sends))
        return
    command = {"retry": submissions.retry, "conflict": submissions.conflict,
               "lookup": submissions.lookup}[mode]
    d.run(command, submission=data.draw(st.integers(0, len(d.model.submissions) - 1)))
