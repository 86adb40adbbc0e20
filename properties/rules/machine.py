"""The stateful Hypothesis command model: one example provisions fresh spaces, then each step
draws one rule (``properties/rules/``) by weight, which hands concrete commands to the
:class:`World`; ``teardown`` re-reads every live view and revision, so each example ends with a
full comparison against the model.

Hypothesis instantiates the machine itself, so a run is bound to it as a class attribute of a
subclass made for that run (:func:`machine_for`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from waypost.properties.commands import control
from waypost.properties.commands.provisioned import setup_args
from waypost.properties.commands.reread import revision_rereads, view_rereads
from waypost.properties.commands.server_wide import ServerWide
from waypost.properties.commands.world import World
from waypost.properties.rules import BY_NAME, RULES, MachineRule, properties_of, weighted
from waypost.properties.rules.driver import RuleDriver
from waypost.properties.rules.hypothesis_hooks import NothingToDraw, StepDraws
from waypost.properties.verdicts.violations import Ledger
from waypost.properties.wire.http import Session

#: The most raising examples a run remembers (shrinking a failure raises again and again).
KEPT = 20
#: What the end of an example re-reads, and the properties those reads check.
VIEWS = properties_of(["check_view"])
REVISIONS = properties_of(["read_revision"])


@dataclass
class KitRun:
    """One run of the kit: where its requests go, what it checks and enforces, which rules
    its steps draw, and what its examples did so far."""

    session: Session
    prefix: str
    ledger: Ledger
    rules: tuple[MachineRule, ...] = RULES
    selected: set[str] | None = None  # the properties asked for (None: all)
    examples: int = 0
    steps: int = 0
    last: World | None = None  # the world of the most recent example (a failure's evidence)
    #: the first exception each example raised, with its world: what a failure that did not
    #: happen again from the same draws was (Hypothesis reports only that it was flaky)
    raised: list[tuple[BaseException, World]] = field(default_factory=list)
    trace: list[list[str]] | None = None  # per example, its commands (when asked for)
    on_example: Callable[[KitRun], None] | None = None  # after each example (progress)
    draws: tuple[str, ...] = field(default=(), init=False)  # rule names, repeated by weight
    shared: ServerWide = field(default_factory=ServerWide)  # what the run's workers share
    #: skip the steps of Hypothesis' simplest example (the first rule with seed 0, again and
    #: again): a worker of several adds it to its share, so it need not cost a far target time
    skip_simplest: bool = False

    def __post_init__(self) -> None:
        self.draws = weighted(self.rules)

    def wants(self, properties: frozenset[str]) -> bool:
        return self.selected is None or bool(self.selected & properties)


class WaypostMachine(RuleBasedStateMachine):
    """One example = two fresh spaces, a run of commands, a full comparison at the end."""

    kit: ClassVar[KitRun]

    def __init__(self) -> None:
        super().__init__()
        kit = self.kit
        self.world = World(kit.session, f"{kit.prefix}-{kit.examples}-", kit.ledger, kit.shared)
        kit.examples += 1
        kit.last = self.world
        # Hypothesis' simplest example is a run's first: a worker of several skips its steps
        self.simplest = kit.skip_simplest and kit.examples == 1
        self.driver = RuleDriver(self.world)

    @initialize()
    def setup(self) -> None:
        self.world.perform(control.setup, setup_args(self.world))

    @rule(data=st.data())
    def step(self, data: st.DataObject) -> None:
        """One rule, drawn by weight among the run's rules, and the seed of what the rule draws
        (a fixed width: nothing the target answers changes what a step draws from Hypothesis,
        ``properties/rules/hypothesis_hooks.py``)."""
        name = data.draw(st.sampled_from(self.kit.draws))
        seed = data.draw(st.integers(0, 2**64 - 1))
        if self.simplest and seed == 0 and name == self.kit.draws[0]:
            return
        draws = StepDraws(seed)
        # where the model offers the rule nothing to pick from, the step does nothing
        with self._kept(), suppress(NothingToDraw):
            BY_NAME[name].draw(self.driver, draws)

    @contextmanager
    def _kept(self) -> Iterator[None]:
        """Remember what the block raises (once per example) before Hypothesis sees it."""
        try:
            yield
        except Exception as raised:
            if len(self.kit.raised) < KEPT and not any(
                    world is self.world for _, world in self.kit.raised):
                self.kit.raised.append((raised, self.world))
            raise

    @invariant()
    def sequences_never_reused(self) -> None:
        """Within a space, every item sequence the kit has seen is distinct (P06)."""
        with self._kept(), self.world.ledger.checking("invariant sequences_never_reused"):
            self._sequences_never_reused()

    def _sequences_never_reused(self) -> None:
        for items in self.world.model.items.values():
            seen = [item.sequence for item in items if item.sequence is not None]
            self.world.check("WP-FEED-1", len(seen) == len(set(seen)), "a sequence was used twice",
                             sequences=seen)

    def teardown(self) -> None:
        """Every live view and every published revision must equal the model at the end of
        the example (where the run checks what those reads check)."""
        kit = self.kit
        kit.steps += sum("by" not in command for command in self.world.commands)
        if kit.trace is not None:
            kit.trace.append([_line(c) for c in self.world.commands])
        if kit.on_example is not None:
            kit.on_example(kit)
        with self._kept():
            for wanted, rereads in ((VIEWS, view_rereads), (REVISIONS, revision_rereads)):
                if kit.wants(wanted):
                    for command, args in rereads(self.world):
                        self.world.perform(command, args)


def _line(command: dict[str, Any]) -> str:
    return json.dumps([command["command"], command["args"]], sort_keys=True, default=str)


def machine_for(kit: KitRun) -> type[WaypostMachine]:
    """The machine class of one run (Hypothesis makes an instance per example)."""
    return type("WaypostMachine", (WaypostMachine,), {"kit": kit})
