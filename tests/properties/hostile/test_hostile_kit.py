"""The kit's hostile-input checks: they pass against the reference, and each finding of the
hostile-input review, put back into the reference alone, makes the check that covers it fail
with a message naming it (through the ASGI app; the defects are about logic)."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from tests.support.kit import KitApp
from waypost.conformance import hostile_phase as hostile
from waypost.reference.domain import values
from waypost.reference.http import endpoints
from waypost.reference.server import Settings, build_app

ASGI = Callable[[dict[str, Any], Any, Any], Any]
NOT_FOUND = b'{"error":{"code":"NOT_FOUND","message":"no such path","details":{}}}'


def _answer(status: int, body: bytes) -> ASGI:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})
    return app


def _wrap(app: ASGI, rewrite: Callable[[dict[str, Any]], ASGI | None]) -> ASGI:
    """An ASGI wrapper that answers for the app where ``rewrite`` returns an app."""
    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        other = rewrite(scope) if scope["type"] == "http" else None
        await (other or app)(scope, receive, send)
    return wrapped


def scheme_is_case_sensitive(scope: dict[str, Any]) -> ASGI | None:
    """Finding: ``Authorization: bearer <valid token>`` is 401."""
    headers = dict(scope["headers"])
    if headers.get(b"authorization", b"Bearer ")[:7] not in (b"Bearer ", b"Bearer"):
        scope["headers"] = [(k, b"Bearer x" if k == b"authorization" else v)
                            for k, v in scope["headers"]]
    return None


async def _hang_up(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A response started and never finished: the connection drops without an answer."""
    await send({"type": "http.response.start", "status": 200, "headers": []})


def dies_after(requests: int) -> Callable[[dict[str, Any]], ASGI | None]:
    """A server that answers its first ``requests`` requests, then drops every connection."""
    seen = itertools.count()
    return lambda scope: _hang_up if next(seen) >= requests else None


def hooks_detectable(scope: dict[str, Any]) -> ASGI | None:
    """Finding: ``/_test/*`` without hooks is 401 without a token, 404 with one."""
    if scope["path"].startswith("/_test/") and scope["path"] != "/_test/no-such-hook" and \
            b"authorization" not in dict(scope["headers"]):
        return _answer(401, b'{"error":{"code":"UNAUTHENTICATED","message":"no token",'
                            b'"details":{}}}')
    return None


def malformed_revision_not_found(scope: dict[str, Any]) -> ASGI | None:
    """Finding: a malformed revision number in a path is 404, not 400."""
    if re.search(r"/revisions/(?![0-9]+(/|$))", scope["path"]) or \
            re.search(r"/revisions/(0[0-9]+|[0-9]{17,})", scope["path"]):
        return _answer(404, NOT_FOUND)
    return None


Patch = Callable[[pytest.MonkeyPatch], None]
VARIANTS: dict[str, tuple[Patch | Callable[[dict[str, Any]], ASGI | None], str]] = {
    "content_type stored as given and sent back as the header": (
        lambda mp: mp.setattr(values, "is_content_type", lambda text: True), "content_type"),
    "path aliases accepted in one revision": (
        lambda mp: mp.setattr(values, "relative_path", lambda value, field: value),
        "path_aliases"),
    "the bearer scheme is case-sensitive": (scheme_is_case_sensitive, "auth_scheme"),
    "hook routes answer 401 without a token": (hooks_detectable, "hooks_invisible"),
    "a malformed revision in a path is 404": (malformed_revision_not_found, "numbers"),
    "controls kept in a subject and options": (
        lambda mp: mp.setattr(values, "one_line", lambda text, field: text), "message_text"),
    "controls kept in names, scopes and filenames": (
        lambda mp: mp.setattr(values, "one_line", lambda text, field: text), "names_text"),
    "controls kept in a body text": (
        lambda mp: mp.setattr(values, "body_text", lambda text, field: text), "message_text"),
    "JSON accepted under any content type": (
        lambda mp: mp.setattr(endpoints, "check_json_type", lambda content_type: None),
        "json_content_types"),
}


def _serve(tmp_path: Path, kit_admin: str) -> TestClient:
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0)
    return TestClient(build_app(settings))


def test_the_reference_passes_every_hostile_check(kit_app: KitApp, kit_admin: str,
                                                  tmp_path: Path) -> None:
    with kit_app(tmp_path / "data") as client:
        rows = hostile.run_checks(kit_client(client), kit_admin, "ok")
    hooked = {check.name for check in hostile.CHECKS
              if check.needs in ("test hooks", "a raw connection")}
    assert hooked  # served in-process without hooks: the checks that need them do not apply
    assert [(row.check.name, row.result) for row in rows] == [
        (name, "not applicable" if name in hooked else "pass") for name in hostile.NAMES]
    assert all(row.inputs > 5 for row in rows if row.result == "pass")
    for row in rows:  # the requirement ids are data, each one of docs/protocol.md
        assert row.check.requirements
        assert all(re.fullmatch(r"WP-[A-Z]+-\d+", rid) for rid in row.check.requirements)


def test_a_server_that_stops_answering_fails_each_check_left(tmp_path: Path,
                                                            kit_admin: str) -> None:
    """The server dies during the first check: that check and every later one (whose fresh
    space cannot be provisioned) is a failed row; the phase itself ends normally."""
    server = _serve(tmp_path, kit_admin)
    server.app = _wrap(server.app, dies_after(12))
    with server:
        rows = hostile.run_checks(kit_client(server), kit_admin, "dies")
    assert [row.check.name for row in rows] == list(hostile.NAMES)
    assert {row.result for row in rows} == {"fail"}
    assert all("no fresh space for the check" in row.message for row in rows[1:])
    assert hostile.summary(rows)[0] == "fail"


def test_hooks_are_not_checked_on_a_target_that_runs_them(kit_app: KitApp, kit_admin: str,
                                                          tmp_path: Path) -> None:
    with kit_app(tmp_path / "data", test_hooks=True) as client:
        rows = hostile.run_checks(kit_client(client), kit_admin, "hk",
                                  only=("hooks_invisible",))
    assert [row.result for row in rows] == ["not applicable"]
    assert "test hooks" in rows[0].message


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_finding_put_back_fails_the_check_that_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_admin: str, name: str) -> None:
    defect, check = VARIANTS[name]
    server = _serve(tmp_path, kit_admin)
    if defect in (scheme_is_case_sensitive, hooks_detectable, malformed_revision_not_found):
        server.app = _wrap(server.app, defect)
    else:
        defect(monkeypatch)
    with server:
        rows = hostile.run_checks(kit_client(server), kit_admin, "broken")
    failed = {row.check.name: row.message for row in rows if row.result == "fail"}
    assert check in failed, (name, [(row.check.name, row.result) for row in rows])
    assert failed[check].startswith(f"{check}: ")
    result, note = hostile.summary(rows)
    assert result == "fail"
    assert check in note


@pytest.mark.slow
def test_the_command_runs_alone_with_its_reports(tmp_path: Path) -> None:
    """``waypost conformance hostile --target sqlite`` starts the reference without test
    hooks, so every check applies, and writes JSON and JUnit."""
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "hostile", "--target", "sqlite",
         "--report-json", str(tmp_path / "h.json"), "--junit", str(tmp_path / "h.xml")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "h.json").read_text())
    assert report["result"] == "pass"
    assert [check["check"] for check in report["checks"]] == list(hostile.NAMES)
    assert {check["result"] for check in report["checks"]} == {"pass", "not applicable"}
    assert "WP-HOOK-1" in next(c for c in report["checks"]
                               if c["check"] == "hooks_invisible")["requirements"]
    junit = (tmp_path / "h.xml").read_text()
    assert junit.count("<testcase") == len(hostile.NAMES)
    assert "hostile json_bodies" in junit
    assert "hostile input: pass" in done.stdout
    assert "hostile content_type: pass" in done.stderr  # progress, one line per check


@pytest.mark.parametrize("protocol", ["waypost serve's", "plain uvicorn's"])
def test_the_raw_connection_checks_see_how_a_server_frames(tmp_path: Path, kit_admin: str,
                                                           protocol: str) -> None:
    """Over a real socket: the reference's protocol passes the wire checks; uvicorn's own h11
    protocol drains a body nobody uses and answers what is pipelined behind ambiguous framing,
    and each check says so."""
    import httpx

    from tests.support.threaded_server import serving_app
    from waypost.reference.http.connection_limits import ConnectionLimits, limited_protocol

    config = {"http": limited_protocol(ConnectionLimits())} if protocol == "waypost serve's" \
        else {"timeout_keep_alive": 1}
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0)
    with serving_app(build_app(settings), **config) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        rows = hostile.run_checks(client, kit_admin, "wire",
                                  only=("early_answers", "ambiguous_framing"))
    results = {row.check.name: (row.result, row.message) for row in rows}
    if protocol == "waypost serve's":
        assert results == {"early_answers": ("pass", ""), "ambiguous_framing": ("pass", "")}
    else:
        assert results["early_answers"][0] == "fail"
        assert "WP-LOAD-7" in results["early_answers"][1]
        assert results["ambiguous_framing"][0] == "fail"
        assert "WP-LOAD-8" in results["ambiguous_framing"][1]


def test_the_raw_connection_checks_do_not_apply_in_process(kit_app: KitApp, kit_admin: str,
                                                           tmp_path: Path) -> None:
    with kit_app(tmp_path / "data") as client:
        rows = hostile.run_checks(kit_client(client), kit_admin, "inproc",
                                  only=("early_answers", "ambiguous_framing"))
    assert [row.result for row in rows] == ["not applicable"] * 2
    assert "in-process" in rows[0].message
