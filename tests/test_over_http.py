"""Over real HTTP: ``waypost serve`` in a uvicorn subprocess on loopback, driven by the CLI's
bootstrap and an httpx client, exactly as the README walkthrough does with curl."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ADMIN = "smoke-admin-token"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """``waypost serve`` as a child process; its log is drained by a thread, which also tells
    when uvicorn says it is listening (no polling, no sleeps)."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self.ready = threading.Event()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "waypost.cli", "serve", "--data-dir", str(data_dir),
             "--port", str(self.port), *extra],
            env={**os.environ, "WAYPOST_ADMIN_TOKEN": ADMIN}, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._drain, daemon=True).start()
        if not self.ready.wait(timeout=60) or self.process.poll() is not None:
            self.stop()
            raise AssertionError("server did not start:\n" + "".join(self.log))

    def _drain(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line)
            if "Uvicorn running on" in line:
                self.ready.set()
        self.ready.set()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    running = ServerProcess(tmp_path / "data")
    try:
        yield running.url
    finally:
        running.stop()


def test_bootstrap_then_send_read_and_ack_over_http(server: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "admin", "bootstrap", "--url", server],
        env={**os.environ, "WAYPOST_ADMIN_TOKEN": ADMIN}, capture_output=True, text=True,
        check=True).stdout
    tokens = dict(line.removeprefix("export ").split("=", 1) for line in out.splitlines()
                  if line.startswith("export "))
    assert all(line.startswith(("export ", "#")) for line in out.splitlines())
    alice = {"Authorization": f"Bearer {tokens['ALICE_TOKEN']}"}
    bob = {"Authorization": f"Bearer {tokens['BOB_TOKEN']}"}
    with httpx.Client(base_url=server, timeout=10) as client:
        describe = client.get("/v1/describe").json()
        assert describe["protocol"] == "waypost/1"
        assert describe["capabilities"]["adapter"] == "sqlite"
        assert describe["capabilities"]["test_hooks"] is False
        sent = client.post("/v1/messages", headers=alice, json={
            "request_id": "hello-1", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "Hello", "body": {"text": "First message"}})
        assert sent.status_code == 201, sent.text
        page = client.get("/v1/feed", headers=bob).json()
        assert [item["item_id"] for item in page["items"]] == [sent.json()["feed_item_id"]]
        message = client.get(f"/v1/messages/{sent.json()['message_id']}", headers=bob).json()
        assert message["body"]["text"] == "First message"
        acked = client.post("/v1/acks", headers=bob, json={
            "request_id": "ack-1",
            "items": [{"item_id": sent.json()["feed_item_id"], "stage": "processed"}],
            "checkpoint": {"cursor": page["next_cursor"]}})
        assert acked.status_code == 200, acked.text
        assert client.get("/v1/feed", headers=bob).json()["items"] == []
        missing = client.get("/v1/nothing-here")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "NOT_FOUND"
    rerun = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "admin", "bootstrap", "--url", server,
         "--admin-token", ADMIN], capture_output=True, text=True, check=True).stdout
    assert "already bootstrapped" in rerun


def test_bootstrap_reports_a_wrong_admin_token(server: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "admin", "bootstrap", "--url", server,
         "--admin-token", "wrong"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "401" in result.stdout
    assert "UNAUTHENTICATED" in result.stdout
