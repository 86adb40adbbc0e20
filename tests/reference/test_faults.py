"""Fault points over real HTTP (a uvicorn child process): a crashed or unanswered write leaves one
stable result that a retry or a lookup finds; a temporary storage error is never final (P03,
P18). Real crashes end the process (``--crash-mode exit``) and a new one resumes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from waypost.bootstrap import provision
from waypost.conformance.targets import ServerProcess
from waypost.reference.domain.faults import CRASH_EXIT, POINTS

ADMIN = "faults-admin"


class Server:
    """A served data directory with the demo space's tokens; restartable."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir, self.extra = data_dir, extra
        self.process = ServerProcess(data_dir, ADMIN, "--test-hooks", "--no-access-log", *extra)
        self.admin = {"Authorization": f"Bearer {ADMIN}"}
        with httpx.Client(base_url=self.process.url, headers=self.admin, timeout=10) as client:
            self.tokens = provision(client, "faults")

    def client(self, who: str = "alice") -> httpx.Client:
        return httpx.Client(base_url=self.process.url, timeout=10,
                            headers={"Authorization": f"Bearer {self.tokens[who]}"})

    def arm(self, point: str, action: str, times: int = 1) -> None:
        answer = httpx.post(f"{self.process.url}/_test/faults", headers=self.admin,
                            json={"point": point, "action": action, "times": times})
        assert answer.status_code == 200, answer.text

    def restart_process(self) -> None:
        self.process.stop()
        self.process = ServerProcess(self.data_dir, ADMIN, "--test-hooks", "--no-access-log",
                                     *self.extra)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data")
    try:
        yield running
    finally:
        running.process.stop()


def send_body(request_id: str) -> dict[str, Any]:
    return {"request_id": request_id, "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "Hello", "body": {"text": "after a fault"}}


def bob_sees(server: Server) -> list[str]:
    with server.client("bob") as client:
        items = client.get("/v1/feed", params={"limit": 100}).json()["items"]
    return [item["message"]["message_id"] for item in items if item["type"] == "message"]


@pytest.mark.parametrize("point", ["commit.before", "commit.durable", "commit.after",
                                   "response.before"])
def test_a_crashed_send_has_one_stable_result(server: Server, point: str) -> None:
    """A send is one plan: a crash before its commit leaves nothing (the key is unknown), a
    crash after it leaves all of it (the key is committed); the retry answers once either way."""
    server.arm(point, "crash")
    with server.client() as alice:
        with pytest.raises(httpx.TransportError):
            alice.post("/v1/messages", json=send_body("crash-1"))
        before = alice.get("/v1/submissions/message.send/crash-1")
        committed = point != "commit.before"
        assert before.status_code == (200 if committed else 404)
        assert bob_sees(server) == ([before.json()["result"]["body"]["message_id"]]
                                    if committed else [])
        retry = alice.post("/v1/messages", json=send_body("crash-1"))
        assert retry.status_code == 201, retry.text
        assert retry.headers.get("Waypost-Replayed") == ("true" if committed else None)
        again = alice.post("/v1/messages", json=send_body("crash-1"))
    assert again.json() == retry.json()
    assert bob_sees(server) == [retry.json()["message_id"]]


@pytest.mark.parametrize("point", ["reserve.after", "object.after_write", "prepare.after"])
def test_a_send_passes_no_point_of_a_multi_step_write(server: Server, point: str) -> None:
    """No reservation, body object or prepare step exists apart from the send's one plan, so
    these points stay armed and the send answers normally."""
    server.arm(point, "crash")
    with server.client() as alice:
        sent = alice.post("/v1/messages", json=send_body("whole-1"))
    assert sent.status_code == 201
    armed = httpx.get(f"{server.process.url}/_test/faults", headers=server.admin).json()["armed"]
    assert [entry["point"] for entry in armed] == [point]
    assert bob_sees(server) == [sent.json()["message_id"]]


def test_a_lost_response_is_found_by_the_retry(server: Server) -> None:
    server.arm("commit.after", "lose_response")
    with server.client() as alice:
        with pytest.raises(httpx.TransportError):
            alice.post("/v1/messages", json=send_body("lost-1"))
        retry = alice.post("/v1/messages", json=send_body("lost-1"))
    assert retry.status_code == 201
    assert retry.headers["Waypost-Replayed"] == "true"
    assert bob_sees(server) == [retry.json()["message_id"]]


@pytest.mark.parametrize("point", ["commit.before", "commit.durable"])
def test_a_temporary_error_is_never_final(server: Server, point: str) -> None:
    server.arm(point, "unavailable")
    with server.client() as alice:
        failed = alice.post("/v1/messages", json=send_body("flaky-1"))
        assert failed.status_code == 503
        assert failed.json()["error"]["code"] == "UNAVAILABLE"
        lookup = alice.get("/v1/submissions/message.send/flaky-1")
        if point == "commit.before":  # nothing was written
            assert lookup.status_code == 404
        else:  # the commit was durable before the 503: the key holds its result, not a failure
            assert lookup.json()["state"] == "committed"
        retry = alice.post("/v1/messages", json=send_body("flaky-1"))
    assert retry.status_code == 201
    assert retry.headers.get("Waypost-Replayed") == (None if point == "commit.before" else "true")
    assert bob_sees(server) == [retry.json()["message_id"]]


def test_faults_are_armed_listed_and_cleared(server: Server) -> None:
    url = f"{server.process.url}/_test/faults"
    server.arm("commit.after", "unavailable", times=3)
    listed = httpx.get(url, headers=server.admin).json()
    assert listed["armed"] == [{"point": "commit.after", "action": "unavailable", "times": 3}]
    assert listed["points"] == list(POINTS)
    assert httpx.delete(url, headers=server.admin).json()["armed"] == []
    wrong = httpx.post(url, headers=server.admin, json={"point": "nowhere", "action": "crash"})
    assert (wrong.status_code, wrong.json()["error"]["details"]["field"]) == (400, "point")
    with server.client() as alice:
        assert alice.get("/_test/faults").status_code == 401


def test_restart_keeps_everything_durable(server: Server) -> None:
    with server.client() as alice:
        sent = alice.post("/v1/messages", json=send_body("before-restart")).json()
    server.arm("commit.before", "crash")
    restarted = httpx.post(f"{server.process.url}/_test/restart", headers=server.admin, json={})
    assert restarted.json() == {"restarted": True}
    with server.client() as alice:  # the armed fault went with the old state
        assert alice.post("/v1/messages", json=send_body("after-restart")).status_code == 201
    assert bob_sees(server)[0] == sent["message_id"]
    assert len(bob_sees(server)) == 2


def test_hooks_are_off_without_the_flag(tmp_path: Path) -> None:
    plain = ServerProcess(tmp_path / "plain", ADMIN, "--no-access-log")
    try:
        for path in ("/_test/faults", "/_test/restart"):
            answer = httpx.post(f"{plain.url}{path}", headers={"Authorization": f"Bearer {ADMIN}"},
                                json={})
            assert answer.status_code == 404
    finally:
        plain.stop()


@pytest.mark.slow
def test_a_real_crash_after_commit_is_replayed_by_the_next_process(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", "--crash-mode", "exit")
    try:
        content = b"survives"
        server.arm("commit.after", "crash")
        with server.client() as alice, pytest.raises(httpx.TransportError):
            alice.post("/v1/blobs", json={
                "request_id": "prep-1", "size": len(content),
                "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"})
        assert server.process.process.wait(timeout=10) == CRASH_EXIT
        server.restart_process()
        with server.client() as alice:
            retry = alice.post("/v1/blobs", json={
                "request_id": "prep-1", "size": len(content),
                "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"})
        assert retry.status_code == 201
        assert retry.headers["Waypost-Replayed"] == "true"
    finally:
        server.process.stop()


@pytest.mark.slow
def test_a_real_crash_in_the_writer_after_a_group_commit_leaves_the_key_resolvable(
        tmp_path: Path) -> None:
    """``commit.durable`` ends the process on the writer thread, after a group's COMMIT and
    before any of its callers is answered (here the send's one plan: the key is committed)."""
    server = Server(tmp_path / "data", "--crash-mode", "exit")
    try:
        server.arm("commit.durable", "crash")
        with server.client() as alice, pytest.raises(httpx.TransportError):
            alice.post("/v1/messages", json=send_body("durable-1"))
        assert server.process.process.wait(timeout=10) == CRASH_EXIT
        server.restart_process()
        with server.client() as alice:
            assert alice.get("/v1/submissions/message.send/durable-1").json()["state"] == \
                "committed"
            retry = alice.post("/v1/messages", json=send_body("durable-1"))
        assert retry.status_code == 201, retry.text
        assert retry.headers["Waypost-Replayed"] == "true"
        assert bob_sees(server) == [retry.json()["message_id"]]
    finally:
        server.process.stop()
