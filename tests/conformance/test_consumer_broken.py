"""P17 must fail for consumers that get the order of durable steps wrong. Each is the reference
consumer with one defect (``tests/support/broken_consumer.py``), run by the kit as any consumer
command line against the reference over real HTTP; the kit must name P17."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from waypost.conformance.consumer_matrix import consumer_matrix, for_run
from waypost.conformance.targets import ServerProcess
from waypost.properties.verdicts.violations import Ledger

WRAPPER = Path(__file__).resolve().parents[1] / "support" / "broken_consumer.py"
ADMIN = "p17-admin"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process = ServerProcess(tmp_path_factory.mktemp("p17") / "data", ADMIN, "--no-access-log",
                            "--synchronous", "normal")
    try:
        yield process.url
    finally:
        process.stop()


@pytest.mark.parametrize(("defect", "flow", "caught_by"), [
    ("ack-before-commit", "sync", "not stored (acknowledged before the local commit)"),
    ("processed-before-done", "done", "acknowledged before the local mark"),
    ("fresh-request-id", "outbound", "not submitted with its original request_id"),
    ("checkpoint-outside-transaction", "sync", "was lost: not in the local file"),
])
def test_a_broken_consumer_fails_p17(server: str, tmp_path: Path, defect: str, flow: str,
                                     caught_by: str) -> None:
    ledger = Ledger()
    with httpx.Client(base_url=server) as client:
        failures = for_run(client, ADMIN, ledger, {"P17"}, tmp_path, "run1",
                           command=(sys.executable, str(WRAPPER), defect), flows=(flow,))
    violation, _, replay = failures["P17"]
    assert violation is not None
    assert violation.pid == "P17"
    assert caught_by in violation.message, violation.message
    assert ledger.checks["P17"] > 0
    assert replay.exists()
    assert "FAIL" in replay.read_text()


def test_the_healthy_consumer_passes_the_same_cells(server: str) -> None:
    matrix = consumer_matrix(server, ADMIN, points=("sync.after_commit", "ack.after_submit",
                                                    "outbound.after_submit"))
    assert matrix.green, matrix.table()
    assert matrix.checks > 0


def test_the_cli_runs_the_matrix_against_a_broken_consumer(server: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "consumer-matrix",
         "--target", server, "--admin-token", ADMIN, "--flows", "outbound",
         "--consumer-command", f"{sys.executable} {WRAPPER} fresh-request-id"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL recovered" in done.stdout
    assert "failed" in done.stdout.splitlines()[-1]


def test_the_consumer_under_power_loss_loses_nothing_and_an_unsynced_one_is_caught(
        server: str) -> None:
    """``--power-loss``: each crash of the consumer also loses what it wrote but did not
    sync. The reference consumer (``synchronous`` FULL) keeps every cell green; one that
    never syncs its commits passes a plain crash matrix and fails this one."""
    points = ("sync.after_commit", "ack.after_submit", "done.after_commit")
    assert consumer_matrix(server, ADMIN, points=points, power_loss=True).green
    unsynced = (sys.executable, str(WRAPPER), "unsynced-commits")
    assert consumer_matrix(server, ADMIN, points=points, command=unsynced).green
    caught = consumer_matrix(server, ADMIN, points=points, command=unsynced, power_loss=True)
    assert not caught.green, caught.table()
