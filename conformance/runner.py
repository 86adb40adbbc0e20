"""Run the kit against a target: the stateful command model under a profile and seed, with
progress on stderr, per-property results, replay files for failures."""

from __future__ import annotations

import json
import random
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import get_state_machine_test

from waypost.properties.catalogue import CATALOGUE, Property
from waypost.properties.http import Session
from waypost.properties.machine import Run, WaypostMachine
from waypost.properties.proxy import FaultProxy
from waypost.properties.violations import LEDGER, PropertyViolation
from waypost.properties.world import World


@dataclass(frozen=True)
class Profile:
    """How much to explore: examples (fresh spaces each) × steps per example, and how long
    Hypothesis may spend shrinking a failure (each shrink step reruns a whole example)."""

    examples: int
    steps: int
    shrink_seconds: float


PROFILES = {
    "quick": Profile(examples=15, steps=25, shrink_seconds=20),
    "ci": Profile(examples=80, steps=50, shrink_seconds=60),
    "thorough": Profile(examples=500, steps=80, shrink_seconds=300),
}


@dataclass
class Outcome:
    """One property's result in a run."""

    prop: Property
    result: str  # pass, fail, xfail, xpass, not covered, not run, not exercised
    checks: int = 0
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    replay: str | None = None
    expected_reason: str = ""


@dataclass
class Report:
    target: str
    profile: str
    seed: int
    run_id: str
    examples: int = 0
    steps: int = 0
    seconds: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)
    fault_sources: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(o.result == "fail" for o in self.outcomes)


def load_expected(path: Path | None) -> dict[str, str]:
    """An expected-failures file: ``[{"property": "P07", "reason": "…"}]`` → {pid: reason}."""
    if path is None or not path.exists():
        return {}
    entries = json.loads(path.read_text())
    return {entry["property"].upper(): entry["reason"] for entry in entries}


class Progress:
    """One line per example on a terminal (rewritten in place), every tenth elsewhere."""

    def __init__(self, out: TextIO, total: int) -> None:
        self.out, self.total, self.started = out, total, time.monotonic()
        self.tty = out.isatty()

    def __call__(self, examples: int, steps: int) -> None:
        if not self.tty and examples % 10:
            return
        rate = steps / max(time.monotonic() - self.started, 1e-9)
        line = (f"example {examples} (of up to {self.total}), {steps} steps, "
                f"{sum(LEDGER.checks.values())} checks, {rate:.0f} steps/s")
        self.out.write(("\r" + line + "   ") if self.tty else line + "\n")
        self.out.flush()


def _failures(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _failures(inner)]
    return [error]


def write_replay(directory: Path, report: Report, violation: PropertyViolation | None,
                 error: BaseException, world: World | None) -> Path:
    """The failing example as a JSON replay: its commands (rerun deterministically) and the
    HTTP exchanges it made, with the model's complaint."""
    directory.mkdir(parents=True, exist_ok=True)
    pid = violation.pid if violation else "ERROR"
    path = directory / f"{report.run_id}-{pid}.json"
    path.write_text(json.dumps({
        "format": "waypost-replay/1",
        "property": pid,
        "message": violation.message if violation else repr(error),
        "evidence": violation.evidence if violation else {},
        "target": report.target, "profile": report.profile, "seed": report.seed,
        "commands": violation.commands if violation else (world.commands if world else []),
        "exchanges": violation.exchanges if violation else (
            [e.as_json() for e in world.session.trace] if world else []),
    }, indent=2, default=str) + "\n")
    return path


def run(target_name: str, client: httpx.Client, admin_token: str, *, profile: str = "ci",
        seed: int | None = None, selected: list[Property] | None = None,
        expected: dict[str, str] | None = None, replay_dir: Path = Path("waypost-replays"),
        progress: Callable[[int, int], None] | None = None,
        shrink_seconds: float | None = None, proxy: FaultProxy | None = None) -> Report:
    """Run the command model; every property ends as pass, fail, xfail, xpass or not covered.
    ``proxy`` (the transport of ``client``) injects network faults where the target has no
    fault points."""
    chosen = PROFILES[profile]
    seed = random.randrange(2**32) if seed is None else seed
    report = Report(target_name, profile, seed, f"run{secrets.token_hex(4)}")
    expected = expected or {}
    wanted = {p.pid for p in (selected or CATALOGUE)}
    LEDGER.reset(enforced=wanted - set(expected))
    Run.session = Session(client, admin_token, proxy=proxy)
    Run.prefix = report.run_id
    counts = {"examples": 0, "steps": 0}

    class Counted(WaypostMachine):
        def __init__(self) -> None:
            super().__init__()
            counts["examples"] += 1

        def teardown(self) -> None:
            counts["steps"] += len(self.world.commands)
            if progress is not None:
                progress(counts["examples"], counts["steps"])
            super().teardown()

    test = get_state_machine_test(Counted, settings=settings(
        max_examples=chosen.examples, stateful_step_count=chosen.steps, deadline=None,
        database=None, suppress_health_check=list(HealthCheck), print_blob=True,
        phases=[Phase.generate, Phase.shrink, Phase.explain]))
    failures: dict[str, tuple[PropertyViolation | None, BaseException, Path]] = {}
    started = time.monotonic()
    # Hypothesis has no public setting for the shrinking budget; this module constant is it.
    budget = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = int(shrink_seconds if shrink_seconds is not None
                                       else chosen.shrink_seconds)
    try:
        hypothesis_seed(seed)(test)()
    except Exception as raised:  # every failure is reported, none swallowed
        for failure in _failures(raised):
            violation = failure if isinstance(failure, PropertyViolation) else None
            path = write_replay(replay_dir, report, violation, failure, Run.last)
            failures[violation.pid if violation else "ERROR"] = (violation, failure, path)
    finally:
        engine.MAX_SHRINKING_SECONDS = budget
    report.seconds = time.monotonic() - started
    report.examples, report.steps = counts["examples"], counts["steps"]
    report.fault_sources = sorted(
        ({"test hooks"} if Run.session.hook_faults else set())
        | ({f"fault proxy ({', '.join(sorted(proxy.used))})"} if proxy and proxy.used else set()))
    for prop in CATALOGUE:
        outcome = Outcome(prop, "pass", LEDGER.checks.get(prop.pid, 0),
                          expected_reason=expected.get(prop.pid, ""))
        found = failures.get(prop.pid)
        recorded = LEDGER.recorded.get(prop.pid)
        if prop.pid not in wanted:
            outcome.result = "not run"
        elif not prop.covered:
            outcome.result, outcome.message = "not covered", prop.reason
        elif found is not None:
            outcome.result, outcome.message = "fail", found[0].message if found[0] else ""
            outcome.evidence, outcome.replay = found[0].evidence if found[0] else {}, str(found[2])
        elif recorded is not None:
            outcome.result = "xfail" if prop.pid in expected else "fail"
            outcome.message, outcome.evidence = recorded.message, recorded.evidence
        elif prop.pid in expected:
            outcome.result = "xpass"
        elif outcome.checks == 0:
            outcome.result, outcome.message = "not exercised", "no check ran in this run"
        report.outcomes.append(outcome)
    if "ERROR" in failures:
        _, unexpected, path = failures["ERROR"]
        report.outcomes.append(Outcome(
            Property("ERROR", "Kit or server error", "An exception outside any property check",
                     (), True), "fail", 0, repr(unexpected), {}, str(path)))
    return report


def replay_file(path: Path, client: httpx.Client, admin_token: str,
                out: TextIO = sys.stdout, proxy: FaultProxy | None = None
                ) -> PropertyViolation | None:
    """Rerun a replay file's commands against a target; return the violation it still shows."""
    recorded = json.loads(path.read_text())
    LEDGER.reset()
    world = World(Session(client, admin_token, proxy=proxy), f"rp{secrets.token_hex(3)}-")
    try:
        for step in recorded["commands"]:
            world.run(step["command"], step["args"])
    except PropertyViolation as violation:
        out.write(f"still failing: {violation}\n")
        return violation
    except Exception as error:  # a crash of the kit or a refused provisioning still fails
        out.write(f"still failing: {error!r}\n")
        return PropertyViolation("ERROR", repr(error))
    out.write(f"passes now: {len(recorded['commands'])} commands, no violation "
              f"(recorded: {recorded['property']}: {recorded['message']})\n")
    return None
