"""The kit against the reference on D1 (the gateway Worker on local workerd): green for the ci
profile, the committed regressions replay clean, ``--target d1`` starts everything itself, and
the crash matrix holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN as ADMIN
from tests.support.inprocess import kit_client
from waypost.conformance import runner
from waypost.conformance.crash_matrix import OPERATIONS, POINTS, crash_matrix
from waypost.properties.coverage.catalogue import CATALOGUE
from waypost.reference.server import Settings, build_app

pytestmark = [pytest.mark.d1, pytest.mark.slow]


# The default tier's run is the quick profile (every property, fewer examples: the plans are
# the SQLite driver's, whose ci runs are the slow tier's); tox -e thorough runs the ci profile.
@pytest.mark.parametrize("profile", ["quick", pytest.param("ci", marks=pytest.mark.thorough)])
def test_the_reference_on_d1_passes_the_kit(tmp_path: Path, d1_settings: Settings,
                                            profile: str) -> None:
    settings = Settings(**{**d1_settings.__dict__, "test_hooks": True})
    with TestClient(build_app(settings)) as client:
        report = runner.run("d1", kit_client(client), ADMIN, profile=profile, seed=1,
                            replay_dir=tmp_path / "replays")
    results = {o.prop.pid: o.result for o in report.outcomes}
    assert not report.failed, [(o.prop.pid, o.message, o.evidence) for o in report.outcomes
                               if o.result == "fail"]
    # the quick profile is a fast look: a property may pass on what ran and say what did not
    done = ("pass",) if profile == "ci" else ("pass", "incomplete")
    assert all(results[p.pid] in done for p in CATALOGUE if p.pid != "P17"), results
    assert results["P17"] == "not run"  # in-process: a consumer process cannot reach it
    limits = {row.name: row for row in report.limits}  # D1's own values, at both boundaries
    entries = limits["memory_entries_per_revision"]
    assert (entries.value, entries.at_limit, entries.over_limit) == (4000, "accepted", "refused")
    assert {row.result for row in limits.values()} <= {"pass", "not published", "not checked"}


def test_committed_regressions_pass_on_d1(d1_settings: Settings, regressions: list[Path]) -> None:
    paths = regressions
    assert paths
    with TestClient(build_app(d1_settings)) as client:
        for path in paths:  # each replay provisions its own spaces: one database serves all
            assert runner.replay_file(path, kit_client(client), ADMIN) is None, path.name


def test_the_cli_starts_the_gateway_and_the_reference_for_target_d1(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "--target", "d1",
         "--profile", "quick", "--seed", "2", "--only", "P05,P11,P15,P17",
         "--replay-dir", str(tmp_path / "replays")],
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "target d1 at http://127.0.0.1:" in result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()
             if line.strip().startswith("P")}
    # the quick profile: each passes on what ran (incomplete names the ids that did not)
    assert all(" pass " in lines[pid] or " incomplete " in lines[pid]
               for pid in ("P05", "P11", "P15", "P17")), result.stdout


def test_the_crash_matrix_is_green_on_d1() -> None:
    """Real process exits at every fault point of every write, the gateway (and D1's data)
    living on: the same outcomes as on SQLite."""
    matrix = crash_matrix(progress=False, target="d1")
    assert len(matrix.cells) == len(OPERATIONS) * len(POINTS)
    assert not [(c.operation, c.point, c.note) for c in matrix.cells if not c.ok]
    outcome = {(c.operation, c.point): c.outcome for c in matrix.cells}
    assert outcome[("memory.publish", "reserve.after")] == "resumed"
    for operation in ("message.send", "memory.publish", "receipt.ack", "blob.commit"):
        assert outcome[(operation, "commit.after")] == "committed"
        assert outcome[(operation, "commit.durable")] == "not reached"  # the SQLite writer's
    for operation in ("message.send", "receipt.ack", "blob.prepare", "blob.commit"):  # one plan
        assert outcome[(operation, "reserve.after")] == "not reached"
        assert outcome[(operation, "commit.before")] == "not committed"
    assert outcome[("blob.put", "upload.after_store")] == "stored"
