"""The dashboard on D1: ``waypost serve --storage d1 --dashboard`` (uvicorn on loopback) over
the gateway Worker on local workerd; sessions, identity forms and the inspector all go through
the same commit plans and reads as on SQLite."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support.api import ADMIN_TOKEN
from tests.support.dashboard_client import Dash
from waypost.conformance.targets import ServerProcess
from waypost.reference.server import Settings

pytestmark = pytest.mark.d1


def test_the_dashboard_serves_from_d1(d1_settings: Settings) -> None:
    server = ServerProcess(d1_settings.data_dir, ADMIN_TOKEN, "--storage", "d1", "--gateway",
                           str(d1_settings.gateway_url), "--dashboard", "--no-access-log",
                           env={"WAYPOST_GATEWAY_SECRET": str(d1_settings.gateway_secret)})
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            _walk(Dash(client), client)
    finally:
        server.stop()


def _walk(dash: Dash, client: httpx.Client) -> None:
    assert dash.page("/dashboard/").status_code == 303
    assert dash.sign_in(ADMIN_TOKEN).status_code == 303
    session_id = dash.session
    assert dash.post("/dashboard/spaces", "dash-s1", space_id="d1s", display_name="On D1",
                     source_uri="https://example.test/d1s", actor_id="alice", kind="agent",
                     actor_display_name="Alice").status_code == 303
    assert dash.post("/dashboard/spaces/d1s/consumers", "dash-c1", consumer_id="alice-inbox",
                     actor_id="alice", view="space_log").status_code == 303
    issued = dash.post("/dashboard/spaces/d1s/tokens", "dash-t1", actor_id="alice",
                       consumer_id="alice-inbox", scopes=["message.send", "message.read",
                                                          "space.observe"],
                       recipients_mode="any", collections="", blob_references="")
    assert issued.status_code == 201, issued.text
    found = re.search(r'id="secret">([^<]+)<', issued.text)
    assert found is not None
    alice = {"Authorization": f"Bearer {found.group(1)}"}
    sent = client.post("/v1/messages", headers=alice, json={
        "request_id": "d1-msg", "thread": {"new": True}, "kind": "info",
        "subject": "<b>on d1</b>", "body": {"text": "stored in R2"}})
    assert sent.status_code == 201, sent.text
    feed = dash.page("/dashboard/spaces/d1s/feed")
    assert "&lt;b&gt;on d1&lt;/b&gt;" in feed.text
    message = dash.page(f"/dashboard/spaces/d1s/messages/{sent.json()['message_id']}")
    assert "stored in R2" in message.text
    consumers = dash.page("/dashboard/spaces/d1s/consumers")
    assert re.search(r'class="behind">1<', consumers.text)
    space = dash.page("/dashboard/spaces/d1s")
    assert space.status_code == 200
    assert len(re.findall(r'data-token="', space.text)) == 1
    listed = client.get("/admin/v1/spaces/d1s", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert [len(listed.json()[name]) for name in ("tokens", "threads")] == [1, 1]
    assert dash.post("/dashboard/sign-out").status_code == 303
    client.cookies.set("waypost_session", session_id)
    assert dash.page("/dashboard/").status_code == 303
