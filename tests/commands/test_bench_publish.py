"""``waypost bench publish`` with tiny parameters: the shape of its JSON, never its speed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_bench_publish_reports_json_with_machine_baseline_sizes_and_upload(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "bench", "publish", "--sizes", "50,10",
         "--repeats", "3", "--upload-mib", "1", "--heavy-entries", "40", "--json", str(out)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    bench = json.loads(out.read_text())
    assert json.loads(result.stdout) == bench
    assert "waypost bench publish" in result.stderr
    assert bench["benchmark"] == "publish"
    assert bench["machine"]["cpus"] >= 1
    assert bench["machine"]["platform"]
    assert bench["machine"]["python"]

    assert bench["baseline"]["describe"]["round_trips_per_second"] > 0
    empty = bench["baseline"]["empty_publish"]
    assert (empty["entries"], empty["repeats"]) == (0, 3)
    assert 0 < empty["median_ms"] <= empty["p90_ms"]

    assert [row["entries"] for row in bench["publish"]] == [10, 50]
    for row in bench["publish"]:
        assert row["repeats"] == 3
        assert 0 < row["min_ms"] <= row["median_ms"] <= row["p90_ms"] <= row["max_ms"]
        assert row["fill_publishes"] == 1

    growth = bench["growth"]
    assert (growth["from_entries"], growth["to_entries"]) == (10, 50)
    assert growth["median_ms_by_entries"].keys() == {"10", "50"}
    assert growth["median_ratio"] > 0
    assert growth["median_ratio_vs_empty"] > 0
    assert isinstance(growth["ms_per_1000_entries"], float)

    upload = bench["upload"]
    assert upload["bytes"] == 1 << 20
    assert upload["seconds"] > 0
    assert upload["mib_per_second"] > 0
    assert upload["server_pid"] > 0
    assert upload["server_peak_rss_after_mib"] >= upload["server_peak_rss_before_mib"] > 0
    assert upload["server_peak_rss_growth_mib"] >= 0

    heavy = bench["heavy_collection"]
    assert heavy["entries"] == 40
    assert heavy["manifest_bytes"] > 40 * 4_000
    assert heavy["delta"]["requests"] == heavy["unchanged"]["requests"] == 3
    assert heavy["delta"]["growth_over_manifest_max"] > 0
    assert heavy["other_client_describe"]["requests"] > 0
    assert heavy["describe_at_rest"]["requests"] >= 200
    assert 0 <= heavy["event_loop_lag"]["p99_ms"] <= heavy["event_loop_lag"]["max_ms"]
    assert {target["verdict"] for target in heavy["targets"].values()} <= {"met", "not met"}


@pytest.mark.slow
def test_bench_publish_refuses_sizes_over_the_published_limit(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "bench", "publish", "--sizes", "10001",
         "--repeats", "1", "--upload-mib", "1", "--json", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "memory_entries_per_revision" in result.stderr
    assert not (tmp_path / "bench.json").exists()
