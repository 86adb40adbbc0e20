"""The kit at a distance (docs/spec.md, "A far target"): the honest reference behind the bench's
latency proxy, 5 to 40 ms each way with jitter, gets the kit's ci profile through the command
line as any deployment URL would. Timing never changes what the kit draws, so every run passes,
with no ERROR row, with the workers the kit picks for the distance: one seed in the slow tier
against the reference as a deployment runs (no test hooks: the kit's fault proxy injects the
faults, the other phases run beside the exploration), five in the thorough one with its test
hooks on (faults, restarts and clock moves, which the workers take turns for)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from waypost.bench.latency_proxy import at_distance
from waypost.conformance.targets import open_target

#: 5 ms each way, plus up to 35 ms more each way: 5 to 40 ms.
RTT_MS, JITTER_MS = 10, 35


def _far_run(tmp_path: Path, seed: int, hooks: bool,
             *extra: str) -> subprocess.CompletedProcess[str]:
    with open_target("sqlite", None, test_hooks=hooks) as target, \
            at_distance(target.url, RTT_MS, JITTER_MS, seed=seed) as url:
        return subprocess.run(
            [sys.executable, "-m", "waypost.cli", "conformance", "--target", url,
             "--profile", "ci", "--seed", str(seed), "--replay-dir", str(tmp_path / "replays"),
             *extra],
            capture_output=True, text=True, timeout=1800, cwd=tmp_path,
            env={**os.environ, "WAYPOST_ADMIN_TOKEN": target.admin_token})


def _assert_passes_from_afar(result: subprocess.CompletedProcess[str]) -> None:
    said = result.stdout + result.stderr
    assert result.returncode == 0, result.stdout[-8000:]
    assert result.stdout.strip().splitlines()[-1].startswith("PASS: "), result.stdout[-3000:]
    assert " ERROR " not in said
    assert "Flaky" not in said
    assert "HealthCheck" not in said
    header = next(line for line in result.stderr.splitlines()
                  if line.startswith("waypost conformance: target"))
    assert " 1 worker" not in header  # a far target gets several
    assert "ms away" in header


@pytest.mark.slow
def test_a_ci_run_through_a_far_jittery_network_passes(tmp_path: Path) -> None:
    """With the most workers (the default for the distance is the thorough runs'): the slow
    tier's time is CI's."""
    _assert_passes_from_afar(_far_run(tmp_path, 7, False, "--workers", "8"))


@pytest.mark.thorough
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_ci_runs_at_five_seeds_through_a_far_jittery_network_pass(tmp_path: Path,
                                                                   seed: int) -> None:
    _assert_passes_from_afar(_far_run(tmp_path, seed, hooks=True))
