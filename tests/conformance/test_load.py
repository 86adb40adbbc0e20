"""``waypost conformance load``: a short run against the reference has no anomaly; a server
whose feed pages drop or repeat an item is caught; only loopback targets without a flag."""

from __future__ import annotations

import dis
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import PortalTransport, kit_client
from tests.support.kit import KitApp, Patch
from waypost.conformance import load
from waypost.conformance.load_command import is_loopback

STORE_ATTR = dis.opmap["STORE_ATTR"]


@pytest.mark.slow
def test_a_short_run_against_sqlite_has_no_anomaly(tmp_path: Path) -> None:
    report_path = tmp_path / "load.json"
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "load", "--target", "sqlite",
         "--clients", "4", "--seconds", "3600", "--max-requests", "200", "--seed", "7",
         "--report-json", str(report_path)],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(report_path.read_text())
    assert report["anomalies"] == []
    assert report["requests"] >= 200  # the count ended the run, not the clock
    for op in ("send", "read", "ack", "publish"):
        assert report["operations"][op]["ok"] > 0, report["operations"]
        assert report["operations"][op]["per_second"] > 0
    assert report["checked"]["messages"] == report["operations"]["send"]["ok"]
    assert report["checked"]["revisions"] == report["operations"]["publish"]["ok"]
    assert report["checked"]["views"] == 9  # the space log, and each inbox twice
    assert "0 anomalies" in done.stdout
    assert "load: target http://127.0.0.1:" in done.stderr


@pytest.mark.parametrize(("defect", "kinds"), [
    ("drop_page_edges", {"lost"}), ("repeat_page_edges", {"duplicated"})])
def test_a_feed_that_drops_or_repeats_an_item_is_an_anomaly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        kit_app: KitApp, kit_admin: str, defect: str, kinds: set[str]) -> None:
    patch: Patch = request.getfixturevalue(defect)
    with kit_app(tmp_path / "data") as client:
        patch(monkeypatch, client)
        report = load.run(lambda: kit_client(client), kit_admin, "broken", clients=3,
                          seconds=3600, max_requests=150, seed=1)
    found = {anomaly.kind for anomaly in report.anomalies}
    assert found & kinds, [a.as_json() for a in report.anomalies]
    assert report.as_json()["anomalies"]


def test_the_reference_in_process_has_no_anomaly(kit_app: KitApp, kit_admin: str,
                                                 tmp_path: Path) -> None:
    """The same bounded run as the broken servers get, against the reference: the
    anomalies above are the defects'."""
    with kit_app(tmp_path / "data") as client:
        report = load.run(lambda: kit_client(client), kit_admin, "reference", clients=3,
                          seconds=3600, max_requests=150, seed=1)
    assert [a.as_json() for a in report.anomalies] == []
    assert report.requests >= 150


@contextmanager
def switching_inside(filename: str) -> Iterator[None]:
    """Threads started meanwhile pause a millisecond before each attribute store in
    ``filename``'s code, as a free-threaded or unlucky interpreter may: a read-modify-write
    shared between threads without a lock then loses updates."""
    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "opcode" and frame.f_code.co_code[frame.f_lasti] == STORE_ATTR:
            time.sleep(0.001)
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != filename:
            return None
        frame.f_trace_opcodes = True
        return local

    threading.settrace(calls)
    try:
        yield
    finally:
        threading.settrace(None)


@pytest.mark.slow
def test_the_counts_of_concurrent_clients_add_up(kit_app: KitApp, kit_admin: str,
                                                 tmp_path: Path) -> None:
    """Each client thread's answers count once in the report, however the threads
    interleave: the sends and publishes counted ok are those the history holds."""
    with kit_app(tmp_path / "data") as client, switching_inside(load.__file__):
        report = load.run(lambda: kit_client(client), kit_admin, "reference", clients=4,
                          seconds=3600, max_requests=300, seed=3)
    counted = report.as_json()["operations"]
    assert (counted["send"]["ok"], counted["publish"]["ok"]) == (
        len(report.history.sent), len(report.history.published))
    answered = sum(op["ok"] + op["errors"] + op["conflicts"] for op in counted.values())
    assert answered == report.requests


class LosesPublishAnswers(httpx.BaseTransport):
    """Every request reaches the app, but the answers of the first ``lose`` publishes (each
    of their attempts) are lost on the way back: committed, never answered."""

    def __init__(self, app: TestClient, lose: int) -> None:
        self.inner, self.left, self.lost = PortalTransport(app), lose, set[str]()
        self.lock = threading.Lock()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.inner.handle_request(request)
        if request.method == "POST" and request.url.path.endswith("/revisions"):
            request_id = json.loads(request.content)["request_id"]
            with self.lock:
                if request_id not in self.lost and self.left > 0:
                    self.left -= 1
                    self.lost.add(request_id)
                if request_id in self.lost:
                    raise httpx.ReadError("the answer was lost", request=request)
        return answer


def test_publishes_committed_without_an_answer_are_no_head_anomaly(
        kit_app: KitApp, kit_admin: str, tmp_path: Path) -> None:
    """A publish whose every answer was lost may have moved the head and added its entry:
    the run reports the lost answers, not a broken head."""
    with kit_app(tmp_path / "data") as client:
        transport = LosesPublishAnswers(client, 2)
        report = load.run(lambda: httpx.Client(transport=transport,
                                                base_url="http://testserver"),
                          kit_admin, "reference", clients=3, seconds=3600, max_requests=150,
                          seed=1)
    assert report.history.indeterminate == 2
    assert {a.kind for a in report.anomalies} == {"transport"}, [
        a.as_json() for a in report.anomalies if a.kind != "transport"]


class LogUnavailable(httpx.BaseTransport):
    """The app, except that every read with the space-log consumer's token (used only by
    the final re-read) is answered 503."""

    def __init__(self, app: TestClient) -> None:
        self.inner, self.log_token = PortalTransport(app), ""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.log_token and request.headers.get("authorization") == \
                f"Bearer {self.log_token}":
            return httpx.Response(503, json={"error": {"code": "UNAVAILABLE",
                                                       "message": "busy", "details": {}}})
        answer = self.inner.handle_request(request)
        if request.url.path.endswith("/tokens") and \
                json.loads(request.content)["consumer_id"] == "log":
            self.log_token = answer.json()["token"]
        return answer


def test_a_re_read_that_is_never_answered_is_an_anomaly(
        kit_app: KitApp, kit_admin: str, tmp_path: Path) -> None:
    with kit_app(tmp_path / "data") as client:
        transport = LogUnavailable(client)
        report = load.run(lambda: httpx.Client(transport=transport,
                                                base_url="http://testserver"),
                          kit_admin, "reference", clients=2, seconds=3600, max_requests=40,
                          seed=1)
    assert [(a.kind, a.detail) for a in report.anomalies] == [
        ("re-read", "space log: GET /v1/feed: 503 "
                    '{"error":{"code":"UNAVAILABLE","message":"busy","details":{}}}')]
    assert report.checked["views"] == 0


def test_a_remote_target_needs_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from waypost.cli import main

    assert main(["conformance", "load", "--target", "http://192.0.2.1:8787",
                 "--admin-token", "x", "--seconds", "1"]) == 2
    assert "not on loopback" in capsys.readouterr().err
    assert is_loopback("http://127.0.0.1:8787")
    assert is_loopback("http://[::1]:1")
    assert is_loopback("http://localhost:8787")
    assert not is_loopback("https://example.com")
