"""Draws that depend on the seed alone, wherever and however the kit is installed.

Hypothesis mixes into its draws the literals it finds in the source of every *local* module
loaded at the time (not the standard library, not ``site-packages``, not test files). For the
kit that set depends on how it was installed: from a source checkout (``pip install -e``) its
own modules and the reference's are local, from a wheel they are not, and a user's own modules
count too. The same seed then explores differently, so a failure found in one place is not
found by the same seed in another. Hypothesis has no public setting for this; the kit empties
the set for the length of a run and restores it afterwards (docs/spec.md, "Profiles").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants


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
