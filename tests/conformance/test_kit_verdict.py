"""The verdict, the last line of every ``waypost conformance`` run: ``PASS: 18 of 20 rows pass,
2 incomplete (P13, P15) (seed 7, 1 min 5 s)`` (the rows that neither pass nor fail counted
apart), or ``FAIL: P07, P10 (seed 7, 1 min 5 s) — rerun: …`` with a command line that reruns
the run, quoted and escaped for a terminal. A run with ``--only`` says in its table what ran and
what was skipped, and why."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.properties.rules import test_kit_broken
from tests.support.inprocess import kit_client
from waypost import cli
from waypost.conformance import kit_run
from waypost.conformance import report as reports
from waypost.conformance.fuzz import FuzzReport
from waypost.conformance.run_results import HOSTILE, PropertyResult, Report
from waypost.conformance.targets import Target
from waypost.properties.coverage.catalogue import CATALOGUE, select
from waypost.properties.wire.bounds import Bounds

KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
ONLY = reports.Scope(("P03", "P06"), "not selected (--only)")


def run_of(results: dict[str, str], fuzz: bool = True) -> Report:
    """A run's report whose rows are ``results`` (by id; the others pass)."""
    report = Report("sqlite", "ci", 7, "run1")
    report.outcomes = [PropertyResult(p, results.get(p.pid, "pass"), checks=5) for p in CATALOGUE]
    report.outcomes.append(PropertyResult(HOSTILE, results.get("HOSTILE", "pass")))
    if fuzz:
        report.fuzz = FuzzReport("sqlite", "dev", 7, "fz1", requests=10)
    return report


def args_of(*words: str) -> Any:
    """``waypost conformance WORDS`` as the command line parses it."""
    line = ["conformance", *words]
    return cli.parser("conformance", line).parse_args(line)


def test_a_passing_run_says_how_many_rows_pass_its_seed_and_its_time() -> None:
    assert reports.verdict(run_of({}), reports.Scope(), 161, "") == \
        "PASS: 20 of 20 rows pass (seed 7, 2 min 41 s)"


def test_rows_that_neither_pass_nor_fail_are_counted_apart() -> None:
    report = run_of({"P13": "incomplete", "P15": "incomplete", "P07": "xfail", "P08": "not run"})
    assert not report.failed
    assert reports.verdict(report, reports.Scope(), 65, "") == (
        "PASS: 16 of 20 rows pass, 2 incomplete (P13, P15), 1 failed as expected (P07), "
        "1 not run (P08) (seed 7, 1 min 5 s)")


def test_a_failing_run_names_what_failed_and_how_to_rerun_it() -> None:
    report = run_of({"P07": "fail", "P10": "fail", "P13": "incomplete"})
    rerun = kit_run.rerun_command(args_of("--seed", "7"), [])
    assert reports.verdict(report, reports.Scope(), 65, rerun) == (
        "FAIL: P07, P10 (seed 7, 1 min 5 s) — rerun: waypost conformance --target sqlite "
        "--profile ci --seed 7")


def test_a_failing_fuzz_phase_fails_the_verdict() -> None:
    report = run_of({})
    assert report.fuzz is not None
    report.fuzz.errors.append("the engine broke")
    assert reports.verdict(report, reports.Scope(), 1, "x").startswith("FAIL: FUZZ (seed 7, 1 s)")


def test_the_rerun_is_a_command_line_that_repeats_the_run() -> None:
    """Target, profile, seed, ``--only`` and what else changes a verdict; quoted for a shell,
    with the target's text escaped for a terminal; the admin token never shown."""
    args = args_of("--target", "http://127.0.0.1:8787/a b\x1b[2J", "--admin-token",
                   "secret-admin-token", "--profile", "quick", "--seed", "42", "--only",
                   "p06, P03", "--shrink-seconds", "0", "--timeout", "12.5",
                   "--fixtures", "my fixtures.toml")
    rerun = kit_run.rerun_command(args, select(args.only))
    assert rerun == ("waypost conformance --target 'http://127.0.0.1:8787/a b\\x1b[2J' "
                     "--profile quick --seed 42 --only P06,P03 --shrink-seconds 0 "
                     "--timeout 12.5 --fixtures 'my fixtures.toml'")
    assert "secret" not in rerun
    defaults = args_of("--seed", "3", "--profile", "thorough")
    assert kit_run.rerun_command(defaults, []) == \
        "waypost conformance --target sqlite --profile thorough --seed 3"


def test_a_selected_run_counts_the_others_as_not_selected() -> None:
    skipped = {p.pid: "skipped" for p in CATALOGUE if p.pid not in ("P03", "P06")}
    report = run_of({**skipped, "HOSTILE": "skipped", "P03": "incomplete"}, fuzz=False)
    assert reports.verdict(report, ONLY, 35, "") == (
        "PASS: 1 of 20 rows pass, 1 incomplete (P03), 18 not selected (--only P03,P06) "
        "(seed 7, 35 s)")


def test_a_selected_runs_table_says_what_ran_and_what_was_skipped() -> None:
    skipped = {p.pid: "skipped" for p in CATALOGUE if p.pid not in ("P03", "P06")}
    report = run_of({**skipped, "HOSTILE": "skipped"}, fuzz=False)
    report.rules = ["send", "ack", "read_feed"]
    text = reports.table(report, scope=ONLY)
    fuzz = next(line for line in text.splitlines() if " FUZZ " in line)
    assert "skipped (--only)" in fuzz
    assert "the phase did not run" in fuzz
    p17 = next(line for line in text.splitlines() if " P17 " in line)
    assert "its consumer matrix did not run" in p17
    p01 = next(line for line in text.splitlines() if " P01 " in line)
    assert "skipped (--only)" in p01
    assert "not enforced" in p01
    assert "--only P03,P06 ran: the exploration with 3 of 15 rules" in text
    assert ("skipped: 16 other properties, 0 limit checks tagged only with them, P17's "
            "consumer matrix, the hostile-input phase, the fuzz phase") in text


@pytest.mark.slow
def test_a_quick_selected_run_ends_with_its_pass_verdict(tmp_path: Path) -> None:
    """As a user types it: the sqlite target, the quick profile, two properties."""
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "--target", "sqlite", "--profile",
         "quick", "--only", "P03,P06", "--seed", "7", "--replay-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    last = done.stdout.rstrip().splitlines()[-1]
    assert re.fullmatch(r"PASS: \d+ of 19 rows pass, .*17 not selected \(--only P03,P06\) "
                        r"\(seed 7, (\d+ min )?\d+ s\)", last), last
    rows = {line.split()[0]: line for line in done.stdout.splitlines()
            if re.match(r" {3}(P\d\d|HOSTILE) ", line)}
    assert len(rows) == 19
    assert all("skipped (--only)" in row for pid, row in rows.items() if pid not in ("P03", "P06"))
    assert not any("skipped" in rows[pid] for pid in ("P03", "P06"))
    assert "--only P03,P06 ran: the exploration with " in done.stdout
    assert "skipped: 16 other properties, " in done.stdout
    assert "seed 7" in done.stderr.splitlines()[0]
    examples = [line for line in done.stderr.splitlines() if line.startswith("example ")]
    assert examples
    assert all(" elapsed, " in line for line in examples)
    assert "left to explore" in examples[0] or "ending the exploration" in examples[0]
    assert "shrink" not in done.stderr
    assert "discard" not in done.stderr


@pytest.mark.slow
def test_a_failing_run_ends_with_its_fail_verdict_and_a_rerun(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_app: KitApp,
        kit_admin: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The command line against the reference with retries that create new messages (P03),
    served in this process: the verdict names P03 and the command that reruns the run."""
    with kit_app(tmp_path / "data", test_hooks=True) as client:
        test_kit_broken.no_idempotency(monkeypatch, client)

        @contextmanager
        def in_process(*_: Any) -> Iterator[Target]:
            yield Target("url", "http://testserver", kit_admin)
        monkeypatch.setattr(kit_run, "open_target", in_process)
        monkeypatch.setattr(kit_run, "kit_client",
                            lambda url, args: (kit_client(client), None, Bounds()))
        code = cli.main(["conformance", "--target", "http://testserver", "--admin-token",
                         kit_admin, "--profile", "quick", "--only", "P03", "--seed",
                         str(test_kit_broken.SEED), "--shrink-seconds", "0",
                         "--replay-dir", str(tmp_path / "replays")])
    out = capsys.readouterr().out
    assert code == 1, out
    last = out.rstrip().splitlines()[-1]
    assert re.fullmatch(
        rf"FAIL: P03 \(seed {test_kit_broken.SEED}, (\d+ min )?\d+ s\) — rerun: waypost "
        rf"conformance --target http://testserver --profile quick --seed "
        rf"{test_kit_broken.SEED} --only P03 --workers 1 --shrink-seconds 0", last), last
    # a URL's workers come from its measured round trip: the rerun names them
    assert "rerun P03: waypost conformance replay " in out  # the replay file, before it
