"""Over real HTTP: ``waypost serve`` in a uvicorn subprocess on loopback, driven by the CLI's
bootstrap and an httpx client, exactly as the README walkthrough does with curl."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from waypost.conformance.targets import ServerProcess

ADMIN = "smoke-admin-token"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    running = ServerProcess(tmp_path / "data", ADMIN)
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
        _publish_a_note(client, alice, bob)
        missing = client.get("/v1/nothing-here")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "NOT_FOUND"
    rerun = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "admin", "bootstrap", "--url", server,
         "--admin-token", ADMIN], capture_output=True, text=True, check=True)
    assert "already bootstrapped" in rerun.stderr  # seen even under eval "$(…)"
    assert "export" not in rerun.stdout


def _publish_a_note(client: httpx.Client, alice: dict[str, str], bob: dict[str, str]) -> None:
    """The README's memory walkthrough: upload a blob, publish it as an entry, read it back
    (whole, and a byte range of it)."""
    content = b"# Notes\nremember the milk\n"
    slot = client.post("/v1/blobs", headers=alice, json={
        "request_id": "note-blob-1", "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/markdown"}).json()
    assert client.put(slot["upload_url"], headers=alice, content=content).status_code == 200
    sealed = client.post(f"/v1/uploads/{slot['upload_id']}/commit", headers=alice,
                         json={"request_id": "note-seal-1"})
    assert sealed.status_code == 200, sealed.text
    published = client.post("/v1/collections/notes/revisions", headers=alice, json={
        "request_id": "notes-1", "expected_revision": 0, "mode": "delta",
        "items": [{"item_id": "milk", "path": "todo/milk.md", "blob_id": slot["blob_id"]}]})
    assert published.json() == {"revision": 1, "parent_revision": 0, "changed": True}
    page = client.get("/v1/collections/notes/revisions/1/items", headers=bob).json()
    assert [entry["path"] for entry in page["items"]] == ["todo/milk.md"]
    assert client.get(f"/v1/blobs/{slot['blob_id']}/content", headers=bob).content == content
    part = client.get(f"/v1/blobs/{slot['blob_id']}/content",
                      headers={**bob, "Range": "bytes=8-15"})  # a resumed download
    assert (part.status_code, part.content) == (206, content[8:16])
    assert part.headers["content-range"] == f"bytes 8-15/{len(content)}"
    assert part.headers["content-length"] == "8"
    feed = client.get("/v1/feed", headers=bob).json()["items"]
    assert [item["memory_revision"]["revision"] for item in feed] == [1]


def test_bootstrap_reports_a_wrong_admin_token(server: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "admin", "bootstrap", "--url", server,
         "--admin-token", "wrong"], capture_output=True, text=True)
    assert result.returncode == 1
    assert "401" in result.stderr  # on stderr: eval "$(waypost admin bootstrap)" shows it
    assert "UNAUTHENTICATED" in result.stderr
    assert "export" not in result.stdout


@pytest.mark.slow  # a kit run and its baseline: seconds of load, the slow tier's
def test_bench_kit_reports_json_with_machine_and_baseline_near_and_far(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "bench", "kit", "--profile", "quick",
         "--rtt", "20", "--json", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["machine"]["cpus"] >= 1
    near, far = bench["runs"]
    assert (near["rtt_ms"], far["rtt_ms"]) == (0, 20)
    assert far["measured_rtt_ms"] >= 20 > near["measured_rtt_ms"]  # the proxy adds the distance
    assert near["workers"] == 1 < far["workers"]  # the kit picks workers for a far target
    for run in (near, far):
        assert run["baseline"]["round_trips_per_second"] > 0
        assert run["steps"] > 0
        assert run["steps_per_second"] > 0
        assert run["checks_per_second"] > 0
        assert run["seconds"] > 0
        assert run["load"]["kit_cpu_seconds"] > 0
        assert "POST /v1/messages" in run["time"]["by_request"]
        assert not run["failed"]
    assert "example 10 of 15" in result.stderr  # progress while it runs


@pytest.mark.slow  # two servers under load per client: the slow tier's
@pytest.mark.parametrize("client", ["auto", "python"])
def test_bench_send_reports_each_send_beside_the_floor(tmp_path: Path, client: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "bench", "send", "--clients", "1,2", "--floor",
         "--seconds", "1", "--repeats", "1", "--client", client,
         "--json", str(tmp_path / "send.json")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    bench = json.loads((tmp_path / "send.json").read_text())
    used = "wrk" if client == "auto" and shutil.which("wrk") else "python"
    assert bench["client"] == used
    assert f"load from {used}" in result.stderr
    assert [level["connections"] for level in bench["levels"]] == [1, 2]
    for level in bench["levels"]:
        for name in ("waypost", "floor"):
            row = level[name]
            assert row["ok"] > 0
            assert row["other_answers"] == 0
            cpu = row["cpu_ms_per_send"]  # Linux' /proc is there on every machine it runs on
            assert cpu["total"] == pytest.approx(cpu["event_loop"] + cpu["other_threads"],
                                                 abs=0.01)
            # every send is at least one fsync'd commit and one answer on the socket
            assert row["per_send"]["write_calls"] >= 2
            assert row["per_send"]["write_call_kib"] > 0
        assert level["ratios"]["cpu_per_send"] is not None
        assert len(level["ratios"]["cpu_per_send_each_repeat"]) == 1  # --repeats 1
    assert set(bench["targets"]) >= {"write_call_kib_per_send", "no_temp_files"}
    pages = bench["levels"][0]["waypost"]["wal_pages_per_send"]  # one send per transaction
    assert pages["frames_per_commit"] >= 10  # a send writes a page of each table and index
    assert {"messages", "feed_items", "feed_recipients"} <= set(pages["by_btree"])
    if shutil.which("strace") and "not_measured" not in bench["traced"]:
        assert bench["traced"]["sends"] > 0
        assert bench["traced"]["temp_files_opened"] == 0
        assert bench["traced"]["per_send"]["wal"]["kib"] > 0
    assert bench["raw_fsync_transactions"]["per_second"] > 0
    assert "reference / floor: CPU" in result.stderr
    # the writer's CPU per send without a server: a send's nine rows cost more than one row
    schema = bench["schema_floor"]
    cpu = schema["cpu_ms_per_send"]
    assert 0 < cpu["one_row"] < cpu["rows"]
    assert cpu["plan"] > 0
    assert schema["lowest_cpu_ratio_at_1"] > 1
    # the plan's statements, each timed: the guard first, the writes, the outcome read, COMMIT
    statements = schema["plan_statement_us"]
    assert list(statements)[:3] == ["BEGIN", "INSERT commit_guards", "INSERT submissions"]
    assert {"INSERT feed_items", "SELECT", "DELETE commit_guards", "COMMIT"} <= set(statements)
    assert all(us > 0 for us in statements.values())
    assert bench["targets"]["cpu_over_floor_at_1"]["schema_allows_at_least"] == \
        schema["lowest_cpu_ratio_at_1"]
    assert "this schema allows no less than" in result.stderr
