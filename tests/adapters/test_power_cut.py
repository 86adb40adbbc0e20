"""A power cut under load (commands/power_cut.py, adapters/power_cut_files.py): the server runs
with its database behind the simulator and its data directory and blob store behind the
file-call shim, is killed (``SIGKILL``) at a random moment of a workload, and is started again
on the same data directory (the start undoes what was not synced), as a machine would be after
its power came back. With ``--synchronous full`` everything acknowledged is there, once, the
database is whole and ``waypost verify`` finds every object whole: the provisioning of the very
first start, sends, the first uploads, the first publishes, uploads and sends cut mid-flight.
The controls must lose: ``normal`` acknowledged sends, the blob store without its fsyncs
sealed blobs; else the simulator would prove nothing."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import apsw
import httpx
import pytest
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api, item, publish, sealed_blob, with_notes
from waypost.adapters.power_cut_files import DROP_SYNCS_ENVIRONMENT, JOURNAL, journal_dir
from waypost.conformance.targets import ServerProcess

pytestmark = pytest.mark.slow

#: What a workload acknowledged, by kind: message ids, blob ids with their content, revisions.
Acknowledged = dict[str, list[Any]]
#: The server's flags: its database behind the VFS, its files behind the shim.
SIMULATED = ("--test-hooks", "--simulate-power-cuts")


def _api(client: httpx.Client, tokens: dict[str, str] | None = None) -> Api:
    """The tests' client over a connection to a real server (a ``TestClient`` is an httpx
    client too)."""
    return Api(cast(TestClient, client), {} if tokens is None else tokens)


def _provision(api: Api, acknowledged: Acknowledged) -> None:
    api.space("s1", ("alice", "bob", "carol"))
    api.space("s2", ("dave", "erin"))
    with_notes(api)
    acknowledged["spaces"] = ["s1", "s2"]


def _sends(api: Api, acknowledged: Acknowledged, count: int) -> None:
    for _ in range(count):
        acknowledged.setdefault("messages", []).append(
            api.must_send("s1/alice", recipient_ids=["bob"])["message_id"])


def _uploads(api: Api, acknowledged: Acknowledged, count: int) -> None:
    for n in range(count):
        content = f"blob {n} ".encode() * (n + 1)
        acknowledged.setdefault("blobs", []).append((sealed_blob(api, "s1/alice", content),
                                                     content))


def _publishes(api: Api, acknowledged: Acknowledged, count: int) -> None:
    blob = sealed_blob(api, "s1/alice", b"entry")
    for revision in range(count):
        answer = publish(api, revision, items=[item(f"i{revision}", blob)])
        assert answer.status_code == 201, answer.text
        acknowledged.setdefault("revisions", []).append(revision + 1)


WORKLOADS: dict[str, Callable[[Api, Acknowledged, int], None]] = {
    "first start": lambda api, acknowledged, count: None, "sends": _sends,
    "first uploads": _uploads, "first publishes": _publishes}


def _cut(data_dir: Path, synchronous: str, workload: str, seed: int) -> tuple[Acknowledged, Api]:
    """The first start, provisioning, the workload cut at a random moment by ``SIGKILL``; what
    was acknowledged, and the client with its tokens."""
    server = ServerProcess(data_dir, ADMIN_TOKEN, *SIMULATED, "--synchronous", synchronous)
    acknowledged: Acknowledged = {}
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            api = _api(client)
            _provision(api, acknowledged)
            WORKLOADS[workload](api, acknowledged, random.Random(seed).randint(3, 30))
        _power_off(server, data_dir)
    finally:
        server.stop()
    return acknowledged, api


def _power_off(server: ServerProcess, data_dir: Path) -> None:
    """The power goes: no shutdown, no flush; the shim's journal holds what was not synced."""
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    assert (journal_dir(data_dir) / JOURNAL).stat().st_size, "the shim journaled nothing"


class _Load:
    """Uploads (two clients) and sends (one) at once, each a thread with its own connection,
    until the server goes; what was acknowledged before, and anything refused before the kill."""

    def __init__(self, api: Api, seed: int) -> None:
        self.api, self.rng = api, random.Random(seed)
        self.acknowledged: Acknowledged = {"blobs": [], "messages": []}
        self.changed = threading.Condition()
        self.killed = threading.Event()
        self.errors: list[str] = []

    def run(self, server: ServerProcess, data_dir: Path, blobs_before_the_cut: int) -> None:
        """Load the server; cut its power once ``blobs_before_the_cut`` uploads are sealed."""
        workers = [threading.Thread(target=self._work, args=(server.url, kind, n))
                   for n, kind in enumerate(("blobs", "blobs", "messages"))]
        for worker in workers:
            worker.start()
        with self.changed:
            self.changed.wait_for(lambda: len(self.acknowledged["blobs"]) >= blobs_before_the_cut
                                  or bool(self.errors), timeout=120)
        self.killed.set()
        _power_off(server, data_dir)
        for worker in workers:
            worker.join(timeout=60)

    def _work(self, url: str, kind: str, number: int) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            api = _api(client, self.api.tokens)
            step = 0
            while not self.killed.is_set():
                step += 1
                try:
                    if kind == "blobs":  # sizes from a few bytes to past the 256 KiB check
                        content = f"{number}.{step} ".encode() * self.rng.choice((1, 900, 40000))
                        done: Any = (sealed_blob(api, "s1/alice", content), content)
                    else:
                        done = api.must_send("s1/alice", recipient_ids=["bob"])["message_id"]
                except (httpx.HTTPError, AssertionError) as error:
                    if not self.killed.is_set():
                        with self.changed:
                            self.errors.append(f"{kind}: {error!r}")
                            self.changed.notify_all()
                    return
                with self.changed:
                    self.acknowledged[kind].append(done)
                    self.changed.notify_all()


def _cut_under_load(data_dir: Path, seed: int, blobs_before_the_cut: int,
                    env: dict[str, str] | None = None) -> tuple[Acknowledged, Api]:
    """The first start, provisioning, then uploads and sends at once, cut by ``SIGKILL`` once
    ``blobs_before_the_cut`` uploads are sealed (the others in flight, at random points)."""
    server = ServerProcess(data_dir, ADMIN_TOKEN, *SIMULATED, "--synchronous", "full", env=env)
    acknowledged: Acknowledged = {}
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            api = _api(client)
            _provision(api, acknowledged)
            load = _Load(api, seed)
            load.run(server, data_dir, blobs_before_the_cut)
    finally:
        server.stop()
    assert load.errors == [], load.errors
    return {**acknowledged, **load.acknowledged}, api


def _lost(data_dir: Path, api: Api, acknowledged: Acknowledged) -> list[str]:
    """After the restart (which undoes what was not synced): each acknowledged thing that is
    not there (or not once), blobs byte for byte and by their SHA-256."""
    server = ServerProcess(data_dir, ADMIN_TOKEN, *SIMULATED)
    lost: list[str] = []
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            after = _api(client, api.tokens)

            def read(who: str, path: str) -> httpx.Response:
                return after.as_(who, "GET", path)
            for space in acknowledged.get("spaces", []):
                if after.admin("GET", f"/admin/v1/spaces/{space}").status_code != 200:
                    lost.append(f"space {space}")
            for message_id in acknowledged.get("messages", []):
                if read("s1/bob", f"/v1/messages/{message_id}").status_code != 200:
                    lost.append(f"message {message_id}")
            for blob_id, content in acknowledged.get("blobs", []):
                try:
                    answer = read("s1/alice", f"/v1/blobs/{blob_id}/content")
                except httpx.HTTPError as error:  # a damaged blob's stream, cut short
                    lost.append(f"blob {blob_id}: {error!r}")
                    continue
                if answer.status_code != 200 or \
                        hashlib.sha256(answer.content).digest() != hashlib.sha256(content).digest():
                    lost.append(f"blob {blob_id}: {answer.status_code}")
            if acknowledged.get("revisions"):
                head = read("writer", "/v1/collections/notes")
                if head.status_code != 200 or head.json().get("current_revision") != \
                        acknowledged["revisions"][-1]:
                    lost.append(f"revision {acknowledged['revisions'][-1]}: {head.text[:200]}")
            page = read("s1/bob", "/v1/feed?limit=100")
            if page.status_code == 200:  # each message once in bob's feed
                seen = [i["message"]["message_id"] for i in page.json()["items"]
                        if i["type"] == "message"]
                if len(seen) != len(set(seen)):
                    lost.append("a message twice in bob's feed")
    finally:
        server.stop()
    return lost


def _verify(data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``waypost verify`` on the data directory (the server stopped)."""
    return subprocess.run([sys.executable, "-m", "waypost.cli", "verify", "--data-dir",
                           str(data_dir)], capture_output=True, text=True, timeout=120)


def _whole(data_dir: Path) -> None:
    """The database passes ``integrity_check`` and ``waypost verify`` finds every object whole."""
    assert _integrity(data_dir) == "ok"
    verified = _verify(data_dir)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _integrity(data_dir: Path) -> str:
    connection = apsw.Connection(str(data_dir / "waypost.sqlite3"))
    try:
        return str(next(connection.execute("PRAGMA integrity_check"))[0])
    finally:
        connection.close()


@pytest.mark.parametrize(("workload", "seed"), [
    ("first start", 1), ("sends", 1), ("sends", 2), ("first uploads", 3),
    ("first publishes", 4)])
def test_with_synchronous_full_a_power_cut_loses_nothing_acknowledged(
        tmp_path: Path, workload: str, seed: int) -> None:
    acknowledged, api = _cut(tmp_path / "data", "full", workload, seed)
    assert _lost(tmp_path / "data", api, acknowledged) == []
    _whole(tmp_path / "data")


@pytest.mark.parametrize(("seed", "blobs_before_the_cut"), [(1, 1), (2, 4), (3, 9)])
def test_uploads_and_sends_cut_mid_flight_lose_no_sealed_blob(
        tmp_path: Path, seed: int, blobs_before_the_cut: int) -> None:
    """Under a load of uploads and sends, the cut falls once the first upload into the fresh
    data directory is sealed, or a few more, with others in flight: every sealed blob is there
    with its SHA-256, every acknowledged send too, and nothing stored is damaged."""
    acknowledged, api = _cut_under_load(tmp_path / "data", seed, blobs_before_the_cut)
    assert len(acknowledged["blobs"]) >= blobs_before_the_cut
    assert _lost(tmp_path / "data", api, acknowledged) == []
    _whole(tmp_path / "data")


@pytest.mark.thorough
@pytest.mark.parametrize("seed", range(10, 30))
def test_many_power_cuts_lose_nothing_acknowledged(tmp_path: Path, seed: int) -> None:
    workload = random.Random(seed).choice(list(WORKLOADS))
    acknowledged, api = _cut(tmp_path / "data", "full", workload, seed)
    assert _lost(tmp_path / "data", api, acknowledged) == []
    _whole(tmp_path / "data")


@pytest.mark.thorough
@pytest.mark.parametrize("seed", range(40, 50))
def test_many_cuts_under_uploads_lose_no_sealed_blob(tmp_path: Path, seed: int) -> None:
    acknowledged, api = _cut_under_load(tmp_path / "data", seed,
                                        random.Random(seed).randint(1, 20))
    assert _lost(tmp_path / "data", api, acknowledged) == []
    _whole(tmp_path / "data")


def test_the_control_with_synchronous_normal_loses_acknowledged_sends(tmp_path: Path) -> None:
    """The simulator bites: SQLite syncs the WAL only at checkpoints under ``normal``, so what
    was acknowledged since the last one is gone after the cut (and the database is whole)."""
    acknowledged, api = _cut(tmp_path / "data", "normal", "sends", 7)
    assert _lost(tmp_path / "data", api, acknowledged), "the power-cut simulator lost nothing"
    assert _integrity(tmp_path / "data") == "ok"


@pytest.mark.parametrize("dropped", ["files", "dirs"])
def test_the_control_without_the_blob_stores_fsyncs_loses_sealed_blobs(
        tmp_path: Path, dropped: str) -> None:
    """The shim bites: with the blob store's fsyncs of its files (or of its directories)
    skipped, sealed blobs are damaged (or missing) after the cut, and ``waypost verify`` names
    them; the database, synced as ever, is whole."""
    acknowledged, api = _cut_under_load(tmp_path / "data", 5, 4,
                                        env={DROP_SYNCS_ENVIRONMENT: dropped})
    lost = _lost(tmp_path / "data", api, acknowledged)
    assert any(line.startswith("blob ") for line in lost), "the file-call shim lost nothing"
    assert _integrity(tmp_path / "data") == "ok"
    verified = _verify(tmp_path / "data")
    assert verified.returncode == 1, verified.stdout + verified.stderr
    assert ("damaged: " if dropped == "files" else "missing: ") in verified.stdout
