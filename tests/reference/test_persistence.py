"""Data survives a restart: a second server over the same data directory sees everything."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api
from waypost.reference.server import Settings, build_app


def test_everything_survives_a_restart(data_dir: Path) -> None:
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN))) as first_client:
        first = Api(first_client)
        first.space("s1")
        sent = first.must_send("s1/alice", recipient_ids=["bob"], request_id="kept")
        page = first.feed("s1/bob")
        first.as_("s1/bob", "POST", "/v1/acks", {
            "request_id": "ack-kept", "items": [{"item_id": sent["feed_item_id"],
                                                 "stage": "received"}],
            "checkpoint": {"cursor": page["next_cursor"]}})
        tokens = dict(first.tokens)
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN))) as second_client:
        second = Api(second_client, tokens)
        replay = second.send("s1/alice", recipient_ids=["bob"], request_id="kept")
        assert replay.json() == sent
        assert replay.headers["Waypost-Replayed"] == "true"
        message = second.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}")
        assert message.json()["body"] == {"text": "hi", "options": [], "source_uri": None}
        assert second.feed("s1/bob")["items"] == []  # checkpoint kept
        cursor_still_valid = second.as_("s1/bob", "GET", "/v1/feed",
                                        params={"cursor": page["next_cursor"]})
        assert cursor_still_valid.status_code == 200
        (receipt,) = second.all_items("s1/alice")
        assert receipt["receipt"]["stage"] == "received"
