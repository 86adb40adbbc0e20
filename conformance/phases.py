"""The phases of a kit run, one shape for all: the limit phase, the exploration (the stateful
command model under Hypothesis), P17 (the consumer matrix), the hostile-input phase and the
fuzz phase, in the order :data:`PHASES` runs them (:func:`waypost.conformance.runner.run`).

A phase has a name (as the run's progress shows it), says what it needs of a target beyond
the data plane, whether ``--only`` keeps it, and whether this run runs it; :meth:`Phase.run`
puts its rows into the run's report and returns its failures by property. The run merges them
in phase order (the first failure found of a property is the one reported)."""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import httpx
from hypothesis import HealthCheck, Verbosity, settings
from hypothesis import Phase as HypothesisPhase
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import Flaky, FlakyFailure, FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test

from waypost.conformance import consumer_matrix, hostile_phase
from waypost.conformance.profiles import Profile
from waypost.conformance.run_results import (
    HOSTILE,
    Failures,
    LimitOutcome,
    PropertyResult,
    Report,
    leaf_failures,
    write_replay,
)
from waypost.conformance.workers import Share, run_workers, shares
from waypost.properties.commands.control import published_limits, setup
from waypost.properties.commands.provisioned import setup_args
from waypost.properties.commands.server_wide import ServerWide
from waypost.properties.commands.world import World
from waypost.properties.limits.registry import NOT_INPUT, check_limit, registry, unreachable
from waypost.properties.model.fixture_sets import Fixtures, FixturesExhausted
from waypost.properties.rules import step_budget
from waypost.properties.rules.hypothesis_hooks import seed_only_draws, shrinking_budget
from waypost.properties.rules.machine import KitRun, machine_for
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.bounds import Bounds
from waypost.properties.wire.http import NeedsAdmin, Session

if TYPE_CHECKING:
    from waypost.conformance.fuzz import FuzzReport
    from waypost.conformance.kit_command import Progress


@dataclass
class RunContext:
    """What every phase of one run reads: the target, the run's choices, its report."""

    report: Report
    kit: KitRun
    client: httpx.Client
    admin_token: str
    profile: Profile
    seed: int
    wanted: set[str] | None  # the properties --only selects (None: all)
    expected: dict[str, str]  # expected failures: property → reason
    replay_dir: Path
    shrink_seconds: float
    progress: Progress | None = None
    fixtures: Fixtures | None = None  # a run without the admin API
    bounds: Bounds | None = None  # those of the client's transport, for P17's own clients
    fuzz: Callable[[], FuzzReport] | None = None
    failures: Failures = field(default_factory=dict)
    workers: int = 1  # the exploration's workers (conformance/workers.py)
    worker: int | None = None  # only this worker of them (a rerun of its failure)
    hostile_row: PropertyResult | None = None  # the hostile-input phase's row


class Phase(Protocol):
    """One phase of a run."""

    name: str
    #: what it needs of the target beyond the data plane ("" for nothing)
    needs: str
    #: whether ``--only`` keeps it (it checks the selected properties only)
    kept_by_only: bool
    #: whether it may run beside the exploration (a run of several workers): each of its
    #: checks holds the workers' gate (``properties/commands/server_wide.py``)
    beside: bool

    def runs(self, ctx: RunContext) -> bool:
        """Whether this run runs it (a phase that does not run leaves no row of its own)."""

    def run(self, ctx: RunContext) -> Failures:
        """Run it: its rows into ``ctx.report``; its failures by property."""


class Limits:
    """Every limit the target publishes, at its boundary (:func:`limit_phase`)."""

    name, needs, kept_by_only, beside = "limits", "", True, True

    def runs(self, ctx: RunContext) -> bool:
        return True

    def run(self, ctx: RunContext) -> Failures:
        failures: Failures = {}
        report = ctx.report

        found: dict[str, Failures] = {}  # by limit: its checks may run at once

        def failed(error: BaseException, world: World) -> str:
            violation = error if isinstance(error, PropertyViolation) else None
            step = str(world.commands[-1]["args"].get("limit", "setup"))  # or its setup
            path = write_replay(ctx.replay_dir, report, violation, error, world,
                                f"limit-{step}-")
            found[step] = {violation.pid if violation else "ERROR": (violation, error, path)}
            return str(path)

        report.limits = limit_phase(ctx.kit.session, f"{report.run_id}-lim", ctx.kit.ledger,
                                    ctx.wanted, failed, light=report.profile == "quick",
                                    workers=ctx.workers, shared=ctx.kit.shared)
        for row in report.limits:  # the first limit's failure of a property is reported
            for pid, failure in found.get(row.name, {}).items():
                failures.setdefault(pid, failure)
        for step in found.keys() - {row.name for row in report.limits}:  # a setup's
            for pid, failure in found[step].items():
                failures.setdefault(pid, failure)
        return failures


Failed = Callable[[BaseException, World], str]  # writes a replay file, returns its path


def limit_phase(session: Session, prefix: str, ledger: Ledger, selected: set[str] | None,
                on_failure: Failed, light: bool = False, workers: int = 1,
                shared: ServerWide | None = None) -> list[LimitOutcome]:
    """Check every limit the target publishes, each in a fresh example of its own (``workers``
    of them at once, each with a session of its own); a limit the kit knows and the target
    does not publish is reported, never guessed. ``light`` (the quick profile) leaves the heavy
    checks to the longer profiles and says so."""
    shared = shared or ServerWide()
    with shared.command():  # beside the exploration: no armed fault of the proxy meets it
        published = published_limits(session.describe().json)
    known = registry()
    names = [*known, *NOT_INPUT, *sorted(set(published) - set(known) - set(NOT_INPUT))]
    rows: list[LimitOutcome] = []
    checks: list[tuple[World, LimitOutcome]] = []
    for n, name in enumerate(names):
        limit = known.get(name)
        row = LimitOutcome(name, published.get(name), limit.properties if limit else (), "", "",
                           "not checked", NOT_INPUT.get(name, "the kit has no check for it"))
        if name not in published:
            row.result, row.note = "not published", "describe publishes no value for it"
        elif limit is not None and selected is not None and not selected & set(
                limit.properties):
            row.result, row.note = "skipped", ""
        elif (why := unreachable(name, published[name], published)) is not None:
            row.note = why
        elif limit is not None and limit.heavy and light:
            row.note = (f"{limit.what}: the ci and thorough profiles check it (it moves about "
                        f"{published[name] * 8 // (1 << 20)} MiB)")
        elif limit is not None:
            row.note = limit.what
            checks.append((World(session.for_another_thread(), f"{prefix}-l{n}-", ledger,
                                 shared), row))
        rows.append(row)
    with ThreadPoolExecutor(max(1, workers), thread_name_prefix="waypost-kit-limit") as pool:
        list(pool.map(lambda check: _check(check[0], check[1], on_failure), checks))
    return rows


def _check(world: World, row: LimitOutcome, on_failure: Failed) -> None:
    """Run one limit's check; the row says what each step showed."""
    assert row.value is not None
    try:
        world.perform(setup, setup_args(world))
        world.perform(check_limit, {"limit": row.name, "value": row.value})
    except (NeedsAdmin, FixturesExhausted) as missing:  # a run through fixtures
        row.result, row.note = "not run", str(missing)
        return
    except Exception as error:  # a violation, or an error of the kit or the server
        row.replay = on_failure(error, world)
        row.note = str(error)[:300]
        row.result = "fail"
    marks = {True: "accepted", False: "FAIL", None: "not reached"}
    row.at_limit = marks[world.boundary.get("at")]
    row.over_limit = {**marks, True: "refused"}[world.boundary.get("over")]
    if row.result != "fail":
        row.result = "pass" if all(world.boundary.get(s) for s in ("at", "over")) else "xfail"


#: The health checks that do not apply to a kit run; the others stay on. Every example is two
#: fresh spaces and dozens of HTTP requests (too_slow measures nothing of the kit's own), and
#: a long run of steps may fill Hypothesis's buffer (data_too_large, large_base_example: the
#: smallest example is already a setup of two spaces).
NOT_APPLICABLE = [HealthCheck.too_slow, HealthCheck.data_too_large,
                  HealthCheck.large_base_example]


class Exploration:
    """The stateful command model under Hypothesis, seeded; each failure it ends with, by
    property. A run without shrinking (a budget of 0) reports a failure as first found:
    shrinking stops on a clock, so only such a run names the same failure on a busy machine
    as on an idle one."""

    name, needs, kept_by_only, beside = "exploration", "", True, False

    def runs(self, ctx: RunContext) -> bool:
        return True

    def run(self, ctx: RunContext) -> Failures:
        kit, profile = ctx.kit, ctx.profile
        if not kit.rules or profile.examples < 1:  # no rule selected (P17), no fixture set left
            return {}
        plans = shares(ctx.seed, profile.examples, ctx.workers, ctx.worker)
        ctx.report.workers = ctx.workers
        with shrinking_budget(ctx.shrink_seconds), seed_only_draws():
            if len(plans) == 1 and plans[0].workers == 1:
                return self._explore(ctx, kit, plans[0])
            found = run_workers(kit, plans, lambda k, share: self._explore(ctx, k, share),
                                ctx.progress)
        failures: Failures = {}
        for _kit, worker_failures in found:  # the first worker's failure of a property wins
            for pid, failure in worker_failures.items():
                failures.setdefault(pid, failure)
        return failures

    def _explore(self, ctx: RunContext, kit: KitRun, share: Share) -> Failures:
        """One worker's share of the examples, under Hypothesis with the worker's seed."""
        failures: Failures = {}
        shrink = ctx.shrink_seconds > 0
        machine = hypothesis_seed(share.seed)(machine_for(kit))
        try:
            run_state_machine_as_test(machine, settings=settings(
                max_examples=share.examples,
                stateful_step_count=step_budget(ctx.profile.steps, kit.rules), deadline=None,
                database=None, suppress_health_check=NOT_APPLICABLE,
                phases=[HypothesisPhase.generate,
                        *([HypothesisPhase.shrink, HypothesisPhase.explain] if shrink
                          else [])],
                # The run's own report and replay files tell a failure; Hypothesis's
                # printed notes (its blob, its "five minutes" shrinking warning) would
                # only mislead.
                verbosity=Verbosity.quiet))
        except Exception as raised:  # every failure is reported, none swallowed
            for failure, world, timing in _underlying(raised, kit):
                if isinstance(failure, FixturesExhausted):
                    continue  # the run's fresh spaces are used up: exploration ends there
                violation = failure if isinstance(failure, PropertyViolation) else None
                pid = violation.pid if violation else "ERROR"
                if pid in failures:
                    continue  # the first failure of a property is the one reported
                path = write_replay(ctx.replay_dir, ctx.report, violation, failure, world,
                                    name=f"{share.prefix}-" if share.prefix else "",
                                    worker=share, timing=timing)
                failures[pid] = (violation, failure, path)
        return failures


def _underlying(raised: Exception,
                kit: KitRun) -> list[tuple[BaseException, World | None, bool]]:
    """What an exploration ended with, each with the world it happened in and whether it
    depends on timing. Where Hypothesis says only that the same draws behaved differently (a
    failure at one step of one run and not of the next), the failure is the first one the
    examples raised; where it found a failure it could not repeat, that failure."""
    found: list[tuple[BaseException, World | None, bool]] = []
    flaky = isinstance(raised, FlakyFailure)  # its leaves: the failures that did not repeat
    for failure in leaf_failures(raised):
        if isinstance(failure, FlakyStrategyDefinition):
            found.append((*kit.raised[0], True) if kit.raised else (failure, kit.last, True))
        else:
            found.append((failure, kit.last, flaky or isinstance(failure, Flaky)))
    return found


class ConsumerMatrix:
    """P17: the reference consumer, crashed at each fault point of each flow (a quick run
    samples the points)."""

    name, needs, kept_by_only, beside = "P17", "the admin API", True, True

    def runs(self, ctx: RunContext) -> bool:
        return ctx.fixtures is None

    def run(self, ctx: RunContext) -> Failures:
        points = consumer_matrix.POINTS
        if ctx.profile.consumer_points is not None:
            points = tuple(random.Random(ctx.seed).sample(points, ctx.profile.consumer_points))
            ctx.report.consumer_sample = points
        matrix = consumer_matrix.for_run(
            ctx.client, ctx.admin_token, ctx.kit.ledger, ctx.wanted, ctx.replay_dir,
            ctx.report.run_id, points=points,
            on_cell=ctx.progress.cell if ctx.progress is not None else None, bounds=ctx.bounds,
            workers=ctx.workers)
        failures: Failures = {pid: cells for pid, cells in matrix.items()}
        return failures


class HostileInput:
    """The hostile-input phase as one row: skipped with ``--only``, not run through fixtures
    (each check provisions a fresh space of its own). A failed check's exchanges go to the
    replay directory, and the row names the first such file."""

    name, needs, kept_by_only, beside = "hostile", "the admin API", False, True

    def runs(self, ctx: RunContext) -> bool:
        return True  # its row says why it did not run, where it did not

    def run(self, ctx: RunContext) -> Failures:
        report = ctx.report
        if ctx.wanted is not None and not self.kept_by_only:
            ctx.hostile_row = PropertyResult(HOSTILE, "skipped")
        elif ctx.fixtures is not None:
            ctx.hostile_row = PropertyResult(
                HOSTILE, "not run", message=f"needs {self.needs} (a fresh space per check)")
        else:
            report.hostile = hostile_phase.run_checks(ctx.client, ctx.admin_token,
                                                      f"{report.run_id}-h",
                                                      replay_dir=ctx.replay_dir,
                                                      workers=ctx.workers)
            result, note = hostile_phase.summary(report.hostile)
            row = PropertyResult(
                HOSTILE, result, sum(row.inputs for row in report.hostile), note,
                expected_reason=ctx.expected.get("HOSTILE", ""),
                replay=next((row.replay for row in report.hostile if row.replay), None))
            if "HOSTILE" in ctx.expected:
                row.result = "xfail" if result == "fail" else "xpass"
            ctx.hostile_row = row
        return {}


class Fuzz:
    """Contract fuzzing (``conformance/fuzz.py``), when the command line asks for it."""

    name, needs, kept_by_only, beside = "fuzz", "the admin API", False, False

    def runs(self, ctx: RunContext) -> bool:
        return ctx.fuzz is not None

    def run(self, ctx: RunContext) -> Failures:
        assert ctx.fuzz is not None
        ctx.report.fuzz = ctx.fuzz()
        return {}


#: The phases of a run, in order.
PHASES: tuple[Phase, ...] = (Limits(), Exploration(), ConsumerMatrix(), HostileInput(), Fuzz())
