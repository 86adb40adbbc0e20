"""The kit's contract checks (``properties/contract/``, run in the hostile phase): they pass
against the reference, with and without test hooks, and each fails against a reference broken
on purpose in the way it looks for, naming the requirement the defect breaks. The route table
they check is the one of docs/protocol.md and of the kit's OpenAPI document."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.support.front_ends import Answer, wrapping
from tests.support.inprocess import kit_client
from tests.support.kit import KitApp
from tests.support.threaded_server import serving_app
from waypost.conformance import hostile_phase as hostile
from waypost.properties.contract import checks as contract_checks
from waypost.properties.contract import routes as contract_routes
from waypost.properties.contract import stalled_upload as contract_load
from waypost.properties.coverage.registered import CHECKS as REGISTERED
from waypost.properties.hostile.probes import provision
from waypost.properties.protocol.openapi import document
from waypost.reference.domain import parsing, values
from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.server import Settings, build_app
from waypost.reference.service import auth
from waypost.reference.storage import authority, tokens
from waypost.reference.storage import feed as feed_sql
from waypost.reference.storage import memory as memory_sql

ROOT = Path(__file__).resolve().parents[3]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()
NAMES = tuple(check.name for check in contract_checks.CHECKS)
HOOKED = {"token_expiry", "hooks_need_admin"}
#: Checks over a raw connection, which a kit run through the in-process transport cannot make.
RAW = {"malformed_heads"}


def test_the_checks_are_tagged_and_run_in_the_hostile_phase() -> None:
    defined = set(re.findall(r"\*\*(WP-[A-Z]+-\d+)\*\*", PROTOCOL))
    assert len(set(NAMES)) == len(NAMES)
    assert set(NAMES) <= set(hostile.NAMES)
    assert not set(NAMES) & {c.name for c in hostile.CHECKS[:-len(NAMES)]}
    for check in contract_checks.CHECKS:
        assert check.description, check.name
        assert check.requirements, check.name
        assert set(check.requirements) <= defined, check.name
        assert REGISTERED[f"hostile {check.name}"].requirements == check.requirements
        assert len(check.name) <= 22  # the phase's table
    for rid in ("WP-AUTH-3", "WP-AUTH-12", "WP-AUTH-14", "WP-AUTH-15", "WP-CTRL-2",
                "WP-CTRL-4", "WP-CTRL-5", "WP-CTRL-7", "WP-CTRL-11", "WP-CTRL-12", "WP-CTRL-14",
                "WP-ERR-3", "WP-ERR-8", "WP-HOOK-2", "WP-HTTP-8", "WP-HTTP-18", "WP-IDEM-11",
                "WP-LOAD-1", "WP-LOAD-8", "WP-VAL-5", "WP-VAL-13", "WP-VAL-15", "WP-VIS-2"):
        assert any(rid in check.requirements for check in contract_checks.CHECKS), rid


def test_the_route_table_is_the_protocols_and_the_kits_documents() -> None:
    routes = section(PROTOCOL, "### 6.2 Routes", "- **WP-HTTP-8**")
    data = set(re.findall(r"^\| `(GET|POST|PUT) (/v1/[^`?]+)(?:\?[^`]*)?` \|", routes, re.M))
    assert data == set(contract_routes.DATA_ROUTES)
    plane = section(PROTOCOL, "## 13. The control plane", "## 14.")
    admin = set(re.findall(r"^\| `(GET|POST) (/admin/v1/[^`]+)` \|", plane, re.M))
    assert admin == set(contract_routes.ADMIN_ROUTES)
    documented = {(method.upper(), path) for path, item in document()["paths"].items()
                  for method in item if method in ("get", "post", "put", "delete", "patch")}
    assert documented == set(contract_routes.ROUTES) | {("GET", "/openapi.json")}
    assert not contract_routes.STATUS_ONLY - set(contract_routes.ROUTES)


def section(text: str, start: str, end: str) -> str:
    return text[text.index(start):text.index(end, text.index(start))]


def test_one_pass_calls_every_route(kit_app: KitApp, kit_admin: str, tmp_path: Path) -> None:
    with kit_app(tmp_path / "data") as client:
        table = contract_routes._Table(provision(kit_client(client), kit_admin, "rt"))
        contract_routes._pass(table)
    assert table.called == set(contract_routes.ROUTES)


@pytest.mark.parametrize("hooks", [True, False], ids=["hooks", "no-hooks"])
def test_the_reference_passes_every_contract_check(kit_app: KitApp, kit_admin: str,
                                                   tmp_path: Path, hooks: bool) -> None:
    with kit_app(tmp_path / "data", test_hooks=hooks) as client:
        rows = hostile.run_checks(kit_client(client), kit_admin, "ok", only=NAMES)
    assert [row.check.name for row in rows] == list(NAMES)
    for row in rows:
        if row.check.name in HOOKED and not hooks:
            assert (row.result, row.inputs) == ("not applicable", 0), row.message
            assert "without test hooks" in row.message
        elif row.check.name in RAW:
            assert (row.result, row.inputs) == ("not applicable", 0), row.message
        else:
            assert (row.result, row.message) == ("pass", ""), row.check.name
            assert row.inputs > 5, row.check.name


# ----- the reference, broken on purpose ---------------------------------------------------------


def _json(status: int, data: Any, *extra: tuple[bytes, bytes]) -> Answer:
    return status, [(b"content-type", b"application/json"), *extra], json.dumps(data).encode()


def _request_id(body: bytes) -> str | None:
    try:
        data = json.loads(body or b"null")
    except ValueError:
        return None
    return data.get("request_id") if isinstance(data, dict) else None


def _replayed(answer: Answer) -> bool:
    return (b"waypost-replayed", b"true") in answer[1]


def replayed_token_keeps_its_secret(scope: Scope, body: bytes,
                                    answer: Answer) -> Answer:
    """A replayed token issue shows a secret again."""
    if scope["path"].endswith("/tokens") and _replayed(answer):
        data = json.loads(answer[2])
        return _json(answer[0], {**data, "token": "tok_leaked.secret"},
                     (b"waypost-replayed", b"true"))
    return answer


def failures_recorded() -> tuple[Callable[..., Answer | None], Callable[..., Answer]]:
    """A refused control-plane write is recorded: its request_id answers the refusal again."""
    kept: dict[tuple[str, str | None], Answer] = {}

    def before(scope: Scope, body: bytes) -> Answer | None:
        return kept.get((scope["path"], _request_id(body))) \
            if scope["path"].startswith("/admin/") else None

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"].startswith("/admin/") and answer[0] >= 400:
            kept[(scope["path"], _request_id(body))] = answer
        return answer
    return before, after


def hooks_take_any_token(scope: Scope, body: bytes) -> None:
    """Test hooks run with any credential, or none."""
    if scope["path"].startswith("/_test/"):
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"authorization"] + [
            (b"authorization", b"Bearer kit-admin")]


def replays_before_authentication() -> tuple[Callable[..., Answer | None],
                                             Callable[..., Answer]]:
    """A send's request_id answers its stored result before the credential is checked."""
    stored: dict[str, Answer] = {}

    def before(scope: Scope, body: bytes) -> Answer | None:
        found = stored.get(_request_id(body) or "") if scope["path"] == "/v1/messages" else None
        return None if found is None else (found[0], [*found[1], (b"waypost-replayed",
                                                                  b"true")], found[2])

    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"] == "/v1/messages" and answer[0] == 201:
            stored[_request_id(body) or ""] = answer
        return answer
    return before, after


def conflicts_without_head(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """REVISION_CONFLICT without details.current_revision."""
    if answer[0] == 409 and b"REVISION_CONFLICT" in answer[2]:
        return _json(409, {"error": {"code": "REVISION_CONFLICT", "message": "stale",
                                     "details": {}}})
    return answer


def method_not_allowed(scope: Scope, body: bytes) -> Answer | None:
    """A method a path does not serve is a bare 405."""
    if scope["method"] == "DELETE":
        return 405, [(b"content-type", b"text/plain")], b"Method Not Allowed"
    return None


def no_submission_lookup(scope: Scope, body: bytes) -> Answer | None:
    """A route of the table is not served."""
    if scope["path"].startswith("/v1/submissions/"):
        return _json(404, {"error": {"code": "NOT_FOUND", "message": "no such path",
                                     "details": {}}})
    return None


def hidden_mcp(scope: Scope, body: bytes) -> Answer | None:
    """``/mcp`` serves MCP while describe says ``mcp: false``."""
    if scope["path"] == "/mcp":
        return _json(200, {"jsonrpc": "2.0", "id": 1, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "x"}}})
    return None


def names_in_characters(mp: pytest.MonkeyPatch) -> None:
    """Names, URIs and scopes are measured in characters, not bytes."""
    def text(value: Any, field: str, high: int) -> str:
        found = values.string(value, field)
        if not found or len(found) > high:
            raise InvalidRequest(f"{field} must be 1-{high} characters", field=field)
        return str(found)
    mp.setattr(values, "line", text)


def empty_member_lists(mp: pytest.MonkeyPatch) -> None:
    """Adding no thread members is accepted."""
    original = parsing.items

    def items(value: Any, field: str, parse: Any, *, low: int = 0, high: int | None = None,
              limit: str | None = None) -> Any:
        return original(value, field, parse, low=0 if field == "actor_ids" else low,
                        high=high, limit=limit)
    mp.setattr(parsing, "items", items)


def tokens_never_expire(mp: pytest.MonkeyPatch) -> None:
    """``expires_at`` is stored and shown, never enforced."""
    original = tokens.load_token

    async def load_token(driver: Any, token_id: str) -> Any:
        state = await original(driver, token_id)
        return None if state is None else tokens.TokenState(
            state.digest, state.revoked, None, state.actor_disabled, state.consumer_disabled,
            state.principal)
    mp.setattr(auth, "load_token", load_token)
    lenient = authority.NOT_LIVE.replace("(t.expires_at IS NULL OR t.expires_at > :now)", "1")
    for module in (authority, feed_sql):
        mp.setattr(module, "NOT_LIVE", lenient)
    # the publish's staging and commit check the token with their rules
    dead = authority.TOKEN_DEAD
    for rules in ("STAGE_RULES", "COMMIT_RULES"):
        mp.setattr(memory_sql, rules, tuple(dead._replace(condition=lenient) if rule == dead
                                            else rule for rule in getattr(memory_sql, rules)))


def times_in_seconds(mp: pytest.MonkeyPatch) -> None:
    """Times written without their milliseconds."""
    original = values.format_timestamp
    mp.setattr(values, "format_timestamp", lambda ms: original(ms)[:-5] + "Z")


def paths_in_characters(mp: pytest.MonkeyPatch) -> None:
    """A path's 1024 counted in characters."""
    original = values.relative_path

    def relative_path(value: Any, field: str) -> Any:
        if isinstance(value, str) and 0 < len(value) <= 1024 < len(value.encode()):
            return value
        return original(value, field)
    mp.setattr(values, "relative_path", relative_path)


def counted_ids(mp: pytest.MonkeyPatch) -> None:
    """Ids from a counter, with their prefix."""
    counter = itertools.count(1)
    mp.setattr(values, "new_id", lambda prefix: f"{prefix}_{next(counter):022d}")


VARIANTS: dict[str, tuple[str, str, Any]] = {
    "a replayed token issue shows a secret": (
        "control_replay", "WP-CTRL-12", (None, replayed_token_keeps_its_secret)),
    "control-plane failures are recorded": ("control_failures", "WP-CTRL-4", failures_recorded),
    "names measured in characters": ("control_values", "WP-CTRL-7", names_in_characters),
    "no thread members accepted": ("thread_members", "WP-CTRL-14", empty_member_lists),
    "tokens never expire": ("token_expiry", "WP-AUTH-3", tokens_never_expire),
    "tokens dead at issue still work": ("token_dead_at_issue", "WP-AUTH-3",
                                        tokens_never_expire),
    "hooks take any token": ("hooks_need_admin", "WP-HOOK-2", (hooks_take_any_token, None)),
    "replays before the credential": ("error_order", "WP-AUTH-12",
                                      replays_before_authentication),
    "times without milliseconds": ("server_times", "WP-VAL-13", times_in_seconds),
    "path lengths in characters": ("long_paths", "WP-VAL-15", paths_in_characters),
    "a conflict without the head": ("error_details", "WP-ERR-3",
                                    (None, conflicts_without_head)),
    "ids from a counter": ("generated_ids", "WP-VAL-5", counted_ids),
    "a bare 405 for another method": ("route_table", "WP-HTTP-5", (method_not_allowed, None)),
    "a route not served": ("route_table", "WP-HTTP-8", (no_submission_lookup, None)),
    "MCP served while describe says no": ("mcp_entry", "WP-HTTP-18", (hidden_mcp, None)),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_each_defect_fails_the_check_that_looks_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_admin: str, name: str) -> None:
    check, rid, defect = VARIANTS[name]
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0,
                        test_hooks=True)
    app: ASGIApp = build_app(settings)
    if isinstance(defect, tuple):
        app = wrapping(app, *defect)
    elif defect in (failures_recorded, replays_before_authentication):
        app = wrapping(app, *defect())
    else:
        defect(monkeypatch)
    with TestClient(app) as server:
        rows = hostile.run_checks(kit_client(server), kit_admin, "broken", only=(check,))
    assert [row.result for row in rows] == ["fail"], (name, rows[0].message)
    assert rows[0].message.startswith(f"{check}: ")
    assert rid in rows[0].message, rows[0].message


# ----- a stalled upload, over real HTTP ---------------------------------------------------------


def _one_at_a_time(app: ASGIApp) -> ASGIApp:
    """A server that serves one request at a time: a slow client stalls every other."""
    lock: asyncio.Lock | None = None

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        nonlocal lock
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        lock = lock or asyncio.Lock()
        async with lock:
            await app(scope, receive, send)
    return wrapped


@pytest.mark.slow
@pytest.mark.parametrize("serial", [False, True], ids=["reference", "one-at-a-time"])
def test_a_stalled_upload_stalls_no_other_request(tmp_path: Path, kit_admin: str,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  serial: bool) -> None:
    monkeypatch.setattr(contract_load, "STALL_SECONDS", 2.0)
    app: Any = build_app(Settings(tmp_path / "data", kit_admin, synchronous="NORMAL",
                                  sweep_seconds=0))
    with serving_app(_one_at_a_time(app) if serial else app) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        rows = hostile.run_checks(client, kit_admin, "slow", only=("slow_upload",))
    if serial:
        assert rows[0].result == "fail", rows[0].message
        assert "WP-LOAD-1" in rows[0].message
    else:
        assert (rows[0].result, rows[0].message) == ("pass", "")
