"""``waypost mcp``: agents use the reference consumer through MCP tools. A real ``waypost serve``,
real ``waypost mcp`` processes, and the MCP SDK's own client over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.mcp_harness import (
    agent,
    command,
    http_process,
    ok,
    over_http,
    over_stdio,
    reference_server,
    refused,
    run,
)
from waypost.bootstrap import provision
from waypost.reference.consumer.store import LocalStore

ADMIN = "mcp-admin"
TOOLS = {"inbox", "read_message", "mark_done", "send", "reply", "memory_get", "memory_publish",
         "attach", "read_blob"}
#: The tools that write nothing anywhere: not the local file (inbox syncs into it), not the
#: folder (read_blob can save), not the server.
READ_ONLY = {"read_message", "memory_get"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with reference_server(tmp_path_factory.mktemp("mcp") / "data", ADMIN) as url:
        yield url


@pytest.fixture
def space(server: str) -> dict[str, str]:
    """A fresh space: alice (default actor, keeps the collection notes) and bob, a token each."""
    space_id = f"mcp{secrets.token_hex(4)}"
    with httpx.Client(base_url=server, timeout=30,
                      headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
        tokens = provision(admin, space_id)
    return {"url": server, "space_id": space_id, **{k: str(v) for k, v in tokens.items()}}


def closed(schema: Any) -> bool:
    """Whether every object in a JSON Schema refuses members it does not name."""
    if isinstance(schema, list):
        return all(closed(value) for value in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        return False
    return all(closed(value) for value in schema.values())


def test_tools_are_few_strict_and_small(space: dict[str, str], tmp_path: Path) -> None:
    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(space["url"], tmp_path / "a.db", space["alice"], errlog) as c:
                listed = await c.list_tools()
                assert {tool.name for tool in listed.tools} == TOOLS
                for tool in listed.tools:
                    assert closed(tool.input_schema), tool.name
                    assert 0 < len(tool.description or "") <= 120, tool.name
                    assert tool.output_schema is not None, tool.name
                    assert tool.output_schema["type"] == "object", tool.name
                hints = {t.name: t.annotations.read_only_hint for t in listed.tools
                         if t.annotations is not None}
                assert {name for name, read_only in hints.items() if read_only} == READ_ONLY
                size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
                assert size < 8192, f"tools/list is {size} bytes"
                inputs = listed.model_copy(update={"tools": [
                    t.model_copy(update={"output_schema": None}) for t in listed.tools]})
                size = len(inputs.model_dump_json(by_alias=True, exclude_none=True))
                assert size < 5500, f"tools/list without the output schemas is {size} bytes"
                for name in sorted(TOOLS):  # an unknown argument is refused by every tool
                    error = await refused(c, name, surprise=1)
                    assert error["code"] == "INVALID_REQUEST", name
                    assert error["details"]["field"] == "surprise", name
                error = await refused(c, "inbox", limit="20")  # no coercion either
                assert (error["code"], error["details"]["field"]) == ("INVALID_REQUEST", "limit")
                error = await refused(c, "memory_publish", collection_id="notes",
                                      expected_revision=0,
                                      entries=[{"item_id": "a", "path": "a", "blob_id": "b",
                                                "extra": True}])
                assert error["details"]["field"] == "entries.0.extra"
                error = await refused(c, "send", to=["nobody"], subject="Hi", text="there")
                assert error["code"] == "NOT_FOUND"  # the server's §7 code and message
                assert error["message"] == "recipient not found"
                error = await refused(c, "attach", path=str(tmp_path / "missing.md"))
                assert (error["code"], error["details"]["field"]) == ("INVALID_REQUEST", "path")
                error = await refused(c, "read_blob", blob_id="blb_unknown")
                assert error["code"] == "NOT_FOUND"
        logged = (tmp_path / "err.log").read_text()
        assert space["alice"] not in logged

    run(main)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_two_agents_exchange_a_message_and_a_reply(space: dict[str, str], tmp_path: Path,
                                                   transport: str) -> None:
    url = space["url"]

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with (agent(transport, url, tmp_path / "alice.db", space["alice"],
                              errlog) as alice,
                        agent(transport, url, tmp_path / "bob.db", space["bob"], errlog) as bob):
                sent = await ok(alice, "send", to=["bob"], subject="Plan", text="Meet at 10?",
                                kind="question")
                (item,) = (await ok(bob, "inbox"))["items"]
                assert item == {"item_id": item["item_id"], "seq": item["seq"], "from": "alice",
                                "subject": "Plan", "kind": "question"}
                message = await ok(bob, "read_message", item_id=item["item_id"])
                assert (message["message_id"], message["thread_id"], message["text"],
                        message["to"], message["state"]) == (
                    sent["message_id"], sent["thread_id"], "Meet at 10?", ["bob"], "pending")
                answer = await ok(bob, "reply", item_id=item["item_id"], text="Yes, at 10")
                assert answer["thread_id"] == sent["thread_id"]
                assert await ok(bob, "mark_done", item_ids=[item["item_id"]]) == {
                    "done": [item["item_id"]], "acked": True}
                assert (await ok(bob, "inbox"))["items"] == []
                assert [i["item_id"] for i in (await ok(bob, "inbox", state="done"))["items"]] \
                    == [item["item_id"]]
                (back,) = (await ok(alice, "inbox"))["items"]
                assert (back["from"], back["subject"], back["kind"]) == ("bob", "Re: Plan",
                                                                         "result")
                shown = await ok(alice, "read_message", item_id=back["item_id"])
                assert (shown["in_reply_to"], shown["thread_id"], shown["text"]) == (
                    sent["message_id"], sent["thread_id"], "Yes, at 10")
                error = await refused(bob, "read_message", item_id="fi_missing")
                assert error["code"] == "NOT_FOUND"
        # the server took bob's receipts: alice's consumer stored them from her feed
        alice_file = apsw.Connection(str(tmp_path / "alice.db"), flags=apsw.SQLITE_OPEN_READONLY)
        stages = [row[0] for row in alice_file.execute(
            "SELECT stage FROM local_receipt_updates WHERE subject_item_id = ?"
            " ORDER BY receipt_version", (item["item_id"],))]
        alice_file.close()
        assert stages == ["received", "processed"]
        files = b"".join(path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
        assert space["alice"].encode() not in files
        assert space["bob"].encode() not in files

    run(main)


@pytest.mark.slow
def test_memory_publish_read_and_a_conflict(space: dict[str, str], tmp_path: Path) -> None:
    url = space["url"]
    (tmp_path / "alice-files").mkdir()  # the default --files of alice.db (bob's: made by mcp)
    note = tmp_path / "alice-files" / "milk.md"
    note.write_text("# Notes\nremember the milk\n")

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with (over_stdio(url, tmp_path / "alice.db", space["alice"], errlog) as alice,
                        over_stdio(url, tmp_path / "bob.db", space["bob"], errlog) as bob):
                blob = await ok(alice, "attach", path="milk.md")
                assert blob["size"] == note.stat().st_size
                head = (await ok(alice, "memory_get", collection_id="notes"))["head"]
                entry = {"item_id": "milk", "path": "todo/milk.md", "blob_id": blob["blob_id"]}
                published = await ok(alice, "memory_publish", collection_id="notes",
                                     expected_revision=head, entries=[entry])
                assert published == {"published": True, "revision": head + 1, "changed": True}
                read = await ok(bob, "memory_get", collection_id="notes")
                assert (read["revision"], read["entries"]) == (head + 1, [entry])
                content = await ok(bob, "read_blob", blob_id=blob["blob_id"])
                assert content["text"] == note.read_text()
                saved = await ok(bob, "read_blob", blob_id=blob["blob_id"], save_to="copy.md")
                assert Path(saved["saved_to"]) == (tmp_path / "bob-files" / "copy.md").resolve()
                assert Path(saved["saved_to"]).read_text() == note.read_text()
                # a publish on a stale head is an answer with the head, not an error
                stale = await ok(alice, "memory_publish", collection_id="notes",
                                 expected_revision=head, entries=[{**entry, "path": "x.md"}])
                assert stale == {"published": False, "conflict": True,
                                 "current_revision": head + 1}
                pinned = await ok(alice, "memory_get", collection_id="notes", revision=head)
                assert pinned["entries"] == []
                (item,) = [i for i in (await ok(bob, "inbox"))["items"] if i["kind"] == "memory"]
                shown = await ok(bob, "read_message", item_id=item["item_id"])
                assert (shown["collection_id"], shown["revision"]) == ("notes", head + 1)
                # bob's consumer pinned the revision: a resource, read from his local file
                uri = f"waypost://memory/notes/{head + 1}"
                listed = await bob.list_resources()
                assert uri in [str(r.uri) for r in listed.resources]
                (pinned_json,) = (await bob.read_resource(uri)).contents
                assert json.loads(pinned_json.text) == {
                    "collection_id": "notes", "revision": head + 1, "entries": [entry]}
                for revision in ("999", "9" * 30, "²"):  # unknown, past SQLite's, not ASCII
                    with pytest.raises(MCPError, match="no pinned revision"):
                        await bob.read_resource(f"waypost://memory/notes/{revision}")

    run(main)


@pytest.mark.slow
def test_files_stay_inside_the_agents_folder(space: dict[str, str], tmp_path: Path) -> None:
    """attach and read_blob save_to reach only the --files folder: by default a folder of the
    agent's own beside the --db file (created on start), not the db file's folder, which holds
    the token files. Symlinks are followed, and the process's own files are refused by any
    name they have (a symlink to them, a hard link)."""
    home = tmp_path / "agent"
    home.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("a private key")
    token_file = home / "alice.token"
    token_file.write_text(space["alice"])
    (home / "bob.token").write_text(space["bob"])  # the README's layout: tokens beside the dbs
    files = home / "a-files"

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(space["url"], home / "a.db", space["alice"], errlog,
                                  extra=("--token-file", str(token_file))) as c:
                assert files.is_dir()  # made on start
                (files / "note.md").write_text("hello")
                for name, target in (("key.txt", secret), ("up", tmp_path),
                                     ("db", home / "a.db"), ("wal", home / "a.db-wal"),
                                     ("journal", home / "a.db-journal"), ("tok", token_file)):
                    (files / name).symlink_to(target)
                blob = await ok(c, "attach", path="note.md")  # relative: inside the folder
                assert blob["size"] == 5
                outside = ["../bob.token", str(home / "bob.token"), "../a.db", "../alice.token",
                           "../secret.txt", str(secret), "key.txt", "up/secret.txt",
                           "~/.ssh/id_rsa", "db", "wal", "tok", "a\x00b"]
                for path in outside:
                    error = await refused(c, "attach", path=path)
                    assert (error["code"], error["details"]) == (
                        "INVALID_REQUEST", {"field": "path"}), path
                for path in ("../copy.md", str(tmp_path / "copy.md"), "up/copy.md", "journal",
                             "../a.db-journal", "x\x00y"):
                    error = await refused(c, "read_blob", blob_id=blob["blob_id"],
                                          save_to=path)
                    assert (error["code"], error["details"]) == (
                        "INVALID_REQUEST", {"field": "save_to"}), path
                assert not (tmp_path / "copy.md").exists()
                assert not (home / "a.db-journal").exists()
                saved = await ok(c, "read_blob", blob_id=blob["blob_id"], save_to="copy.md")
                assert (files / "copy.md").read_text() == "hello"
                assert Path(saved["saved_to"]) == (files / "copy.md").resolve()
            async with over_stdio(space["url"], home / "a.db", space["alice"], errlog,
                                  extra=("--files", str(tmp_path))) as c:
                assert (await ok(c, "attach", path=str(secret)))["size"] == 13
                error = await refused(c, "attach", path="agent/a.db")
                assert error["details"] == {"field": "path"}

    run(main)


def test_a_symlinked_database_keeps_every_name_of_its_files(space: dict[str, str],
                                                            tmp_path: Path) -> None:
    """--db is a symlink to real.db: SQLite names the journals after the target, so real.db-wal
    is refused as well as link.db-wal; a hard link to the token file is refused too."""
    (tmp_path / "real").mkdir()
    (tmp_path / "agent").mkdir()
    link = tmp_path / "agent" / "link.db"
    link.symlink_to(tmp_path / "real" / "real.db")
    token_file = tmp_path / "agent" / "alice.token"
    token_file.write_text(space["alice"])
    os.link(token_file, tmp_path / "token-copy")
    (tmp_path / "note.md").write_text("mine")

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(space["url"], link, space["alice"], errlog,
                                  extra=("--files", str(tmp_path),
                                         "--token-file", str(token_file))) as c:
                assert (await ok(c, "attach", path="note.md"))["size"] == 4
                assert (tmp_path / "real" / "real.db-wal").exists()  # SQLite's, by the target
                for path in ("real/real.db", "real/real.db-wal", "real/real.db-shm",
                             "agent/link.db", "agent/link.db-wal", "agent/alice.token",
                             "token-copy"):
                    error = await refused(c, "attach", path=path)
                    assert (error["code"], error["details"]) == (
                        "INVALID_REQUEST", {"field": "path"}), path
                error = await refused(c, "read_blob", blob_id="blb_x", save_to="real/real.db-journal")
                assert error["details"] == {"field": "save_to"}

    run(main)


@pytest.mark.slow
def test_mark_done_says_when_the_server_refused_the_ack(space: dict[str, str],
                                                        tmp_path: Path) -> None:
    """bob's token may read but not acknowledge: mark_done moves the item locally and
    answers the server's refusal of the processed ACK, not acked: true. A token revoked
    before mark_done leaves the ACK queued: acked false, and why."""
    url = space["url"]
    admin = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=url, timeout=30) as http:
        def issue(request_id: str, scopes: list[str]) -> dict[str, str]:
            issued: dict[str, str] = http.post(
                f"/admin/v1/spaces/{space['space_id']}/tokens", headers=admin, json={
                    "request_id": request_id, "actor_id": "bob", "consumer_id": "bob-inbox",
                    "scopes": scopes, "recipients": {"mode": "any"}, "collections": [],
                    "blob_references": []}).json()
            return issued
        reader = issue("reader", ["message.read"])["token"]
        revoked = issue("revoked", ["message.read", "receipt.write"])
        assert http.post("/v1/messages", headers={"Authorization": f"Bearer {space['alice']}"},
                         json={"request_id": "ask", "recipient_ids": ["bob"],
                               "thread": {"new": True}, "kind": "info", "subject": "Hi",
                               "body": {"text": "there"}}).status_code == 201

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(url, tmp_path / "bob.db", reader, errlog) as bob:
                (item,) = (await ok(bob, "inbox"))["items"]
                error = await refused(bob, "mark_done", item_ids=[item["item_id"]])
                assert error["code"] == "FORBIDDEN"
                assert error["message"].startswith("done here, but the server refused the "
                                                   "processed ACK: ")
                assert (await ok(bob, "inbox", state="done"))["items"] == [item]
            async with over_stdio(url, tmp_path / "bob2.db", revoked["token"], errlog) as bob:
                (item,) = (await ok(bob, "inbox"))["items"]
                assert httpx.post(f"{url}/admin/v1/tokens/{revoked['token_id']}/revoke",
                                  headers=admin, json={"request_id": "revoke"}
                                  ).status_code == 200
                answer = await ok(bob, "mark_done", item_ids=[item["item_id"]])
                assert (answer["done"], answer["acked"]) == ([item["item_id"]], False)
                assert answer["reason"].startswith("UNAUTHENTICATED (401): ")
                assert answer["reason"].endswith("; the ACK goes out with the next call")
        assert reader not in (tmp_path / "err.log").read_text()

    run(main)


def test_an_inbox_page_of_twenty_is_small(space: dict[str, str], tmp_path: Path) -> None:
    url = space["url"]
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {space['alice']}"}) as http:
        for n in range(21):
            assert http.post("/v1/messages", json={
                "request_id": f"page-{n}", "recipient_ids": ["bob"], "thread": {"new": True},
                "kind": "info", "subject": f"Status report number {n:02d} of the nightly build",
                "body": {"text": "x" * 2000}}).status_code == 201

    async def main() -> None:
        with (tmp_path / "err.log").open("w") as errlog:
            async with over_stdio(url, tmp_path / "bob.db", space["bob"], errlog) as bob:
                result = await bob.call_tool("inbox", {})
                page_text = result.content[0].text
                page = json.loads(page_text)
                assert len(page["items"]) == 20
                assert result.structured_content == page  # the same value, for the client
                size = len(page_text.encode())
                assert size < 3500, f"a 20-item inbox page is {size} bytes"
                rest = await ok(bob, "inbox", after=page["next_after"])
                assert [i["subject"] for i in rest["items"]] == [
                    "Status report number 20 of the nightly build"]
                assert "next_after" not in rest

    run(main)


@pytest.mark.slow
def test_streamable_http_needs_the_token_and_serves_the_tools(space: dict[str, str],
                                                             tmp_path: Path) -> None:
    url = space["url"]
    with (tmp_path / "err.log").open("w") as errlog, \
            http_process(url, tmp_path / "alice.db", space["alice"], errlog) as endpoint:
        assert endpoint.startswith("http://127.0.0.1:")
        anonymous = httpx.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["code"] == "UNAUTHENTICATED"
        wrong = httpx.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                           headers={"Authorization": f"Bearer {space['bob']}"})
        assert wrong.status_code == 401

        async def main() -> None:
            async with over_http(endpoint, space["alice"]) as alice:
                assert {t.name for t in (await alice.list_tools()).tools} == TOOLS
                first = await ok(alice, "send", to=["bob"], subject="Over HTTP", text="hi",
                                 key="http-1")
                again = await ok(alice, "send", to=["bob"], subject="Over HTTP", text="hi",
                                 key="http-1")
                assert again == {**first, "repeat": True}
                error = await refused(alice, "send", to=["bob"], subject="Other", text="hi",
                                      key="http-1")
                assert error["code"] == "IDEMPOTENCY_CONFLICT"
                assert (await refused(alice, "inbox", bogus=True))["code"] == "INVALID_REQUEST"
            async with over_stdio(url, tmp_path / "bob.db", space["bob"], errlog) as bob:
                subjects = [i["subject"] for i in (await ok(bob, "inbox"))["items"]]
                assert subjects == ["Over HTTP"]

        run(main)
    assert space["alice"] not in (tmp_path / "err.log").read_text()


@pytest.mark.slow
def test_the_command_needs_a_token_and_keeps_a_file_to_its_server(space: dict[str, str],
                                                                   tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    env = {k: v for k, v in os.environ.items() if k != "WAYPOST_TOKEN"}
    done = subprocess.run(command(space["url"], db), env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "waypost mcp: no token: pass --token-file FILE or set WAYPOST_TOKEN\n"
    other = LocalStore(db, create=True)
    other.init_profile("http://127.0.0.1:1", "default")
    other.close()
    done = subprocess.run(command(space["url"], db), env={**env, "WAYPOST_TOKEN": space["bob"]},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert "belongs to http://127.0.0.1:1" in done.stderr
    assert space["bob"] not in done.stderr
    done = subprocess.run(command(space["url"], tmp_path / "d.db", "--files",
                                  str(tmp_path / "none")),
                          env={**env, "WAYPOST_TOKEN": space["bob"]}, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"waypost mcp: --files: not a folder: {tmp_path / 'none'}\n"
