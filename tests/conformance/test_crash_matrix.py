"""The crash matrix on the reference: every fault point × every write, a real process exit at
the point, a restart, and one stable result afterwards (P03, P18)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from waypost.conformance.crash_matrix import OPERATIONS, POINTS, Cell, Matrix, crash_matrix

pytestmark = pytest.mark.slow


def test_the_whole_matrix_is_green_and_explained() -> None:
    matrix = crash_matrix(progress=False)
    assert matrix.points == list(POINTS)  # what the reference lists: the contract's points
    assert "cleanup.after_claim" in matrix.points
    assert len(matrix.cells) == len(OPERATIONS) * len(POINTS)
    failures = [(c.operation, c.point, c.note) for c in matrix.cells if not c.ok]
    assert not failures
    outcome = {(c.operation, c.point): c.outcome for c in matrix.cells}
    # Before the commit a reservation survives and the retry finishes it with its ids; after
    # the commit the lookup already holds the result and the retry replays it.
    assert outcome[("memory.publish", "reserve.after")] == "resumed"
    assert outcome[("memory.publish", "commit.before")] == "resumed"
    # commit.durable fires after the first durable group: the reservation's
    assert outcome[("memory.publish", "commit.durable")] == "resumed"
    for operation in ("message.send", "memory.publish", "receipt.ack", "blob.prepare",
                      "blob.commit"):
        assert outcome[(operation, "commit.after")] == "committed"
        assert outcome[(operation, "response.before")] == "committed"
    # A send, an ACK, a prepare and a commit are one plan each: nothing of them exists before
    # the commit, all of it after.
    assert outcome[("blob.commit", "seal.before_commit")] == "not committed"
    for operation in ("message.send", "receipt.ack", "blob.prepare", "blob.commit"):
        for point in ("reserve.after", "object.after_write", "prepare.after"):
            assert outcome[(operation, point)] == "not reached"
        assert outcome[(operation, "commit.before")] == "not committed"
        assert outcome[(operation, "commit.durable")] == "committed"
    assert outcome[("receipt.ack", "ack.after_commit")] == "committed"
    assert outcome[("memory.publish", "prepare.after")] == "resumed"
    assert outcome[("blob.put", "upload.after_store")] == "stored"
    assert outcome[("message.send", "seal.before_commit")] == "not reached"
    # The sweeper claimed the expired upload and crashed there: the commit after it is expired.
    assert outcome[("blob.commit", "cleanup.after_claim")] == "expired"
    for operation in OPERATIONS:
        if operation != "blob.commit":
            assert outcome[(operation, "cleanup.after_claim")] == "not reached"


def test_the_cli_prints_the_table_and_json(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "crash-matrix",
         "--operations", "blob.prepare", "--json", str(tmp_path / "m.json")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "blob.prepare" in result.stdout
    assert "committed" in result.stdout
    assert result.stdout.splitlines()[-1] == "crash matrix: 22 cells, 22 green"  # 2 actions
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert {c["operation"] for c in cells} == {"blob.prepare"}
    assert all(c["ok"] for c in cells)
    unknown = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "crash-matrix",
         "--operations", "nothing"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2
    assert "nothing" in unknown.stderr


def test_the_verdict_counts_failed_cells() -> None:
    matrix = Matrix([Cell("message.send", "commit.after", ok=True),
                     Cell("message.send", "commit.before", ok=False, note="took effect 2 times")])
    assert matrix.verdict() == "crash matrix: 2 cells, 1 failed"


def test_every_crash_as_a_power_cut_is_green_with_synchronous_full() -> None:
    """``--power-loss``: each crash also loses what the server wrote but did not sync (the
    power-cut simulator); with ``full`` every cell keeps its one stable result, and what a
    commit made durable is there after the restart."""
    matrix = crash_matrix(actions=("crash",), progress=False, power_loss=True)
    failures = [(c.operation, c.point, c.note) for c in matrix.cells if not c.ok]
    assert not failures
    outcome = {(c.operation, c.point): c.outcome for c in matrix.cells}
    for operation in ("message.send", "receipt.ack", "blob.prepare", "blob.commit"):
        assert outcome[(operation, "commit.durable")] == "committed"
        assert outcome[(operation, "commit.before")] == "not committed"


def test_power_loss_is_the_embedded_adapters() -> None:
    answer = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "crash-matrix", "--power-loss",
         "--target", "d1"], capture_output=True, text=True, timeout=60)
    assert answer.returncode == 2
    assert "--power-loss needs --target sqlite" in answer.stderr
