"""The two places the kit reaches into Hypothesis' private parts, and only here. Hypothesis
has no public setting for either; both were written for Hypothesis 6.170 (``pyproject.toml``
pins the kit's range to it), and ``tests/conformance/test_hypothesis_hooks.py`` fails with a
clear message when a new release moves the names they use (:func:`missing` lists them).

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

docs/spec.md ("Profiles") says what each means for a run."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.internal.conjecture import engine, providers
from hypothesis.internal.constants_ast import Constants

#: Each private name the hooks use: (module, attribute).
USED = (("hypothesis.internal.conjecture.engine", "MAX_SHRINKING_SECONDS"),
        ("hypothesis.internal.conjecture.providers", "_get_local_constants"),
        ("hypothesis.internal.conjecture.providers", "CONSTANTS_CACHE"),
        ("hypothesis.internal.constants_ast", "Constants"))


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
