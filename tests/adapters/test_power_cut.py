"""A power cut under load (commands/power_cut.py): the server runs with its database
behind the simulator, is killed (``SIGKILL``) in the middle of a run of sends, and is started
again on the same data directory, as a machine would be after its power came back. With
``--synchronous full`` every acknowledged send is there, once, and the database is whole; the
control, ``normal``, must lose acknowledged sends, or the simulator would prove nothing."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import apsw
import httpx
import pytest

from tests.support.api import ADMIN_TOKEN, Api
from waypost.conformance.targets import ServerProcess

pytestmark = pytest.mark.slow


def _sends_then_cut(data_dir: Path, synchronous: str, seed: int) -> tuple[list[str], Api]:
    """Provision, send until a cut at a random moment; the acknowledged message ids, and the
    client with its tokens."""
    server = ServerProcess(data_dir, ADMIN_TOKEN, "--test-hooks", "--simulate-power-cuts",
                           "--synchronous", synchronous)
    acknowledged: list[str] = []
    cut_after = random.Random(seed).randint(5, 40)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            api = Api(client)  # an httpx client to a real server
            api.space("s1", ("alice", "bob"))
            while len(acknowledged) < cut_after:
                answer = api.send("s1/alice", recipient_ids=["bob"])
                assert answer.status_code == 201, answer.text
                acknowledged.append(answer.json()["message_id"])
        os.kill(server.process.pid, signal.SIGKILL)  # the power goes: no shutdown, no flush
        server.process.wait(timeout=30)
    finally:
        server.stop()
    return acknowledged, api


def _survivors(data_dir: Path, api: Api, acknowledged: list[str]) -> list[str]:
    """After the restart: which acknowledged messages bob can read (none if the tokens went
    too), each read once."""
    server = ServerProcess(data_dir, ADMIN_TOKEN)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            token = api.tokens["s1/bob"]
            found = []
            for message_id in acknowledged:
                answer = client.get(f"/v1/messages/{message_id}",
                                    headers={"Authorization": f"Bearer {token}"})
                if answer.status_code == 200:
                    found.append(message_id)
                else:
                    assert answer.status_code in (401, 404), answer.text
            page = client.get("/v1/feed", params={"limit": 100},
                              headers={"Authorization": f"Bearer {token}"})
            if page.status_code == 200:  # each message once in bob's feed
                seen = [item["message"]["message_id"] for item in page.json()["items"]
                        if item["type"] == "message"]
                assert len(seen) == len(set(seen))
    finally:
        server.stop()
    return found


def _integrity(data_dir: Path) -> str:
    connection = apsw.Connection(str(data_dir / "waypost.sqlite3"))
    try:
        return str(next(connection.execute("PRAGMA integrity_check"))[0])
    finally:
        connection.close()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_with_synchronous_full_a_power_cut_loses_nothing_acknowledged(
        tmp_path: Path, seed: int) -> None:
    acknowledged, api = _sends_then_cut(tmp_path / "data", "full", seed)
    assert _survivors(tmp_path / "data", api, acknowledged) == acknowledged
    assert _integrity(tmp_path / "data") == "ok"


def test_the_control_with_synchronous_normal_loses_acknowledged_sends(tmp_path: Path) -> None:
    """The simulator bites: SQLite syncs the WAL only at checkpoints under ``normal``, so the
    acknowledged sends since the last one are gone after the cut (and the database is whole)."""
    acknowledged, api = _sends_then_cut(tmp_path / "data", "normal", 7)
    survivors = _survivors(tmp_path / "data", api, acknowledged)
    assert len(survivors) < len(acknowledged), "the power-cut simulator lost nothing"
    assert _integrity(tmp_path / "data") == "ok"
