"""``waypost conformance load``: a short run against the reference has no anomaly; a server
whose feed pages drop or repeat an item is caught; only loopback targets without a flag."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import KitApp, Patch
from tests.inprocess import kit_client
from waypost.conformance import load
from waypost.conformance.load_cli import is_loopback


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


def test_a_remote_target_needs_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    from waypost.cli import main

    assert main(["conformance", "load", "--target", "http://192.0.2.1:8787",
                 "--admin-token", "x", "--seconds", "1"]) == 2
    assert "not on loopback" in capsys.readouterr().err
    assert is_loopback("http://127.0.0.1:8787")
    assert is_loopback("http://[::1]:1")
    assert is_loopback("http://localhost:8787")
    assert not is_loopback("https://example.com")
