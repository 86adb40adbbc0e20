"""The kit's commands fail fast on a target they cannot use, and say why in one line: no table,
no replay file, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from waypost.conformance.targets import ServerProcess, free_port

ADMIN = "targets-admin"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A running reference without test hooks."""
    process = ServerProcess(tmp_path_factory.mktemp("server") / "data", ADMIN, "--no-access-log")
    try:
        yield process
    finally:
        process.stop()


def _kit(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    replay = tmp_path / "recorded.json"
    replay.write_text(json.dumps({"format": "waypost-replay/1", "property": "P06",
                                  "message": "m", "commands": [{"command": "setup",
                                                                "args": {}}]}))
    command = [sys.executable, "-m", "waypost.cli", "conformance", *arguments]
    command = [str(replay) if part == "REPLAY" else part for part in command]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def _one_line_refusal(result: subprocess.CompletedProcess[str], tmp_path: Path,
                      reason: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert reason in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "waypost-replays").exists()


COMMANDS = {
    "run": ["--profile", "quick"],
    "replay": ["replay", "REPLAY"],
    "crash-matrix": ["crash-matrix", "--operations", "blob.prepare"],
    "hostile": ["hostile"],
    "load": ["load", "--seconds", "1"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unreachable_target_is_named_in_one_line(tmp_path: Path, command: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = _kit(tmp_path, *COMMANDS[command], "--target", url, "--admin-token", ADMIN)
    _one_line_refusal(result, tmp_path, f"cannot reach the target at {url}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_wrong_admin_token_is_named_in_one_line(tmp_path: Path, server: ServerProcess,
                                                  command: str) -> None:
    result = _kit(tmp_path, *COMMANDS[command], "--target", server.url,
                  "--admin-token", "not-the-token")
    _one_line_refusal(result, tmp_path, "refused the admin token")


def test_the_crash_matrix_needs_test_hooks_on_a_url(tmp_path: Path,
                                                    server: ServerProcess) -> None:
    result = _kit(tmp_path, *COMMANDS["crash-matrix"], "--target", server.url,
                  "--admin-token", ADMIN)
    _one_line_refusal(result, tmp_path, "has no test hooks")
