"""The bulk fill of ``waypost bench feed`` writes what sends write: the feed, the messages and
their keys look exactly as if alice had sent them."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN
from waypost.bench.fill import fill, fill_request
from waypost.bootstrap import provision
from waypost.reference.server import DATABASE, Settings, build_app


def test_filled_sends_read_and_replay_like_sent_ones(tmp_path: Path) -> None:
    with TestClient(build_app(Settings(tmp_path / "data", ADMIN_TOKEN, sweep_seconds=0))) as c:
        c.headers["Authorization"] = f"Bearer {ADMIN_TOKEN}"
        tokens = provision(c, "bench")
        alice, bob = tokens["alice"], tokens["bob"]
        assert alice is not None
        assert bob is not None
        assert fill(tmp_path / "data" / DATABASE, alice, 0, 30) == 30
        assert fill(tmp_path / "data" / DATABASE, alice, 30, 45) == 45
        page = c.get("/v1/feed?limit=100", headers={"Authorization": f"Bearer {bob}"}).json()
        items = page["items"]
        assert len(items) == 45
        assert [int(i["sequence"]) for i in items] == sorted(int(i["sequence"]) for i in items)
        assert {(i["type"], i["producer_id"], tuple(i["recipient_ids"]), i["message"]["subject"])
                for i in items} == {("message", "alice", ("bob",), "load")}
        third = items[3]["message"]["message_id"]
        message = c.get(f"/v1/messages/{third}", headers={"Authorization": f"Bearer {bob}"})
        assert message.json()["body"] == {"text": "bench", "options": [], "source_uri": None}
        replay = c.post("/v1/messages", json=fill_request(3),
                        headers={"Authorization": f"Bearer {alice}"})
        assert replay.status_code == 201, replay.text
        assert replay.headers["Waypost-Replayed"] == "true"
        assert replay.json()["message_id"] == third
        assert replay.json()["feed_item_id"] == items[3]["item_id"]
