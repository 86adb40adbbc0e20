"""``waypost mcp`` trusts neither its caller nor the deployment: arguments are checked (id
grammar, integer ranges, sizes) before anything is queued or requested, attachments go out the
same on every resubmission, a blob is read no further than its declared size, and a call hung
on the network holds up no other call. Real ``waypost mcp`` processes driven by the MCP SDK's
client, against a real ``waypost serve`` (or, for a lying blob store, a real HTTP server that
lies)."""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from tests.support.mcp_harness import ok, over_stdio, reference_server, refused, relay, run, text
from waypost.bootstrap import provision
from waypost.conformance.targets import free_port
from waypost.reference.consumer import outbox
from waypost.reference.consumer.store import LocalStore

#: Each test drives real ``waypost mcp`` processes for a second or more: the slow tier.
pytestmark = pytest.mark.slow

ADMIN = "mcp-limits-admin"
#: Seconds a call that needs only the local file may take while another hangs (the hung one
#: waits for the HTTP client's 60-second timeout).
PROMPT = 15


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with reference_server(tmp_path_factory.mktemp("mcp-limits") / "data", ADMIN) as url:
        yield url


@pytest.fixture
def space(server: str) -> dict[str, str]:
    with httpx.Client(base_url=server, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        tokens = provision(admin, f"lim{secrets.token_hex(4)}")
    return {"url": server, **{k: str(v) for k, v in tokens.items()}}


def _outbound(db: Path) -> list[dict[str, Any]]:
    store = LocalStore(db)
    try:
        return store.rows("SELECT outbound_id, request_id, operation, state FROM local_outbound")
    finally:
        store.close()


def _messages_to_bob(space: dict[str, str]) -> list[dict[str, Any]]:
    with httpx.Client(base_url=space["url"],
                      headers={"Authorization": f"Bearer {space['bob']}"}) as http:
        items = http.get("/v1/feed", params={"limit": 100}).json()["items"]
        return [http.get(f"/v1/messages/{i['message']['message_id']}").json()
                for i in items if i["type"] == "message"]


def test_sizes_are_refused_before_anything_is_queued(space: dict[str, str],
                                                     tmp_path: Path) -> None:
    """Over a protocol limit (§11): 413 RESOURCE_LIMIT naming the limit, its maximum and the
    argument; and the local outbox gets no row."""
    db = tmp_path / "alice.db"
    ids = [f"a{n}" for n in range(17)]
    over: list[tuple[dict[str, Any], str, int, str]] = [  # arguments, limit, max, field
        ({"text": "x" * (20 << 20)}, "body_text_bytes", 65536, "text"),
        ({"text": "é" * 32769}, "body_text_bytes", 65536, "text"),  # 65538 bytes
        ({"subject": "é" * 129}, "subject_bytes", 256, "subject"),  # 258 bytes
        ({"to": [f"actor{n}" for n in range(65)]}, "recipients", 64, "to"),
        ({"attachment_ids": ids}, "attachments", 16, "attachment_ids"),
    ]

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(space["url"], db, space["alice"], errlog) as c:
                for change, limit, maximum, field in over:
                    error = await refused(c, "send", **{"to": ["bob"], "subject": "Hi",
                                                        "text": "x", **change})
                    assert (error["code"], error["details"]) == (
                        "RESOURCE_LIMIT", {"limit": limit, "max": maximum, "field": field})
                error = await refused(c, "reply", item_id="fi_x", text="x" * 65537)
                assert error["details"]["limit"] == "body_text_bytes"
                for change, field in (({"to": []}, "to"), ({"subject": ""}, "subject"),
                                      ({"attachment_ids": ["a", "a"]}, "attachment_ids")):
                    error = await refused(c, "send", **{"to": ["bob"], "subject": "Hi",
                                                        "text": "x", **change})
                    assert (error["code"], error["details"]) == (
                        "INVALID_REQUEST", {"field": field}), change
                error = await refused(c, "send", subject="Hi", text="to nobody in particular")
                assert (error["code"], error["details"]) == ("INVALID_REQUEST", {"field": "to"})
                assert _outbound(db) == []
                sent = await ok(c, "send", to=["bob"], subject="é" * 128, text="é" * 32768)
                assert sent["message_id"]  # exactly at the limits: taken
        (message,) = _messages_to_bob(space)
        assert (message["subject"], message["body"]["text"]) == ("é" * 128, "é" * 32768)

    run(main)


def test_bad_arguments_are_refused_before_any_request(tmp_path: Path) -> None:
    """Ids off the protocol's grammar, integers out of range and a NUL in a path are
    INVALID_REQUEST naming the argument, never INTERNAL. The server's port is closed: a call
    that made a request would answer UNAVAILABLE instead."""
    url = f"http://127.0.0.1:{free_port()}"
    cases: list[tuple[str, dict[str, Any], str]] = [  # tool, arguments, the field named
        ("inbox", {"after": 10**30}, "after"),
        ("inbox", {"limit": 10**30}, "limit"),
        ("memory_get", {"collection_id": "notes", "revision": 10**30}, "revision"),
        ("memory_get", {"collection_id": "x" * 97}, "collection_id"),
        ("memory_publish", {"collection_id": "notes", "expected_revision": 2**53},
         "expected_revision"),
        ("memory_publish", {"collection_id": "notes", "expected_revision": 0,
                            "entries": [{"item_id": "a b", "path": "a", "blob_id": "b"}]},
         "entries.0.item_id"),
        ("memory_publish", {"collection_id": "notes", "expected_revision": 0,
                            "delete_ids": ["ok", "%2e"]}, "delete_ids.1"),
        ("read_message", {"item_id": "../fi"}, "item_id"),
        ("read_message", {"item_id": ""}, "item_id"),
        ("mark_done", {"item_ids": ["fi_a", "fi b"]}, "item_ids.1"),
        ("send", {"to": ["bob!"], "subject": "s", "text": "t"}, "to.0"),
        ("send", {"to": ["bob"], "subject": "s", "text": "t", "thread_id": "thré"},
         "thread_id"),
        ("send", {"to": ["bob"], "subject": "s", "text": "t", "attachment_ids": ["a/b"]},
         "attachment_ids.0"),
        ("reply", {"item_id": "fi\nx", "text": "t"}, "item_id"),
        ("read_blob", {"blob_id": "blb_a?b"}, "blob_id"),
        ("attach", {"path": "a\x00b"}, "path"),
        ("read_blob", {"blob_id": "blb_a", "save_to": "x\x00"}, "save_to"),
    ]

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(url, tmp_path / "a.db", "token", errlog) as c:
                for tool, arguments, field in cases:
                    error = await refused(c, tool, **arguments)
                    assert (error["code"], error["details"]) == (
                        "INVALID_REQUEST", {"field": field}), (tool, arguments)
                error = await refused(c, "memory_get", collection_id="notes")
                assert error["code"] == "UNAVAILABLE"  # a valid call does reach for the server
        assert "Traceback" not in (tmp_path / "err.log").read_text()

    run(main)


def test_attachments_go_out_with_the_message_and_the_same_each_time(space: dict[str, str],
                                                                     tmp_path: Path) -> None:
    url = space["url"]
    (tmp_path / "alice-files").mkdir()
    (tmp_path / "alice-files" / "plan.txt").write_text("the plan")
    (tmp_path / "bob-files").mkdir()
    (tmp_path / "bob-files" / "ok.txt").write_text("agreed")
    arguments: dict[str, Any] = {"to": ["bob"], "subject": "Plan", "text": "attached"}

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with (over_stdio(url, tmp_path / "alice.db", space["alice"], errlog) as alice,
                        over_stdio(url, tmp_path / "bob.db", space["bob"], errlog) as bob):
                plan = (await ok(alice, "attach", path="plan.txt"))["blob_id"]
                arguments["attachment_ids"] = [plan]
                sent = await ok(alice, "send", **arguments)
                assert await ok(alice, "send", **arguments) == {**sent, "repeat": True}
                (item,) = (await ok(bob, "inbox"))["items"]
                shown = await ok(bob, "read_message", item_id=item["item_id"])
                assert (shown["message_id"], shown["attachments"]) == (sent["message_id"], [plan])
                assert (await ok(bob, "read_blob", blob_id=plan))["text"] == "the plan"
                agreed = (await ok(bob, "attach", path="ok.txt"))["blob_id"]
                await ok(bob, "reply", item_id=item["item_id"], text="see", attachment_ids=[agreed])
                (back,) = (await ok(alice, "inbox"))["items"]
                assert (await ok(alice, "read_message", item_id=back["item_id"]))[
                    "attachments"] == [agreed]
                error = await refused(alice, "send", to=["bob"], subject="Bad", text="x",
                                      attachment_ids=["blb_unknown"])
                assert error["code"] == "REFERENCE_INVALID"  # the server's final answer
        store = LocalStore(tmp_path / "alice.db")
        try:
            row = store.row("SELECT * FROM local_outbound WHERE operation = 'message.send'"
                            " AND subject = 'Plan'")
            assert row is not None
            body = outbox.request_body(store, row)
            assert body == outbox.request_body(store, row)
            assert (body["attachment_ids"], body["recipient_ids"]) == ([plan], ["bob"])
        finally:
            store.close()

    run(main)


def test_identical_calls_at_once_send_once(space: dict[str, str], tmp_path: Path) -> None:
    """Four identical sends at the same time, each on its own thread and connection: one
    write in the outbox, one message on the server, one answer for all."""
    db = tmp_path / "alice.db"
    answers: list[dict[str, Any]] = []

    async def send(client: Any) -> None:
        answers.append(await ok(client, "send", to=["bob"], subject="Once", text="at once"))

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with (over_stdio(space["url"], db, space["alice"], errlog) as c,
                        anyio.create_task_group() as calls):
                for _ in range(4):
                    calls.start_soon(send, c)

    run(main)
    assert len({answer["message_id"] for answer in answers}) == 1
    assert len(answers) == 4
    assert [row["state"] for row in _outbound(db)] == ["committed"]
    assert [m["subject"] for m in _messages_to_bob(space)] == ["Once"]


def test_a_call_hung_on_the_network_holds_up_no_other(space: dict[str, str],
                                                      tmp_path: Path) -> None:
    """inbox waits on a server that takes its request and never answers; read_message (the
    local file only) and the pinned-memory listing answer meanwhile. Then the connection
    drops and inbox ends UNAVAILABLE."""
    url = space["url"]
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {space['alice']}"}) as http:
        assert http.post("/v1/messages", json={
            "request_id": "hung-1", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "Before the hang", "body": {"text": "stored"}}
        ).status_code == 201
    ended: list[str] = []

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog, relay(url) as front:
            async with over_stdio(front.url, tmp_path / "bob.db", space["bob"], errlog) as bob:
                (item,) = (await ok(bob, "inbox"))["items"]
                front.stall()

                async def hang() -> None:
                    result = await bob.call_tool("inbox", {})
                    ended.append(json.loads(text(result))["error"]["code"])

                async with anyio.create_task_group() as calls:
                    calls.start_soon(hang)
                    assert await anyio.to_thread.run_sync(front.held.wait, 60)
                    with anyio.fail_after(PROMPT):
                        shown = await ok(bob, "read_message", item_id=item["item_id"])
                        listed = await bob.list_resources()
                    assert ended == []  # inbox is still waiting for its answer
                    front.close()
                assert (shown["subject"], listed.resources) == ("Before the hang", [])
        assert ended == ["UNAVAILABLE"]

    run(main)


class _LyingStore(ThreadingHTTPServer):
    """A blob store that lies: ``meta`` says 5 bytes ("hello"), the content never ends."""

    meta: dict[str, Any]


class _LyingBlobs(BaseHTTPRequestHandler):
    server: _LyingStore

    def do_GET(self) -> None:
        if not self.path.endswith("/content"):
            body = json.dumps(self.server.meta).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b"hello" * 4096)
        except OSError:
            return

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def _lying_blobs() -> Iterator[_LyingStore]:
    httpd = _LyingStore(("127.0.0.1", 0), _LyingBlobs)
    httpd.meta = {"blob_id": "blb_lie", "size": 5, "content_type": "text/plain",
                  "sha256": hashlib.sha256(b"hello").hexdigest()}
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_blob_is_read_no_further_than_its_declared_size(tmp_path: Path) -> None:
    """Content past the declared size is CONTENT_MISMATCH, inline or saved; a saved file is
    removed; metadata of the wrong types is UNAVAILABLE, not a crash."""
    files = tmp_path / "a-files"

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog, _lying_blobs() as store:
            url = f"http://127.0.0.1:{store.server_address[1]}"
            async with over_stdio(url, tmp_path / "a.db", "token", errlog) as c:
                error = await refused(c, "read_blob", blob_id="blb_lie")
                assert error["code"] == "CONTENT_MISMATCH"
                error = await refused(c, "read_blob", blob_id="blb_lie", save_to="lie.txt")
                assert error["code"] == "CONTENT_MISMATCH"
                assert list(files.iterdir()) == []
                store.meta = {**store.meta, "size": "5"}
                error = await refused(c, "read_blob", blob_id="blb_lie")
                assert error["code"] == "UNAVAILABLE"
                assert "size" in error["message"]

    run(main)
