"""The three places the kit reaches into Hypothesis' private parts, and only here. Hypothesis
has no public way to do any of them; all were written for Hypothesis 6.170 (``pyproject.toml``
pins the kit's range to it), and ``tests/properties/rules/test_hypothesis_hooks.py`` fails with
a clear message when a new release moves the names they use (:func:`missing` lists them).

- :func:`shrinking_budget`: Hypothesis' shrinker stops after 500 successful shrinks or at
  ``MAX_SHRINKING_SECONDS`` (300 s), a module constant its own comment calls "monkeypatchable,
  for the rare users who need to keep on shrinking". ``phases`` can only turn shrinking off,
  and every shrink step reruns a whole example of the kit (fresh spaces, dozens of requests),
  so a ci run's failure would take minutes. The constant is set for the run and restored.
- :func:`seed_only_draws`: Hypothesis mixes into its draws the literals it finds in the source
  of every *local* module loaded at the time (not the standard library, not ``site-packages``,
  not test files). For the kit that set depends on how it was installed: from a source checkout
  (``pip install -e``) its own modules and the reference's are local, from a wheel they are
  not, and a user's own modules count too. The same seed then explores differently, so a
  failure found in one place is not found by the same seed in another. The set is emptied for
  the length of a run and restored afterwards.
- :class:`StepDraws`: what a step of the state machine draws inside its rule. The rules draw
  from the model (the items seen, the cursors held, the uploads sealed), and the model holds what
  the target answered: which items a long poll returned, in which order concurrent commits
  landed, whether a retry was needed. Drawn from Hypothesis' own choice sequence, those draws
  would differ between two runs of the same choices whenever the target's timing did (a far
  target, jitter), and Hypothesis ends the run with ``FlakyStrategyDefinition``. So a step draws
  a fixed width from Hypothesis (its rule, one 64-bit seed), and everything the rule draws
  comes from a private ``ConjectureData`` driven by that seed: the same strategies, the same
  distributions, and a choice sequence whose shape no answer of the target can change.
  Shrinking still drops steps and simplifies the rule drawn; it cannot simplify inside a step.

docs/spec.md ("Profiles") says what each means for a run."""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

from hypothesis.errors import StopTest
from hypothesis.internal.conjecture import engine, providers
from hypothesis.internal.conjecture.data import ConjectureData
from hypothesis.internal.constants_ast import Constants
from hypothesis.strategies import SearchStrategy

T = TypeVar("T")

#: Each private name the hooks use: (module, attribute).
USED = (("hypothesis.internal.conjecture.engine", "MAX_SHRINKING_SECONDS"),
        ("hypothesis.internal.conjecture.providers", "_get_local_constants"),
        ("hypothesis.internal.conjecture.providers", "CONSTANTS_CACHE"),
        ("hypothesis.internal.constants_ast", "Constants"),
        ("hypothesis.internal.conjecture.data", "ConjectureData"))


def missing() -> list[str]:
    """The private names of :data:`USED` this Hypothesis no longer has (none, where the hooks
    work)."""
    gone = []
    for module, name in USED:
        try:
            found = hasattr(importlib.import_module(module), name)
        except ImportError:
            found = False
        if not found:
            gone.append(f"{module}.{name}")
    return gone


@contextmanager
def shrinking_budget(seconds: float) -> Iterator[None]:
    """For the length of the block, Hypothesis shrinks a failure for at most ``seconds``."""
    saved = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = int(seconds)
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = saved


@contextmanager
def seed_only_draws() -> Iterator[None]:
    """For the length of the block, Hypothesis draws no constants from local source code."""
    saved = providers._get_local_constants
    empty = Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()  # the pools drawn before hold local constants
    try:
        yield
    finally:
        providers._get_local_constants = saved
        providers.CONSTANTS_CACHE.cache.clear()


class NothingToDraw(Exception):
    """A step's rule asked for a draw with no possible value (an empty choice): the step does
    nothing."""


class StepDraws:
    """The draws of one step's rule, from its own seed: ``draw(strategy)`` as
    ``StepDraws.draw``, independent of Hypothesis' choice sequence (module docstring)."""

    def __init__(self, seed: int) -> None:
        self._data = ConjectureData(random=random.Random(seed))

    def draw(self, strategy: SearchStrategy[T]) -> T:
        """A value of ``strategy``; :class:`NothingToDraw` where it has none."""
        try:
            return self._data.draw(strategy)
        except StopTest as stopped:  # an empty strategy, a filter that found nothing
            raise NothingToDraw(str(strategy)) from stopped
