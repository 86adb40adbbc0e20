"""``waypost mcp`` killed between its durable steps: the same tool call after a restart writes
once. The process ends for real at the consumer's fault points (``os._exit``, as SIGKILL)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.mcp_harness import ok, over_stdio, reference_server, run
from waypost.bootstrap import provision

ADMIN = "mcp-crash-admin"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with reference_server(tmp_path_factory.mktemp("mcp-crash") / "data", ADMIN) as url:
        yield url


@pytest.fixture
def space(server: str) -> dict[str, str]:
    with httpx.Client(base_url=server, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        tokens = provision(admin, f"crash{secrets.token_hex(4)}")
    return {"url": server, **{k: str(v) for k, v in tokens.items()}}


def _messages_to_bob(space: dict[str, str]) -> list[dict[str, Any]]:
    """bob's feed from the start, over HTTP: the messages the server published to him, read
    in full."""
    with httpx.Client(base_url=space["url"],
                      headers={"Authorization": f"Bearer {space['bob']}"}) as http:
        items = http.get("/v1/feed", params={"limit": 100}).json()["items"]
        return [http.get(f"/v1/messages/{i['message']['message_id']}").json()
                for i in items if i["type"] == "message"]


def _attempts(db: Path) -> list[tuple[str, int]]:
    local = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [(str(state), int(n)) for state, n in local.execute(
            "SELECT state, attempts FROM local_outbound WHERE operation = 'message.send'")]
    finally:
        local.close()


def _send_killed_then_repeated(space: dict[str, str], tmp_path: Path, point: str) -> None:
    """The send (with an attachment) is in the outbox when the process dies; ``delivered``:
    the server has it too. The restarted process rebuilds the same request from the outbox:
    the server replays it (another body under the same request_id would be
    IDEMPOTENCY_CONFLICT)."""
    db = tmp_path / "alice.db"
    delivered = point == "outbound.after_submit"
    arguments: dict[str, Any] = {"to": ["bob"], "subject": "Once", "text": "exactly once"}
    (tmp_path / "alice-files").mkdir()
    (tmp_path / "alice-files" / "once.txt").write_text("attached once")

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(space["url"], db, space["alice"], errlog, fault=point) as c:
                blob = await ok(c, "attach", path="once.txt")  # no outbox: no fault point
                arguments["attachment_ids"] = [blob["blob_id"]]
                with pytest.raises(MCPError, match="Connection closed"):  # the process is gone
                    await c.call_tool("send", arguments)
            assert _attempts(db) == [("pending", int(delivered))]
            assert len(_messages_to_bob(space)) == int(delivered)
            async with over_stdio(space["url"], db, space["alice"], errlog) as c:
                sent = await ok(c, "send", **arguments)
                assert sent["repeat"] is True
                again = await ok(c, "send", **arguments)
                assert again == sent
        (message,) = _messages_to_bob(space)
        assert (message["message_id"], message["subject"]) == (sent["message_id"], "Once")
        assert message["attachment_ids"] == arguments["attachment_ids"]

    run(main)
    assert _attempts(db) == [("committed", 1 + int(delivered))]


@pytest.mark.slow
def test_a_send_killed_after_its_submission_is_sent_once(space: dict[str, str],
                                                         tmp_path: Path) -> None:
    _send_killed_then_repeated(space, tmp_path, "outbound.after_submit")


@pytest.mark.slow
def test_a_send_killed_before_its_submission_is_sent_once(space: dict[str, str],
                                                          tmp_path: Path) -> None:
    _send_killed_then_repeated(space, tmp_path, "outbound.before_submit")


@pytest.mark.slow
def test_done_killed_before_its_ack_is_acknowledged_after_the_restart(
        space: dict[str, str], tmp_path: Path) -> None:
    url, bob_db = space["url"], tmp_path / "bob.db"
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {space['alice']}"}) as http:
        assert http.post("/v1/messages", json={
            "request_id": "done-1", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "todo_suggestion", "subject": "Water the plants",
            "body": {"text": "today"}}).status_code == 201

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(url, bob_db, space["bob"], errlog,
                                  fault="done.after_commit") as bob:
                (item,) = (await ok(bob, "inbox"))["items"]
                with pytest.raises(MCPError, match="Connection closed"):
                    await bob.call_tool("mark_done", {"item_ids": [item["item_id"]]})
            async with over_stdio(url, bob_db, space["bob"], errlog) as bob:
                assert (await ok(bob, "inbox"))["items"] == []  # done survived; the ACK went out
                again = await ok(bob, "mark_done", item_ids=[item["item_id"]])
                assert again == {"done": [], "acked": True}
            async with over_stdio(url, tmp_path / "alice.db", space["alice"], errlog) as alice:
                await ok(alice, "inbox")
        alice_file = apsw.Connection(str(tmp_path / "alice.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            stages = [row[0] for row in alice_file.execute(
                "SELECT stage FROM local_receipt_updates WHERE subject_item_id = ?"
                " ORDER BY receipt_version", (item["item_id"],))]
        finally:
            alice_file.close()
        assert stages == ["received", "processed"]

    run(main)
