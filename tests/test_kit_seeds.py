"""A seed explores the same examples in any process: the kit's draws depend neither on time
nor on the process's string hashing (PYTHONHASHSEED)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_a_seed_runs_the_same_commands_under_any_hash_seed(tmp_path: Path) -> None:
    runs = {}
    for hash_seed in ("0", "1"):
        trace = tmp_path / f"trace-{hash_seed}.jsonl"
        runs[trace] = subprocess.Popen(
            [sys.executable, "-m", "waypost.cli", "conformance", "--target", "sqlite",
             "--profile", "quick", "--seed", "7", "--trace", str(trace),
             "--replay-dir", str(tmp_path / "replays")],
            env={**os.environ, "PYTHONHASHSEED": hash_seed}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
    for process in runs.values():
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output
    first, second = (trace.read_text() for trace in runs)
    examples = [json.loads(line) for line in first.splitlines()]
    assert len(examples) >= 15  # the quick profile's examples, each with its commands
    assert all(example[0] == ["setup", {}] for example in examples)
    assert first == second
