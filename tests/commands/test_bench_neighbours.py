"""``waypost bench neighbours`` with small numbers: the shape of its JSON, never a speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WHO = ("reference", "floor")


def _latencies(figures: dict[str, Any], count: int) -> None:
    assert figures["count"] == count
    assert 0 <= figures["p50_ms"] <= figures["p99_ms"] <= figures["max_ms"]


def _cpu(figures: dict[str, Any] | None) -> None:
    assert figures is not None  # Linux' /proc
    assert figures.keys() == {"event_loop", "other_threads", "total", "total_in_ticks"}
    assert figures["total"] > 0
    assert figures["event_loop"] > 0
    assert figures["other_threads"] >= 0


@pytest.mark.slow
def test_bench_neighbours_reports_every_pattern_beside_its_floor(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "bench", "neighbours", "--waiters", "50",
         "--sends", "5", "--json", str(out)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr
    bench = json.loads(out.read_text())
    assert json.loads(result.stdout) == bench
    assert bench["benchmark"] == "neighbours"
    assert bench["machine"]["cpus"] >= 1
    assert len(bench["machine"]["load_average_before"]) == 3
    for line in bench["summary"]:  # one line per pattern (wake-ups: one per waiter count)
        assert line in result.stderr

    for who in WHO:
        rows = bench["wakeups"][who]
        assert [row["waiters"] for row in rows] == [0, 50]
        for row in rows:
            assert row["sends"] == 5
            _latencies(row["send_answer_to_poll_answer"], 5)
            _cpu(row["server_cpu_ms_per_send"])
            assert row["idle_poll_failures"] == 0
        broadcast = bench["broadcast"][who]
        assert (broadcast["polls"], broadcast["idle_waiters"]) == (64, 50)
        _latencies(broadcast["send_answer_to_last_poll_answer"], broadcast["repeats"])
        assert len(broadcast["each_repeat_last_ms"]) == broadcast["repeats"] > 0
        herd = bench["timeout_herd"][who]
        for round_ in (herd, herd["first_contact"]):  # the re-polls, then the first polls
            assert herd["waiters"] == round_["answered_200_empty"] == 50
            _latencies(round_["answer_after_its_deadline"], 50)
            assert round_["last_answer_after_its_deadline_ms"] >= 0
            _cpu(round_["server_cpu_ms"])
        hostile = bench["hostile_bodies"][who]
        assert hostile["describe_at_rest"]["count"] > 0
        for body in ("empty_objects", "float_metadata", "scoped_empty_objects",
                     "scoped_float_metadata"):
            row = hostile[body]
            assert 0 < row["body_bytes"] <= hostile["request_bytes"]
            _latencies(row["describe"], row["describe"]["count"])
            assert row["describe"]["count"] > 0
            assert sum(row["answers_by_status"].values()) > 0
            assert row["p99_over_rest_p99"] > 0
            lag = row["event_loop_lag"]
            assert 0 <= lag["p99_ms"] <= lag["max_ms"]
    # the reference refuses a token without scopes; the floor checks none
    assert set(bench["hostile_bodies"]["reference"]["empty_objects"]["answers_by_status"]) <= {
        "400", "403", "413"}
    # alice's token may send: her bodies are read and refused for what they hold
    assert set(bench["hostile_bodies"]["reference"]["scoped_empty_objects"][
        "answers_by_status"]) == {"400"}
    assert set(bench["hostile_bodies"]["reference"]["scoped_float_metadata"][
        "answers_by_status"]) <= {"400", "413"}

    targets = bench["targets"]
    assert {"wakeup_cpu_over_empty_at_50", "wakeup_p50_ms_at_0", "wakeup_p99_ms_at_50",
            "broadcast_last_answer_ms", "herd_cpu_over_floor",
            "hostile_empty_objects_p99_over_rest_p99",
            "hostile_float_metadata_p99_over_rest_p99",
            "hostile_scoped_empty_objects_p99_over_rest_p99",
            "hostile_scoped_float_metadata_p99_over_rest_p99"} <= targets.keys()
    for name, verdict in targets.items():
        assert verdict["verdict"] in ("met", "not met"), name
        assert verdict["measured"] is not None
        assert f"target {name}: {verdict['verdict']}" in result.stderr
