"""The kit's three reaches into Hypothesis' private parts (properties/rules/hypothesis_hooks.py) still
find what they use, and do what they say."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.errors import FlakyStrategyDefinition
from hypothesis.internal.conjecture import engine, providers
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from waypost.properties.rules.hypothesis_hooks import (
    NothingToDraw,
    StepDraws,
    missing,
    seed_only_draws,
    shrinking_budget,
)


def test_the_private_names_the_hooks_use_are_all_there() -> None:
    gone = missing()
    assert not gone, (
        "this Hypothesis moved private names the kit uses (properties/rules/hypothesis_hooks.py): "
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


class _Answers:
    """A stand-in for what a far target answers: how many items a long poll returned varies
    from one run of the same draws to the next, as timing makes it vary."""

    def __init__(self) -> None:
        self.random = random.Random()  # not Hypothesis': the same draws, other answers

    def items(self) -> list[int]:
        return list(range(self.random.randrange(1, 6)))


def _machine(through_step_draws: bool) -> type[RuleBasedStateMachine]:
    answers = _Answers()

    class Machine(RuleBasedStateMachine):
        @rule(data=st.data())
        def step(self, data: st.DataObject) -> None:
            draws: Any = StepDraws(data.draw(st.integers(0, 2**64 - 1))) \
                if through_step_draws else data
            seen = answers.items()
            draws.draw(st.sampled_from(seen))  # a pick among what the target answered
            if len(seen) > 2:
                draws.draw(st.booleans())

    return Machine


def _run(machine: type[RuleBasedStateMachine]) -> None:
    run_state_machine_as_test(machine, settings=settings(
        max_examples=60, stateful_step_count=10, database=None, deadline=None,
        suppress_health_check=list(HealthCheck)))


def test_draws_that_depend_on_answers_are_flaky_straight_from_hypothesis() -> None:
    """The control: drawn from Hypothesis' own choice sequence, a pick among answers that vary
    between runs of the same draws ends the run with FlakyStrategyDefinition."""
    def five_runs() -> None:  # each run explores anew; one of them replays a prefix
        for _ in range(5):
            _run(_machine(through_step_draws=False))

    with pytest.raises(FlakyStrategyDefinition):
        five_runs()


def test_step_draws_keep_the_choice_sequence_fixed_whatever_the_answers() -> None:
    """The same machine drawing through StepDraws: every step takes the same two choices from
    Hypothesis, so no answer of the target can make generation inconsistent."""
    for _ in range(5):
        _run(_machine(through_step_draws=True))


def test_step_draws_repeat_for_a_seed_and_stop_on_an_empty_choice() -> None:
    first, second = StepDraws(7), StepDraws(7)
    strategy = st.lists(st.integers(0, 100), min_size=3, max_size=3)
    assert first.draw(strategy) == second.draw(strategy)
    with pytest.raises(NothingToDraw):
        StepDraws(1).draw(st.nothing())
