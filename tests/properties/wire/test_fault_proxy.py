"""The fault proxy: network faults in front of a deployment without fault points (P03, P18)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from waypost.bootstrap import provision
from waypost.conformance.targets import ServerProcess
from waypost.properties.wire.proxy import FaultProxy

ADMIN = "proxy-admin"


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "data", ADMIN, "--no-access-log")  # no test hooks
    try:
        yield server
    finally:
        server.stop()


def _send(request_id: str) -> dict[str, object]:
    return {"request_id": request_id, "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "through the proxy", "body": {"text": "x"}}


def test_each_fault_reaches_the_deployment_as_it_says(deployment: ServerProcess) -> None:
    with httpx.Client(base_url=deployment.url, headers={"Authorization": f"Bearer {ADMIN}"},
                      timeout=10) as admin:
        tokens = provision(admin, "proxied")
    proxy = FaultProxy(httpx.HTTPTransport())
    with httpx.Client(base_url=deployment.url, transport=proxy, timeout=10, headers={
            "Authorization": f"Bearer {tokens['alice']}"}) as alice:
        def lookup(request_id: str) -> int | str:
            answer = alice.get(f"/v1/submissions/message.send/{request_id}")
            return answer.json()["state"] if answer.status_code == 200 else answer.status_code

        proxy.arm("drop_request")
        with pytest.raises(httpx.TransportError):
            alice.post("/v1/messages", json=_send("dropped-request"))
        assert lookup("dropped-request") == 404  # never reached the deployment
        proxy.arm("drop_response")
        with pytest.raises(httpx.TransportError):
            alice.post("/v1/messages", json=_send("dropped-response"))
        assert lookup("dropped-response") == "committed"  # done, the answer lost
        proxy.arm("duplicate")
        twice = alice.post("/v1/messages", json=_send("twice"))
        assert (twice.status_code, twice.headers["Waypost-Replayed"]) == (201, "true")
        proxy.arm("delay")
        assert alice.post("/v1/messages", json=_send("slow")).status_code == 201
    assert proxy.used == {"drop_request", "drop_response", "duplicate", "delay"}


@pytest.mark.slow
def test_the_kit_uses_the_proxy_where_there_are_no_hooks(deployment: ServerProcess,
                                                         tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "--target", deployment.url,
         "--admin-token", ADMIN, "--profile", "quick", "--seed", "5", "--only", "P03,P18",
         "--report-json", str(tmp_path / "report.json"),
         "--replay-dir", str(tmp_path / "replays")],
        capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    p18 = next(p for p in report["properties"] if p["id"] == "P18")
    # P18's checks passed; without hooks the ids only the hooks reach did not run
    assert p18["result"] in ("pass", "incomplete"), p18
    assert p18["checks"] > 0
    assert any(source.startswith("fault proxy") for source in report["fault_sources"])
    assert "faults injected by: fault proxy" in result.stdout
