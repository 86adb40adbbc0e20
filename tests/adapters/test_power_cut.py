"""A power cut under load (commands/power_cut.py): the server runs with its database behind
the simulator, is killed (``SIGKILL``) at a random moment of a workload, and is started again
on the same data directory, as a machine would be after its power came back. With
``--synchronous full`` everything acknowledged is there, once, and the database is whole: the
provisioning of the very first start, sends, the first uploads, the first publishes. The
control, ``normal``, must lose acknowledged sends, or the simulator would prove nothing."""

from __future__ import annotations

import os
import random
import signal
from collections.abc import Callable
from pathlib import Path

import apsw
import httpx
import pytest

from tests.support.api import ADMIN_TOKEN, Api, item, publish, sealed_blob, with_notes
from waypost.conformance.targets import ServerProcess

pytestmark = pytest.mark.slow

#: What a workload acknowledged, by kind: message ids, blob ids with their content, revisions.
Acknowledged = dict[str, list[object]]


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
    server = ServerProcess(data_dir, ADMIN_TOKEN, "--test-hooks", "--simulate-power-cuts",
                           "--synchronous", synchronous)
    acknowledged: Acknowledged = {}
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            api = Api(client)  # an httpx client to a real server
            _provision(api, acknowledged)
            WORKLOADS[workload](api, acknowledged, random.Random(seed).randint(3, 30))
        os.kill(server.process.pid, signal.SIGKILL)  # the power goes: no shutdown, no flush
        server.process.wait(timeout=30)
    finally:
        server.stop()
    return acknowledged, api


def _lost(data_dir: Path, api: Api, acknowledged: Acknowledged) -> list[str]:
    """After the restart: each acknowledged thing that is not there (or not once)."""
    server = ServerProcess(data_dir, ADMIN_TOKEN)
    lost: list[str] = []
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            after = Api(client)
            after.tokens = api.tokens

            def read(who: str, path: str) -> httpx.Response:
                return after.as_(who, "GET", path)
            for space in acknowledged.get("spaces", []):
                if after.admin("GET", f"/admin/v1/spaces/{space}").status_code != 200:
                    lost.append(f"space {space}")
            for message_id in acknowledged.get("messages", []):
                if read("s1/bob", f"/v1/messages/{message_id}").status_code != 200:
                    lost.append(f"message {message_id}")
            for blob_id, content in acknowledged.get("blobs", []):
                answer = read("s1/alice", f"/v1/blobs/{blob_id}/content")
                if answer.status_code != 200 or answer.content != content:
                    lost.append(f"blob {blob_id}")
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
    assert _integrity(tmp_path / "data") == "ok"


@pytest.mark.thorough
@pytest.mark.parametrize("seed", range(10, 30))
def test_many_power_cuts_lose_nothing_acknowledged(tmp_path: Path, seed: int) -> None:
    workload = random.Random(seed).choice(list(WORKLOADS))
    acknowledged, api = _cut(tmp_path / "data", "full", workload, seed)
    assert _lost(tmp_path / "data", api, acknowledged) == []
    assert _integrity(tmp_path / "data") == "ok"


def test_the_control_with_synchronous_normal_loses_acknowledged_sends(tmp_path: Path) -> None:
    """The simulator bites: SQLite syncs the WAL only at checkpoints under ``normal``, so what
    was acknowledged since the last one is gone after the cut (and the database is whole)."""
    acknowledged, api = _cut(tmp_path / "data", "normal", "sends", 7)
    assert _lost(tmp_path / "data", api, acknowledged), "the power-cut simulator lost nothing"
    assert _integrity(tmp_path / "data") == "ok"
