"""``waypost verify`` over a real data directory: every sealed blob and revision manifest read
back and held to the SHA-256 it was sealed with; a damaged and a missing object are each named
on a line of their own, and the exit status says so."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.testclient import TestClient

from tests.support.api import (
    ADMIN_TOKEN,
    Api,
    item,
    publish,
    sealed_blob,
    stored_objects,
    with_notes,
)
from waypost.reference.server import Settings, build_app


def _verify(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "waypost.cli", "verify", "--data-dir",
                           str(data_dir)], capture_output=True, text=True, timeout=120)


@contextmanager
def _spaces_with_notes(data_dir: Path) -> Iterator[Api]:
    """The reference on ``data_dir`` with two spaces and the notes collection."""
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN, sweep_seconds=0))) as client:
        api = Api(client)
        api.space("s1")
        api.space("s2", ("dave", "erin"))
        with_notes(api)
        yield api


def _stored(data_dir: Path, size: int) -> Path:
    (found,) = [p for p in stored_objects(data_dir) if p.stat().st_size == size]
    return found


def test_verify_names_each_damaged_and_missing_object(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with _spaces_with_notes(data_dir) as api:
        kept = sealed_blob(api, "s1/alice", b"k" * 1001)
        torn = sealed_blob(api, "s1/alice", b"t" * 1002)
        gone = sealed_blob(api, "s1/alice", b"g" * 1003)
        assert publish(api, 0, items=[item("a", kept)]).status_code == 201
    whole = _verify(data_dir)
    assert whole.returncode == 0, whole.stderr
    checked = int(whole.stdout.split("verify: ")[1].split(" objects")[0])
    assert checked >= 4  # three blobs and the revision's manifest
    assert whole.stdout.endswith("0 damaged, 0 missing\n")

    damaged = _stored(data_dir, 1002)
    damaged.write_bytes(b"x" + damaged.read_bytes()[1:])
    _stored(data_dir, 1003).unlink()
    found = _verify(data_dir)
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert [line for line in lines if line.startswith("damaged: ")] == [
        line for line in lines if f"/{torn}:" in line]
    assert [line for line in lines if line.startswith("missing: ")] == [
        line for line in lines if f"/{gone}:" in line]
    assert lines[-1].endswith(f"{checked} objects checked, 1 damaged, 1 missing")


def test_verify_says_where_there_is_no_database(tmp_path: Path) -> None:
    answer = _verify(tmp_path / "nothing")
    assert answer.returncode == 2
    assert "holds no Waypost database" in answer.stderr


def test_a_damaged_manifest_is_named_by_its_revision(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with _spaces_with_notes(data_dir) as api:
        entry = sealed_blob(api, "s1/alice", b"e" * 1001)
        assert publish(api, 0, items=[item("a", entry)]).status_code == 201
    (manifest,) = [p for p in stored_objects(data_dir) if p.stat().st_size != 1001]
    manifest.write_bytes(b" " + manifest.read_bytes()[1:])
    found = _verify(data_dir)
    assert found.returncode == 1
    (line,) = [line for line in found.stdout.splitlines() if line.startswith("damaged: ")]
    assert line.startswith("damaged: manifest of revision 1 of collection s1/notes (blob ")
