"""Run the kit against a target: the limit phase, the stateful command model under a profile and
seed, P17 (the consumer matrix), the hostile-input phase, and the fuzz phase when the command
line asks for it (the ci and thorough profiles), in that order; with progress on stderr,
per-property results, replay files for failures. ``--only`` skips the hostile-input and fuzz
phases; a run through fixtures runs neither they nor P17 (:func:`run`)."""

from __future__ import annotations

import json
import random
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import httpx
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import run_state_machine_as_test

from waypost.conformance import consumer_matrix
from waypost.conformance import hostile_phase as hostile
from waypost.conformance import requirement_table as coverage
from waypost.conformance.fixtures_file import NEEDS, fixture_rules, not_run
from waypost.conformance.hypothesis_hooks import seed_only_draws, shrinking_budget
from waypost.conformance.kit_command import Progress as Progress  # what a run shows meanwhile
from waypost.conformance.profiles import PROFILES, Profile
from waypost.conformance.report_file import PHASE_NAMES
from waypost.conformance.targets import Identity, check_target, identity
from waypost.properties.commands.world import World
from waypost.properties.contract.consumer import PID as CONSUMER_PID
from waypost.properties.coverage.catalogue import CATALOGUE, Property
from waypost.properties.coverage.command_names import COMMANDS
from waypost.properties.limits.phase import LimitOutcome, limit_phase
from waypost.properties.model.fixture_sets import Fixtures, FixturesExhausted
from waypost.properties.rules import rules_for, step_budget
from waypost.properties.rules.machine import KitRun, machine_for
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.bounds import Bounds
from waypost.properties.wire.http import Session
from waypost.properties.wire.proxy import FaultProxy
from waypost.properties.wire.untrusted import excerpt, visible

if TYPE_CHECKING:
    from waypost.conformance.fuzz import FuzzReport


@dataclass
class Outcome:
    """One property's result in a run."""

    prop: Property
    result: str  # pass, fail, xfail, xpass, incomplete, skipped, not run
    checks: int = 0  # checks of it made in this run
    message: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    replay: str | None = None
    expected_reason: str = ""
    failed: int = 0  # of its checks, those that failed


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
    rules: list[str] = field(default_factory=list)  # the rules the run's steps drew from
    limits: list[LimitOutcome] = field(default_factory=list)  # the limit phase, by limit
    commands: list[list[str]] | None = None  # per example, its commands (when traced)
    hostile: list[hostile.HostileRow] = field(default_factory=list)  # the hostile-input phase
    fuzz: FuzzReport | None = None  # the fuzz phase (ci and thorough runs of the CLI)
    requirements: list[coverage.Row] = field(default_factory=list)  # by requirement id
    #: the consumer's fault points P17 sampled (a quick run), or None: all of them
    consumer_sample: tuple[str, ...] | None = None
    started: str = ""  # when the run started: UTC, ISO 8601 to the second
    identity: Identity = field(default_factory=Identity)  # what its /v1/describe says it is

    @property
    def failed(self) -> bool:
        return any(o.result == "fail" for o in self.outcomes) or bool(
            self.fuzz and self.fuzz.failed)


#: The expected failures the kit ships for its own targets (``sqlite.json``, ``d1.json``).
EXPECTED_DIR = Path(__file__).resolve().parent / "expected_failures"


def load_expected(path: Path | None) -> dict[str, str]:
    """An expected-failures file: ``[{"property": "P07", "reason": "…"}]`` → {pid: reason}."""
    if path is None or not path.exists():
        return {}
    entries = json.loads(path.read_text())
    return {entry["property"].upper(): entry["reason"] for entry in entries}


def expected_for(path: Path | None, target: str) -> dict[str, str]:
    """The expected failures of a run: ``--expected-failures`` if given, else the kit's own
    file for ``sqlite`` and ``d1`` (none for a URL)."""
    if path is None and target in ("sqlite", "d1"):
        path = EXPECTED_DIR / f"{target}.json"
    return load_expected(path)


def _failures(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _failures(inner)]
    return [error]


def write_replay(directory: Path, report: Report, violation: PropertyViolation | None,
                 error: BaseException, world: World | None, name: str = "") -> Path:
    """The failing example as a JSON replay: its commands (rerun deterministically) and the
    HTTP exchanges it made, with the model's complaint; ``name`` tells a limit check's file
    from the exploration's."""
    directory.mkdir(parents=True, exist_ok=True)
    pid = violation.pid if violation else "ERROR"
    path = directory / f"{report.run_id}-{name}{pid}.json"
    evidence = violation.evidence if violation else {}
    path.write_text(json.dumps({  # bounded: a server's answers are excerpts, never whole
        "format": "waypost-replay/1",
        "property": pid,
        "message": excerpt(violation.message if violation else repr(error)),
        "evidence": {key: excerpt(value) for key, value in evidence.items()},
        "target": report.target, "profile": report.profile, "seed": report.seed,
        "commands": violation.commands if violation else (world.commands if world else []),
        "exchanges": violation.exchanges if violation else (
            [e.as_json() for e in world.session.trace] if world else []),
    }, indent=2, default=str) + "\n")
    return path


def run(target_name: str, client: httpx.Client, admin_token: str, *, profile: str = "ci",
        seed: int | None = None, selected: list[Property] | None = None,
        expected: dict[str, str] | None = None, replay_dir: Path = Path("waypost-replays"),
        progress: Progress | None = None, shrink_seconds: float | None = None,
        proxy: FaultProxy | None = None, trace: bool = False,
        fixtures: Fixtures | None = None,
        fuzz: Callable[[], FuzzReport] | None = None, bounds: Bounds | None = None) -> Report:
    """Run the command model; every property ends as pass, fail, xfail, xpass, incomplete,
    skipped or not run. ``proxy`` (the transport of ``client``) injects network faults where
    the target has no fault points; ``trace`` keeps each example's commands in the report;
    ``shrink_seconds`` bounds shrinking a failure (0: report it as first found, the same on any
    machine, as the tests of broken servers do). With ``fixtures`` (and an empty
    ``admin_token``) the run sends no admin request: each example and limit check takes a
    fresh set, the rules of the control plane, the hooks and P17 do not run, nothing is
    shrunk (conformance/fixtures_file.py). A target that cannot be reached, or refuses the admin
    token, raises ``TargetError`` before anything runs. ``bounds`` are those of ``client``'s
    transport, for the clients P17 makes (properties/wire/bounds.py)."""
    check_target(client, admin_token)
    chosen = PROFILES[profile]
    seed = random.randrange(2**32) if seed is None else seed
    report = Report(target_name, profile, seed, f"run{secrets.token_hex(4)}",
                    started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    identity=identity(client))
    expected = expected or {}
    wanted = None if selected is None else {p.pid for p in selected}
    rules = rules_for(wanted) if fixtures is None else fixture_rules(rules_for(wanted))
    ledger = Ledger(enforced=(wanted or {p.pid for p in CATALOGUE}) - set(expected))
    kit = KitRun(Session(client, admin_token, proxy=proxy, fixtures=fixtures, ledger=ledger),
                 report.run_id, ledger, rules, wanted, trace=[] if trace else None,
                 on_example=progress)
    report.rules = [rule.name for rule in kit.rules]
    started = time.monotonic()
    failures = _limits(kit, replay_dir, report)
    budget = chosen.shrink_seconds if shrink_seconds is None else shrink_seconds
    if fixtures is not None:  # a shrink step, and the last rerun of a failure, take a set each
        budget, chosen = 0, replace(chosen, examples=min(chosen.examples, fixtures.left - 1))
    _starts(progress, "exploration", kit)
    with shrinking_budget(budget):
        explored = _explore(kit, chosen, seed, replay_dir, report, shrink=budget > 0)
    if fixtures is None:
        _starts(progress, "P17", kit)
        points = consumer_matrix.POINTS
        if chosen.consumer_points is not None:
            points = tuple(random.Random(seed).sample(points, chosen.consumer_points))
            report.consumer_sample = points
        matrix = consumer_matrix.for_run(  # P17: the reference consumer
            client, admin_token, kit.ledger, wanted, replay_dir, report.run_id,
            points=points, on_cell=progress.cell if progress is not None else None,
            bounds=bounds)
        for pid, cells in matrix.items():
            explored.setdefault(pid, cells)  # the exploration's own replay first
    for pid, found in explored.items():
        failures.setdefault(pid, found)
    _starts(progress, "hostile", kit)
    hostile_row = _hostile(client, admin_token, report, wanted, expected, fixtures is not None,
                           replay_dir)
    if fuzz is not None:  # the contract fuzz phase (conformance/fuzz.py), when the CLI asks
        _starts(progress, "fuzz", kit)
        report.fuzz = fuzz()
    report.seconds = time.monotonic() - started
    _results(report, kit, proxy, wanted, expected, failures, fixtures is not None, hostile_row)
    return report


def _starts(progress: Progress | None, phase: str, kit: KitRun) -> None:
    """Tell the run's progress that a phase starts: the exploration, then the later ones."""
    if progress is not None and phase == "exploration":
        progress.exploring(kit)
    elif progress is not None:
        progress.phase(phase)


def _results(report: Report, kit: KitRun, proxy: FaultProxy | None, wanted: set[str] | None,
             expected: dict[str, str], failures: Failures, through_fixtures: bool,
             hostile_row: Outcome) -> None:
    """What the run found: counts, fault sources, the property and requirement tables."""
    report.examples, report.steps, report.commands = kit.examples, kit.steps, kit.trace
    report.fault_sources = sorted(
        ({"test hooks"} if kit.session.hook_faults else set())
        | ({f"fault proxy ({', '.join(sorted(proxy.used))})"} if proxy and proxy.used else set()))
    report.outcomes = [_outcome(prop, kit, wanted, expected, failures) for prop in CATALOGUE]
    sampled = report.consumer_sample
    for outcome in report.outcomes:
        if sampled is not None and outcome.prop.pid == CONSUMER_PID and not (
                outcome.message):
            outcome.message = (f"a sample: point {', '.join(sampled)} of "
                               f"{len(consumer_matrix.POINTS)}, with every flow; "
                               "'waypost conformance consumer-matrix' runs them all")
    if through_fixtures:
        not_run(report.outcomes)
    report.outcomes.append(hostile_row)
    for row in report.hostile:  # the phase keeps its own results: into the run's ledger
        if row.result in ("pass", "fail"):
            kit.ledger.by_check[f"hostile {row.check.name}"] += max(row.inputs, 1)
        if row.result == "fail":
            kit.ledger.failed_checks.setdefault(f"hostile {row.check.name}", HOSTILE.pid)
    if report.fuzz is not None:
        for name, count in report.fuzz.by_check.items():
            kit.ledger.by_check[f"fuzz {name}"] += count
        for finding in report.fuzz.findings:
            kit.ledger.failed_checks.setdefault(f"fuzz {finding.check}", "FUZZ")
    report.requirements = requirement_rows(kit.ledger, wanted, expected,
                                           _needs(report, through_fixtures))
    incomplete(report.outcomes, report.requirements)
    if "ERROR" in failures:
        _, unexpected, path = failures["ERROR"]
        report.outcomes.append(Outcome(
            Property("ERROR", "Kit or server error"),
            "fail", 0, repr(unexpected), {}, str(path)))


Failures = dict[str, tuple[PropertyViolation | None, BaseException, Path]]


def _needs(report: Report, through_fixtures: bool) -> dict[str, str]:
    """What the checks that could not run here needed, by check name: the admin API and the
    hooks through fixtures; a target without test hooks for the hostile check that looks for
    them."""
    needs = dict(NEEDS) if through_fixtures else {}
    for row in report.hostile:
        if row.result == "not applicable" and row.check.name == "hooks_invisible":
            needs[f"hostile {row.check.name}"] = ("a target without test hooks ('waypost "
                                                  "conformance hostile' starts one)")
    return needs


def incomplete(outcomes: list[Outcome], rows: list[coverage.Row]) -> None:
    """A property passes only when every requirement id that defines it was checked in the
    run (docs/properties.md, "Requirements by property"); one whose checks passed while some
    of its ids did not run is ``incomplete``, naming them and why (ids the kit cannot check
    at all, ``not checked``, are the table's to explain)."""
    missing: dict[str, list[coverage.Row]] = {}
    for row in rows:
        if row.result == "not run" and row.requirement.prop:
            missing.setdefault(row.requirement.prop, []).append(row)
    for outcome in outcomes:
        left = missing.get(outcome.prop.pid)
        if left and outcome.result in ("pass", "xpass"):
            outcome.result = "incomplete"
            shown = "; ".join(f"{row.requirement.rid} ({row.note})" for row in left[:4])
            more = f"; and {len(left) - 4} more" if len(left) > 4 else ""
            outcome.message = (f"its checks passed, but {len(left)} of its requirements did "
                               f"not run: {shown}{more}")


def requirement_rows(ledger: Ledger, wanted: set[str] | None, expected: dict[str, str],
                     needs: dict[str, str] | None = None) -> list[coverage.Row]:
    """The requirement table of a run from its ledger; a failure under a property the run
    did not select is left out, as the property table leaves it out."""
    return coverage.table(ledger, wanted, frozenset(expected), needs)


def _limits(kit: KitRun, replay_dir: Path, report: Report) -> Failures:
    """The limit phase (``properties/limits/phase.py``): every published limit at its boundary,
    once per run; a failure is written as a replay of its own example."""
    failures: Failures = {}

    def failed(error: BaseException, world: World) -> str:
        violation = error if isinstance(error, PropertyViolation) else None
        name = str(world.commands[-1]["args"].get("limit", "setup")) + "-"
        path = write_replay(replay_dir, report, violation, error, world, f"limit-{name}")
        failures.setdefault(violation.pid if violation else "ERROR", (violation, error, path))
        return str(path)

    report.limits = limit_phase(kit.session, f"{report.run_id}-lim", kit.ledger, kit.selected,
                                failed, light=report.profile == "quick")
    return failures


#: The health checks that do not apply to a kit run; the others stay on. Every example is two
#: fresh spaces and dozens of HTTP requests (too_slow measures nothing of the kit's own), and
#: a long run of steps may fill Hypothesis's buffer (data_too_large, large_base_example: the
#: smallest example is already a setup of two spaces).
NOT_APPLICABLE = [HealthCheck.too_slow, HealthCheck.data_too_large,
                  HealthCheck.large_base_example]


def _explore(kit: KitRun, profile: Profile, seed: int, replay_dir: Path, report: Report, *,
             shrink: bool = True) -> Failures:
    """Run the machine under Hypothesis; each failure it ends with, by property. Without
    ``shrink`` a failure is reported as first found: shrinking stops on a clock, so only a run
    without it names the same failure on a busy machine as on an idle one."""
    failures: Failures = {}
    if not kit.rules or profile.examples < 1:  # no rule selected (P17), no fixture set left
        return failures  # nothing selected has a rule (P17): no example to run
    machine = hypothesis_seed(seed)(machine_for(kit))
    try:
        with seed_only_draws():
            run_state_machine_as_test(machine, settings=settings(
                max_examples=profile.examples,
                stateful_step_count=step_budget(profile.steps, kit.rules), deadline=None,
                database=None, suppress_health_check=NOT_APPLICABLE,
                phases=[Phase.generate, *([Phase.shrink, Phase.explain] if shrink else [])],
                # The run's own report and replay files tell a failure; Hypothesis's printed
                # notes (its blob, its "five minutes" shrinking warning) would only mislead.
                verbosity=Verbosity.quiet))
    except Exception as raised:  # every failure is reported, none swallowed
        for failure in _failures(raised):
            if isinstance(failure, FixturesExhausted):
                continue  # the run's fresh spaces are used up: exploration ends there
            violation = failure if isinstance(failure, PropertyViolation) else None
            path = write_replay(replay_dir, report, violation, failure, kit.last)
            failures[violation.pid if violation else "ERROR"] = (violation, failure, path)
    return failures


HOSTILE = Property("HOSTILE", PHASE_NAMES["HOSTILE"])


def _hostile(client: httpx.Client, admin_token: str, report: Report, wanted: set[str] | None,
             expected: dict[str, str], through_fixtures: bool, replay_dir: Path) -> Outcome:
    """The hostile-input phase as one row; skipped with ``--only``; not run through
    fixtures (each check provisions a fresh space of its own). A failed check's exchanges go
    to ``replay_dir``, and the row names the first such file."""
    if wanted is not None:
        return Outcome(HOSTILE, "skipped")
    if through_fixtures:
        return Outcome(HOSTILE, "not run", message="needs the admin API (a fresh space per check)")
    report.hostile = hostile.run_checks(client, admin_token, f"{report.run_id}-h",
                                        replay_dir=replay_dir)
    result, note = hostile.summary(report.hostile)
    outcome = Outcome(HOSTILE, result, sum(row.inputs for row in report.hostile), note,
                      expected_reason=expected.get("HOSTILE", ""),
                      replay=next((row.replay for row in report.hostile if row.replay), None))
    if "HOSTILE" in expected:
        outcome.result = "xfail" if result == "fail" else "xpass"
    return outcome


def _outcome(prop: Property, kit: KitRun, wanted: set[str] | None,
             expected: dict[str, str], failures: Failures) -> Outcome:
    """One property's line in the table: a property passes only if checks of it ran in this
    run and none failed; with no check of it it is ``not run``, never ``pass``."""
    outcome = Outcome(prop, "pass", kit.ledger.checks.get(prop.pid, 0),
                      expected_reason=expected.get(prop.pid, ""),
                      failed=kit.ledger.failed.get(prop.pid, 0))
    found = failures.get(prop.pid)
    recorded = kit.ledger.recorded.get(prop.pid)
    if wanted is not None and prop.pid not in wanted:
        outcome.result = "skipped"
    elif found is not None:
        violation, _, path = found
        outcome.result, outcome.replay = "fail", str(path)
        outcome.failed = max(outcome.failed, 1)
        if violation is not None:
            outcome.message, outcome.evidence = violation.message, violation.evidence
    elif recorded is not None:
        outcome.result = "xfail" if prop.pid in expected else "fail"
        outcome.message, outcome.evidence = recorded.message, recorded.evidence
    elif outcome.checks == 0:
        outcome.result, outcome.message = "not run", "no check of it ran in this run"
    elif prop.pid in expected:
        outcome.result = "xpass"
    return outcome


def replay_file(path: Path, client: httpx.Client, admin_token: str,
                out: TextIO = sys.stdout, proxy: FaultProxy | None = None,
                fixtures: Fixtures | None = None) -> PropertyViolation | None:
    """Rerun a replay file's commands against a target; return the violation it still shows.
    A replay of a run through fixtures names its set: it needs ``fixtures``, the same file,
    with that set fresh. A target that cannot be reached, or refuses the admin token, raises
    ``TargetError``."""
    recorded = json.loads(path.read_text())
    check_target(client, admin_token)
    ledger = Ledger()
    world = World(Session(client, admin_token, proxy=proxy, fixtures=fixtures, ledger=ledger),
                  f"rp{secrets.token_hex(3)}-", ledger)
    try:
        for step in recorded["commands"]:
            world.perform(COMMANDS[step["command"]], step["args"])
    except PropertyViolation as violation:
        out.write(visible(f"still failing: {violation}") + "\n")
        return violation
    except Exception as error:  # a crash of the kit or a refused provisioning still fails
        out.write(visible(f"still failing: {error!r}") + "\n")
        return PropertyViolation("ERROR", repr(error))
    out.write(visible(f"passes now: {len(recorded['commands'])} commands, no violation "
                      f"(recorded: {recorded['property']}: {recorded['message']})") + "\n")
    return None
