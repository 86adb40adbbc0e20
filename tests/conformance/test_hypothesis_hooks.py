"""The kit's two reaches into Hypothesis' private parts (conformance/hypothesis_hooks.py) still
find what they use, and do what they say."""

from __future__ import annotations

from hypothesis.internal.conjecture import engine, providers

from waypost.conformance.hypothesis_hooks import (
    missing,
    seed_only_draws,
    shrinking_budget,
)


def test_the_private_names_the_hooks_use_are_all_there() -> None:
    gone = missing()
    assert not gone, (
        "this Hypothesis moved private names the kit uses (conformance/hypothesis_hooks.py): "
        + ", ".join(gone) + ". Adapt the hooks to it, then widen the pinned range in "
        "pyproject.toml, or keep the pinned Hypothesis.")


def test_the_shrinking_budget_holds_for_the_block_and_is_restored() -> None:
    before = engine.MAX_SHRINKING_SECONDS
    with shrinking_budget(7.9):
        assert engine.MAX_SHRINKING_SECONDS == 7
    assert before == engine.MAX_SHRINKING_SECONDS


def test_seed_only_draws_holds_no_local_constant_and_is_restored() -> None:
    before = providers._get_local_constants
    with seed_only_draws():
        assert providers._get_local_constants is not before
        constants = providers._get_local_constants()
        assert not any(len(pool) for pool in vars(constants).values()
                       if isinstance(pool, set | frozenset | list | tuple))
    assert providers._get_local_constants is before
