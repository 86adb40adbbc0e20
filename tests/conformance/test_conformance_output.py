"""What a kit run shows while it runs (``kit_command.Progress``): a progress line that never
counts past its plan, gives the time elapsed and an estimate of what remains (the phase's, from
the examples or cells done against those planned, then the phases to come), and speaks of
shrinking or discarded examples only once something failed. The clock is the test's: no
sleeps, no timed assertions."""

from __future__ import annotations

import io
from types import SimpleNamespace

import httpx
import pytest

from waypost.conformance import kit_command
from waypost.conformance.consumer_matrix import Cell
from waypost.conformance.kit_command import Progress, duration
from waypost.conformance.runner import Progress as RunnerProgress
from waypost.properties.rules.machine import KitRun
from waypost.properties.verdicts.violations import Ledger
from waypost.properties.wire.http import Session


class Clock:
    """``time.monotonic`` for the module under test: moved by the test only."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    ticking = Clock()
    monkeypatch.setattr(kit_command, "time", SimpleNamespace(monotonic=ticking.monotonic))
    return ticking


def kit_run(enforced: set[str] | None = None) -> KitRun:
    return KitRun(Session(httpx.Client(), "admin"), "run", Ledger(enforced))


def test_the_runner_shows_the_same_progress() -> None:
    assert RunnerProgress is Progress  # runner.run's callers (waypost bench kit) name it there


def test_progress_says_when_hypothesis_runs_more_than_planned(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, planned=80)
    kit = kit_run()
    for examples in (10, 80, 90):
        clock.now += 10
        kit.examples, kit.steps = examples, examples * 50
        progress(kit)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("example 10 of 80 planned: 10 s elapsed, ~1 min 10 s left to explore; "
                        "500 steps, 0 checks, 50 steps/s")
    assert lines[1].startswith("example 80 of 80 planned: ")
    assert lines[2].startswith("example 90 (80 planned + 10 more): ")
    # nothing failed: no word of shrinking or discarding
    assert "shrink" not in out.getvalue()
    assert "discard" not in out.getvalue()


def test_progress_shows_elapsed_time_and_what_remains(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, planned=80, later=("P17", "hostile", "fuzz"), cells=21,
                        started=clock.now - 3)
    kit = kit_run()
    clock.now += 5  # the limit phase
    progress.exploring(kit)
    clock.now += 20
    kit.examples, kit.steps = 10, 400
    kit.ledger.checks["P06"] = 1200
    progress(kit)
    assert out.getvalue() == (
        "example 10 of 80 planned: 28 s elapsed, ~2 min 20 s left to explore, then P17's "
        "consumer matrix (21 cells), hostile-input phase, fuzz phase; 400 steps, 1200 checks, "
        "20 steps/s\n")
    kit.examples = 80
    progress(kit)
    assert out.getvalue().splitlines()[-1].startswith(
        "example 80 of 80 planned: 28 s elapsed, ending the exploration, then P17's")

    clock.now += 2
    progress.phase("P17")
    clock.now += 6
    progress.cell(3, 21, Cell("sync", "ack.before_submit", ok=True))
    clock.now += 2
    progress.cell(21, 21, Cell("outbound", "send.after_commit", ok=False))
    progress.phase("hostile")
    progress.phase("hostile")  # shown once
    clock.now += 61
    progress.phase("fuzz")
    progress.phase("P17")  # a phase no longer to come, or never planned: nothing shown
    assert out.getvalue().splitlines()[2:] == [
        "P17's consumer matrix (21 cells): 30 s elapsed, then hostile-input phase, fuzz phase",
        "P17 consumer matrix: cell 3 of 21 (sync × ack.before_submit); 36 s elapsed, "
        "~36 s left in the matrix, then hostile-input phase, fuzz phase",
        "P17 consumer matrix: cell 21 of 21 (outbound × send.after_commit): FAILED; 38 s "
        "elapsed, the matrix done, then hostile-input phase, fuzz phase",
        "hostile-input phase: 38 s elapsed, then fuzz phase",
        "fuzz phase: 1 min 39 s elapsed, the last phase",
    ]


def test_progress_speaks_of_shrinking_only_once_something_failed(clock: Clock) -> None:
    out = io.StringIO()
    progress = Progress(out, planned=20, shrink_seconds=60)
    kit = kit_run(enforced={"P06", "P03"})
    kit.ledger.failed["P10"] = 2  # a failure only recorded (P10 not selected): no failure
    kit.ledger.failed["P03"] = 1  # the limit phase's: before the exploration, not shrunk
    progress.exploring(kit)
    kit.examples = 10
    progress(kit)
    assert "shrink" not in out.getvalue()
    assert "failed" not in out.getvalue()
    for examples in (11, 12, 13, 19, 20, 25):
        kit.examples = examples
        kit.ledger.failed["P06"] += examples == 13  # example 13 fails
        progress(kit)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # not a terminal: every tenth example
    assert lines[1].startswith("example 20 of 20 planned: ")
    assert "P06 failed at example 13: shrinking it for at most 1 min 0 s" in lines[1]
    kit.examples = 30
    progress(kit)
    assert out.getvalue().splitlines()[2].startswith(
        "example 30 (20 planned + 10 discarded or shrinking): ")

    unshrunk = io.StringIO()
    no_budget = Progress(unshrunk, planned=20, shrink_seconds=0)
    no_budget.exploring(kit_run())
    failing = kit_run()
    failing.ledger.failed["P06"], failing.examples = 1, 10
    no_budget(failing)
    assert "P06 failed at example 10 (not shrunk: --shrink-seconds 0)" in unshrunk.getvalue()
    assert "shrinking" not in unshrunk.getvalue()


def test_a_terminal_sees_one_line_rewritten_and_the_phases_below_it(clock: Clock) -> None:
    out = Terminal()
    progress = Progress(out, planned=15, later=("hostile",))
    kit = kit_run()
    progress.exploring(kit)
    for examples in (1, 2):
        kit.examples = examples
        clock.now += 1
        progress(kit)
    progress.phase("hostile")
    shown = out.getvalue()
    assert shown.count("\r") == 2
    assert shown.count("\n") == 2
    first, second = shown.split("\r")[1:]
    assert len(second.split("\n")[0]) >= len(first)  # padded over the last
    assert shown.endswith("\nhostile-input phase: 2 s elapsed, the last phase\n")


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0 s"), (41.4, "41 s"), (59.6, "1 min 0 s"),
                                                (161, "2 min 41 s"), (3900, "1 h 5 min")])
def test_durations_read_as_a_person_says_them(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown
