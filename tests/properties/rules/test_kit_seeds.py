"""A seed explores the same examples in any process: the kit's draws depend neither on time,
nor on the process's string hashing (PYTHONHASHSEED), nor on the source code loaded beside the
kit (Hypothesis draws literals of local modules, properties/rules/hypothesis_hooks.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


#: A local module full of literals of the kinds the kit draws: names, ids, stages, sizes.
LITERALS = "\n".join(
    [f"NAME_{i} = {name!r}" for i, name in enumerate(
        ["tombstone", "processed", "received", "snapshot", "patch", "../x", "a b", "\\u0000",
         "WP-VAL-1", "memory", "feed", "thread", "", " ", "0" * 64, "ü" * 9])]
    + [f"SIZE_{i} = {size}" for i, size in enumerate(
        [0, 1, 2, 3, 7, 64, 100, 255, 256, 1000, 1024, 4096, 65535, 65536, 2**31 - 1, -1])])


def _kit_run(tmp_path: Path, name: str, hash_seed: str, local: bool) -> tuple[Path, Any]:
    trace = tmp_path / f"trace-{name}.jsonl"
    prelude = "import literals; " if local else ""
    code = (f"{prelude}import sys; from waypost.cli import main; sys.exit(main(["
            f"'conformance', '--target', 'sqlite', '--profile', 'quick', '--seed', '7',"
            f" '--trace', {str(trace)!r}, '--replay-dir', {str(tmp_path / 'replays')!r}]))")
    process = subprocess.Popen(
        [sys.executable, "-c", code], cwd=tmp_path / "code",
        env={**os.environ, "PYTHONHASHSEED": hash_seed}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    return trace, process


def test_a_seed_runs_the_same_commands_under_any_hash_seed_and_beside_any_code(
        tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "literals.py").write_text(LITERALS + "\n")
    runs = dict([_kit_run(tmp_path, "plain", "0", local=False),
                 _kit_run(tmp_path, "hash", "1", local=False),
                 _kit_run(tmp_path, "local", "0", local=True)])
    for process in runs.values():
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output
    first, second, beside = (trace.read_text() for trace in runs)
    examples = [json.loads(line) for line in first.splitlines()]
    assert len(examples) >= 15  # the quick profile's examples, each with its commands
    assert all(example[0] == ["setup", {}] for example in examples)
    assert first == second
    assert first == beside
