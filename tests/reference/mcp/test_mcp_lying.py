"""``waypost mcp`` against a lying deployment (tests/support/lying_server.py), through the MCP SDK's
own client over stdio: every lie ends the call within its timeout as a tool error in the
envelope (never ``INTERNAL``, never a traceback in the log), a bad answer leaves the local file
as it was, no request leaves the API base, and the process stays small."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client import Client

from tests.support.lying_server import (
    Lying,
    local_contents,
    lying_server,
    outside_the_api,
    scene_copy,
    scene_template,
    sealed,
)
from tests.support.mcp_harness import ok, over_stdio, refused, run
from waypost.reference.agent_mcp import blobs
from waypost.reference.agent_mcp.errors import ToolFailure
from waypost.reference.consumer.client import MARGIN, Api
from waypost.reference.consumer.transport import BoundedTransport

ADMIN = "mcp-lying-admin"
TIMEOUT = 3
#: Seconds a tool call may take in all against a lie (retries included).
BOUND = 30
MAX_RSS_KIB = 200 << 10


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return scene_template(tmp_path_factory.mktemp("scene"), ADMIN)


@pytest.fixture
def lie(request: pytest.FixtureRequest, tmp_path: Path, template: tuple[Path, dict[str, str]]
        ) -> Iterator[tuple[str, Lying, dict[str, str]]]:
    """The mode's lying server on a copy of the demo space (``set_scene``, set once a module)."""
    tokens = scene_copy(template, tmp_path / "data")
    with lying_server(request.param, tmp_path / "data", ADMIN) as (url, lying):
        yield url, lying, tokens


def _peak_kib(db: Path) -> int:
    """The peak resident memory (VmHWM, KiB) of the running ``waypost mcp`` serving ``db``."""
    for process in Path("/proc").iterdir():
        try:
            command = (process / "cmdline").read_bytes().split(b"\0")
            if b"mcp" not in command or str(db).encode() not in command:
                continue
            status = (process / "status").read_text()
        except OSError:  # not a process, or one that ended meanwhile
            continue
        return int(status.split("VmHWM:")[1].split()[0])
    raise AssertionError("no waypost mcp process serving the file")


async def _timed_refusal(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    started = time.monotonic()
    error = await refused(client, tool, **arguments)
    assert time.monotonic() - started < BOUND
    assert error["code"] != "INTERNAL", error
    return error


#: Lies an inbox call must refuse as the server's fault: mode → words of its message.
INBOX_LIES = {
    "stuck_cursor": "not after", "new_cursors": "not after", "huge_page": "bytes",
    "wrong_types": "sequence", "duplicate_ids": "twice", "oversized_page": "more than the",
    "other_message": "another", "dotdot_id": "not an id", "nul_id": "not an id",
    "query_id": "not an id", "looping_entries": "not after",
}


def _as_bob(lie: tuple[str, Lying, dict[str, str]], tmp_path: Path,
            body: Callable[[Client, Path], Awaitable[None]]) -> None:
    """``body`` in a session with bob's ``waypost mcp`` (``--timeout``) on the lie; its log
    holds no traceback."""
    url, _, tokens = lie
    db = tmp_path / "bob.db"
    with (tmp_path / "err.log").open("w") as errlog:
        async def main() -> None:
            async with over_stdio(url, db, tokens["bob"], errlog,
                                  extra=("--timeout", str(TIMEOUT))) as client:
                await body(client, db)
        run(main)
    assert "Traceback" not in (tmp_path / "err.log").read_text()


#: The inbox lies of the fast tier; the others run in the slow one.
QUICK = ("stuck_cursor", "huge_page", "dotdot_id", "other_message")


@pytest.mark.slow
@pytest.mark.parametrize("lie", [
    mode if mode in QUICK else pytest.param(mode, marks=pytest.mark.slow)
    for mode in sorted(INBOX_LIES)], indirect=True)
def test_a_lying_feed_is_a_tool_error_and_stores_nothing(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    lying = lie[1]

    async def body(client: Client, db: Path) -> None:
        for _ in range(2):  # a lie may start on the second page read
            before = local_contents(db)
            result = await client.call_tool("inbox", {"state": "all"})
            if not result.is_error:
                continue
            error = json.loads(result.content[0].text)["error"]
            assert error["code"] == "UNAVAILABLE", error
            assert "the server broke the contract" in error["message"]
            assert INBOX_LIES[lying.mode] in error["message"], error
            assert local_contents(db) == before
            assert _peak_kib(db) < MAX_RSS_KIB
            return
        raise AssertionError(f"{lying.mode}: inbox never refused the lie")
    _as_bob(lie, tmp_path, body)
    assert not outside_the_api(lying.paths)
    assert not [p for p in lying.paths if "passwd" in p]


@pytest.mark.slow
@pytest.mark.parametrize("lie", ["trickle", "always_500", "always_503"], indirect=True)
def test_a_slow_or_failing_server_ends_the_call_in_time(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    async def body(client: Client, db: Path) -> None:
        error = await _timed_refusal(client, "inbox")
        assert error["code"] in ("UNAVAILABLE", "HTTP_ERROR"), error
    _as_bob(lie, tmp_path, body)


@pytest.mark.parametrize("lie", ["huge_blob"], indirect=True)
def test_a_blob_longer_than_declared_is_refused_early(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    blob = lie[2]["blob"]

    async def body(client: Client, db: Path) -> None:
        error = await _timed_refusal(client, "read_blob", blob_id=blob)
        assert error["code"] == "CONTENT_MISMATCH", error
        saved = await _timed_refusal(client, "read_blob", blob_id=blob, save_to="copy.md")
        assert saved["code"] == "CONTENT_MISMATCH", saved
        assert _peak_kib(db) < MAX_RSS_KIB
    _as_bob(lie, tmp_path, body)
    assert not list((tmp_path / "bob-files").glob("copy*"))
    assert lie[1].served


@pytest.mark.parametrize("lie", ["control_text"], indirect=True)
def test_text_with_control_characters_is_passed_on_as_json(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    async def body(client: Client, db: Path) -> None:
        page = await ok(client, "inbox", state="all")
        assert any("\x1b" in item["subject"] for item in page["items"])
        error = await _timed_refusal(client, "send", to=["alice"], subject="x", text="y")
        assert error["code"] == "HTTP_ERROR", error
    _as_bob(lie, tmp_path, body)


def _calls(item: str, blob: str) -> list[tuple[str, dict[str, Any]]]:
    """A call of every tool that needs the server but mark_done, on bob's ``item``."""
    return [("inbox", {"state": "all"}), ("send", {"to": ["alice"], "subject": "s", "text": "t"}),
            ("reply", {"item_id": item, "text": "t"}), ("memory_get", {"collection_id": "notes"}),
            ("memory_publish", {"collection_id": "notes", "expected_revision": 1, "entries": []}),
            ("attach", {"path": "note.txt"}), ("read_blob", {"blob_id": blob}),
            ("read_blob", {"blob_id": blob, "save_to": "copy.md"})]


@pytest.mark.slow
@pytest.mark.parametrize("lie", ["honest"], indirect=True)
def test_a_server_failing_everything_is_unavailable_to_every_tool(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    """Bob syncs, then the server answers 500 without the envelope to every data-plane call
    (``always_500``): each tool answers ``UNAVAILABLE`` saying what the server did, none
    ``INTERNAL``; mark_done is done here, its ACK queued; the log holds no traceback."""
    _, lying, tokens = lie
    (tmp_path / "bob-files").mkdir()
    (tmp_path / "bob-files" / "note.txt").write_text("a note")

    async def body(client: Client, db: Path) -> None:
        item = (await ok(client, "inbox", state="all"))["items"][0]["item_id"]
        lying.mode = "always_500"  # the same server, failing from now on
        for tool, arguments in _calls(item, tokens["blob"]):
            error = await _timed_refusal(client, tool, **arguments)
            assert error["code"] == "UNAVAILABLE", (tool, error)
            assert "Internal Server Error" in error["message"], (tool, error)
        done = await ok(client, "mark_done", item_ids=[item])
        assert (done["done"], done["acked"]) == ([item], False)
        assert "Internal Server Error" in done["reason"]
    _as_bob(lie, tmp_path, body)
    assert lying.served >= len(_calls("", ""))


@pytest.mark.slow
@pytest.mark.parametrize("lie", ["unknown_type"], indirect=True)
def test_an_item_of_an_unknown_type_is_skipped(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    """The first item of the feed has a type the entry does not know (``poll``): inbox lists
    the others, as the reference consumer does; the log holds no traceback."""
    async def body(client: Client, db: Path) -> None:
        page = await ok(client, "inbox", state="all")
        assert [item["subject"] for item in page["items"]] == ["Plan 1", "notes r1"], page
        again = await ok(client, "inbox", state="all")
        assert again == page
    _as_bob(lie, tmp_path, body)
    assert lie[1].served


class _Counted(httpx.SyncByteStream):
    def __init__(self, inner: Any, counter: Counting | None) -> None:
        self.inner, self.counter = inner, counter

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if self.counter is not None:
                self.counter.read += len(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class Counting(httpx.BaseTransport):
    """The consumer's own bounded transport, counting the bytes of blob content it takes off
    the wire."""

    def __init__(self) -> None:
        self.inner, self.read = BoundedTransport(), 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        content = request.url.path.endswith("/content")
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_Counted(response.stream, self if content else None),
                              extensions=response.extensions, request=request)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("lie", ["huge_blob"], indirect=True)
def test_read_blob_reads_no_more_than_the_declared_size_and_a_margin(
        lie: tuple[str, Lying, dict[str, str]], tmp_path: Path) -> None:
    """Blobs of 8 bytes and of 1 MiB + 1 whose content streams 400 MB: read_blob refuses each
    (``CONTENT_MISMATCH``, naming the declared size) having read at most one read of the
    network past it, counted where the bytes come in; nothing is left saved."""
    url, _, tokens = lie
    large = sealed(url, tokens["bob"], b"x" * ((1 << 20) + 1), "application/octet-stream")
    files = blobs.Files.under(tmp_path)
    for blob, size, save_to in ((tokens["blob"], 8, None), (tokens["blob"], 8, "small.bin"),
                                (large, (1 << 20) + 1, "large.bin")):
        wire = Counting()
        api = Api(url, tokens["bob"], timeout=TIMEOUT, transport=wire)
        try:
            started = time.monotonic()
            with pytest.raises(ToolFailure) as caught:
                blobs.read(api, files, blob, save_to)
            assert time.monotonic() - started < BOUND
        finally:
            api.close()
        assert caught.value.code == "CONTENT_MISMATCH"
        assert f"longer than its declared {size} bytes" in caught.value.message
        assert size < wire.read <= size + MARGIN
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
