"""Run the kit against a target: each phase of :data:`~waypost.conformance.phases.PHASES` in
turn (the limit phase, the stateful command model under a profile and seed, P17, the
hostile-input phase, and the fuzz phase when the command line asks for it), with progress on
stderr; then the per-property and requirement tables, from what the phases checked and found
(:func:`run`). ``--only`` skips the hostile-input and fuzz phases; a run through fixtures runs
neither they nor P17. A replay file reruns one failure's commands (:func:`replay_file`)."""

from __future__ import annotations

import json
import random
import secrets
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import httpx

from waypost.conformance import consumer_matrix
from waypost.conformance import requirement_table as coverage
from waypost.conformance.fixtures_file import NEEDS, fixture_rules, not_run
from waypost.conformance.kit_command import Progress as Progress  # what a run shows meanwhile
from waypost.conformance.phases import PHASES, Phase, RunContext
from waypost.conformance.profiles import PROFILES
from waypost.conformance.run_results import HOSTILE, Failures, PropertyResult, Report
from waypost.conformance.targets import check_target, identity
from waypost.conformance.workers import one_ast_at_a_time
from waypost.properties.commands.world import World
from waypost.properties.contract.consumer import PID as CONSUMER_PID
from waypost.properties.coverage.catalogue import CATALOGUE, Property
from waypost.properties.coverage.command_names import COMMANDS
from waypost.properties.model.fixture_sets import Fixtures
from waypost.properties.rules import rules_for
from waypost.properties.rules.machine import KitRun
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.bounds import Bounds
from waypost.properties.wire.http import Session
from waypost.properties.wire.proxy import FaultProxy
from waypost.properties.wire.untrusted import visible

if TYPE_CHECKING:
    from waypost.conformance.fuzz import FuzzReport


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


def run(target_name: str, client: httpx.Client, admin_token: str, *, profile: str = "ci",
        seed: int | None = None, selected: list[Property] | None = None,
        expected: dict[str, str] | None = None, replay_dir: Path = Path("waypost-replays"),
        progress: Progress | None = None, shrink_seconds: float | None = None,
        proxy: FaultProxy | None = None, trace: bool = False,
        fixtures: Fixtures | None = None,
        fuzz: Callable[[], FuzzReport] | None = None, bounds: Bounds | None = None,
        workers: int = 1, worker: int | None = None) -> Report:
    """Run the command model; every property ends as pass, fail, xfail, xpass, incomplete,
    skipped or not run. ``proxy`` (the transport of ``client``) injects network faults where
    the target has no fault points; ``trace`` keeps each example's commands in the report;
    ``shrink_seconds`` bounds shrinking a failure (0: report it as first found, the same on any
    machine, as the tests of broken servers do). With ``fixtures`` (and an empty
    ``admin_token``) the run sends no admin request: each example and limit check takes a
    fresh set, the rules of the control plane, the hooks and P17 do not run, nothing is
    shrunk (conformance/fixtures_file.py). A target that cannot be reached, or refuses the admin
    token, raises ``TargetError`` before anything runs. ``bounds`` are those of ``client``'s
    transport, for the clients P17 makes (properties/wire/bounds.py). ``workers`` explore at
    once, each its share of the examples with a seed derived from ``seed``; ``worker`` runs
    that one of them alone (conformance/workers.py)."""
    check_target(client, admin_token)
    if fixtures is not None:  # each example takes a set: one worker keeps the file's count
        workers, worker = 1, None
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
    budget = chosen.shrink_seconds if shrink_seconds is None else shrink_seconds
    if fixtures is not None:  # a shrink step, and the last rerun of a failure, take a set each
        budget, chosen = 0, replace(chosen, examples=min(chosen.examples, fixtures.left - 1))
    ctx = RunContext(report, kit, client, admin_token, chosen, seed, wanted, expected,
                     replay_dir, budget, progress, fixtures, bounds, fuzz,
                     workers=workers, worker=worker)
    started = time.monotonic()
    with one_ast_at_a_time() if ctx.workers > 1 else nullcontext():
        found = _run_phases(ctx, progress)
    for phase in PHASES:  # the first phase's failure of a property is the one reported
        for pid, failure in found.get(phase.name, {}).items():
            ctx.failures.setdefault(pid, failure)
    report.seconds = time.monotonic() - started
    _results(ctx, proxy)
    return report


def _run_phases(ctx: RunContext, progress: Progress | None) -> dict[str, Failures]:
    """Each phase's failures, by phase. With several workers against a target without test
    hooks, the phases that may run beside the exploration (``Phase.beside``: each of their
    checks holds the workers' gate, so none meets a fault of the proxy) run in a thread of
    their own meanwhile. With hooks they wait: their checks would hold up every fault, clock
    move and restart of the exploration, which then runs slower than the phases save."""
    found: dict[str, Failures] = {}

    def run(phases: list[Phase]) -> None:
        for phase in phases:
            if phase.runs(ctx):
                _starts(progress, phase.name, ctx.kit)
                found[phase.name] = phase.run(ctx)

    beside = [phase for phase in PHASES if phase.beside] \
        if ctx.workers > 1 and not _test_hooks(ctx.client) else []
    if not beside:
        run(list(PHASES))
        return found
    exploration = PHASES.index(next(p for p in PHASES if p.name == "exploration"))
    with ThreadPoolExecutor(1, thread_name_prefix="waypost-kit-beside") as pool:
        alongside = pool.submit(run, beside)
        run([p for p in PHASES[:exploration + 1] if p not in beside])
        alongside.result()
    run([p for p in PHASES[exploration + 1:] if p not in beside])
    return found


def _test_hooks(client: httpx.Client) -> bool:
    """Whether the target says it has test hooks (``capabilities.test_hooks``)."""
    try:
        described = client.get("/v1/describe").json()
    except (httpx.HTTPError, ValueError):
        return True  # in doubt, the phases run one after another
    capabilities = described.get("capabilities") if isinstance(described, dict) else None
    return isinstance(capabilities, dict) and bool(capabilities.get("test_hooks"))


def _starts(progress: Progress | None, phase: str, kit: KitRun) -> None:
    """Tell the run's progress that a phase starts: the exploration (its clock), then the later
    ones (``Progress.phase`` shows only those it was told are planned: not the limit phase)."""
    if progress is not None and phase == "exploration":
        progress.exploring(kit)
    elif progress is not None:
        progress.phase(phase)


def _results(ctx: RunContext, proxy: FaultProxy | None) -> None:
    """What the run found: counts, fault sources, the property and requirement tables."""
    report, kit, wanted, expected = ctx.report, ctx.kit, ctx.wanted, ctx.expected
    failures, through_fixtures = ctx.failures, ctx.fixtures is not None
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
    assert ctx.hostile_row is not None  # the hostile phase always runs, if only to say why not
    report.outcomes.append(ctx.hostile_row)
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
        report.outcomes.append(PropertyResult(
            Property("ERROR", "Kit or server error"),
            "fail", 0, repr(unexpected), {}, str(path)))


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


def incomplete(outcomes: list[PropertyResult], rows: list[coverage.Row]) -> None:
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


def _outcome(prop: Property, kit: KitRun, wanted: set[str] | None,
             expected: dict[str, str], failures: Failures) -> PropertyResult:
    """One property's line in the table: a property passes only if checks of it ran in this
    run and none failed; with no check of it it is ``not run``, never ``pass``."""
    outcome = PropertyResult(prop, "pass", kit.ledger.checks.get(prop.pid, 0),
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


#: How often a replay whose failure depends on timing reruns its commands before it passes.
TIMING_ATTEMPTS = 5


def replay_file(path: Path, client: httpx.Client, admin_token: str,
                out: TextIO = sys.stdout, proxy: FaultProxy | None = None,
                fixtures: Fixtures | None = None) -> PropertyViolation | None:
    """Rerun a replay file's commands against a target; return the violation it still shows.
    A replay of a failure that depends on timing (its file says so) reruns them, in fresh
    spaces, up to :data:`TIMING_ATTEMPTS` times until it fails. A replay of a run through
    fixtures names its set: it needs ``fixtures``, the same file, with that set fresh. A target
    that cannot be reached, or refuses the admin token, raises ``TargetError``."""
    recorded = json.loads(path.read_text())
    check_target(client, admin_token)
    attempts = TIMING_ATTEMPTS if recorded.get("timing") and fixtures is None else 1
    for attempt in range(1, attempts + 1):
        found = _replay_once(recorded, client, admin_token, proxy, fixtures)
        if found is not None:
            violation, shown = found
            tried = f" (attempt {attempt} of {attempts}: it depends on timing)" \
                if attempts > 1 else ""
            out.write(visible(f"still failing{tried}: {shown}") + "\n")
            return violation
    tried = f" in {attempts} attempts (the failure depends on timing)" if attempts > 1 else ""
    out.write(visible(f"passes now{tried}: {len(recorded['commands'])} commands, no violation "
                      f"(recorded: {recorded['property']}: {recorded['message']})") + "\n")
    return None


def _replay_once(recorded: dict[str, Any], client: httpx.Client, admin_token: str,
                 proxy: FaultProxy | None, fixtures: Fixtures | None,
                 ) -> tuple[PropertyViolation, str] | None:
    """One rerun of the recorded commands in fresh spaces; the violation it shows, if any,
    and how to say it."""
    ledger = Ledger()
    world = World(Session(client, admin_token, proxy=proxy, fixtures=fixtures, ledger=ledger),
                  f"rp{secrets.token_hex(3)}-", ledger)
    try:
        for step in recorded["commands"]:
            world.perform(COMMANDS[step["command"]], step["args"])
    except PropertyViolation as violation:
        return violation, str(violation)
    except Exception as error:  # a crash of the kit or a refused provisioning still fails
        return PropertyViolation("ERROR", repr(error)), repr(error)
    return None
