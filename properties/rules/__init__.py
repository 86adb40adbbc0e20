"""The rules of the state machine: each draws concrete arguments from the model and performs
commands of its area, calling the command functions themselves. ``RULES`` gives each its weight
in a step and the rules whose commands it needs first. What a rule performs is read from its
code (``properties/coverage/check_sites.py``), and the properties it exercises from the checks
of those commands, so ``--only`` draws only the rules its properties need."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from waypost.properties.coverage.check_sites import command_ids, performed
from waypost.properties.rules import acks, blobs, control, faults, feed, memory, messages, timing
from waypost.properties.rules import submissions as resubmissions
from waypost.properties.rules.driver import RuleDriver
from waypost.properties.rules.hypothesis_hooks import StepDraws
from waypost.properties.verdicts.owners import table

Draw = Callable[[RuleDriver, StepDraws], None]


@dataclass(frozen=True)
class MachineRule:
    """A rule of the state machine, one kind of step: how often it is drawn, what it needs
    first (a server's plan has rules of another kind: ``reference/storage/rules.py``)."""

    name: str
    weight: int
    draw: Draw
    needs: tuple[str, ...] = ()

    @cached_property
    def performs(self) -> frozenset[str]:
        """The commands this rule may perform, read from its code."""
        return performed(self.draw)

    @cached_property
    def exercises(self) -> frozenset[str]:
        """The properties checked by the commands this rule performs."""
        return properties_of(self.performs)


def properties_of(commands: Iterable[str]) -> frozenset[str]:
    """The properties that the checks of ``commands`` may name (read from the checks
    themselves: ``properties/coverage/check_sites.py``)."""
    ids, owner = command_ids(), table()
    return frozenset(owner[rid] for command in commands for rid in ids.get(command, ())
                     if owner.get(rid))


SENT = ("send",)  # rules reading what sends publish
#: The rules in the order a step draws from them (their weights keep publications, reads and
#: ACKs frequent: Hypothesis would favour rules by name order otherwise).
RULES: tuple[MachineRule, ...] = (
    MachineRule("send", 5, messages.send),
    MachineRule("ack", 4, acks.ack, needs=("read_feed",)),
    MachineRule("read_feed", 3, feed.read_feed, needs=SENT),
    MachineRule("check_view", 4, feed.check_view, needs=SENT),
    MachineRule("read_message", 2, messages.read_message),
    MachineRule("resubmit", 3, resubmissions.resubmit, needs=("ack",)),
    MachineRule("upload", 3, blobs.upload),
    MachineRule("memory", 6, memory.memory),
    MachineRule("fault", 2, faults.fault, needs=SENT),
    MachineRule("provision", 1, control.provision, needs=SENT),
    MachineRule("change_authority", 1, control.change_authority, needs=SENT),
    MachineRule("probe", 2, feed.probe, needs=("read_feed",)),
    # Rare and cheap: each costs a fraction of a second (properties/commands/timing.py).
    MachineRule("long_polls", 1, timing.long_polls),
    MachineRule("restart", 1, timing.restart, needs=SENT),
    MachineRule("late_retry", 1, timing.late_retry, needs=SENT),
)
BY_NAME = {rule.name: rule for rule in RULES}


def rules_for(selected: set[str] | None) -> tuple[MachineRule, ...]:
    """The rules exercising any of the ``selected`` properties (all when None), with the rules
    they need, in ``RULES`` order. A rule drawn only because another needs it keeps weight 1:
    it makes the state the selected rules act on, and at its full weight it would take most
    steps (``send`` under ``--only P18``)."""
    if selected is None:
        return RULES
    exercising = {rule.name for rule in RULES if rule.exercises & selected}
    chosen, pending = set(exercising), list(exercising)
    while pending:
        for need in BY_NAME[pending.pop()].needs:
            if need not in chosen:
                chosen.add(need)
                pending.append(need)
    return tuple(rule if rule.name in exercising else replace(rule, weight=1)
                 for rule in RULES if rule.name in chosen)


def weighted(rules: Iterable[MachineRule]) -> tuple[str, ...]:
    """MachineRule names repeated by weight: what one step samples from."""
    return tuple(name for rule in rules for name in (rule.name,) * rule.weight)


def step_budget(steps: int, rules: Iterable[MachineRule]) -> int:
    """The steps per example for a run drawing only ``rules``: each rule is drawn about as often
    as in a full run, so ``--only`` checks its properties as thoroughly in less time."""
    share = sum(rule.weight for rule in rules) / sum(rule.weight for rule in RULES)
    return max(10, min(steps, math.ceil(steps * share)))

