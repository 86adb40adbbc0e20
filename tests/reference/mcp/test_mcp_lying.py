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

import pytest
from mcp.client import Client

from tests.support.lying_server import (
    Lying,
    local_contents,
    lying_server,
    outside_the_api,
    scene_copy,
    scene_template,
)
from tests.support.mcp_harness import ok, over_stdio, refused, run

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
            error = json.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
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
