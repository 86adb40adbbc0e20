"""Dashboard sessions over HTTP: nothing without a session, digests only, expiry, revocation,
CSRF, rate-limited sign-ins, cookie flags and the Content-Security-Policy."""

from __future__ import annotations

import hashlib
import hmac
import os
import subprocess
import sys
from collections.abc import Iterator
from http.cookies import Morsel, SimpleCookie
from pathlib import Path

import apsw
import httpx
import pytest
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api
from tests.support.dashboard_client import Dash
from waypost.reference.domain.keys import derive
from waypost.reference.domain.sessions import SessionPolicy
from waypost.reference.server import DATABASE, Settings, build_app, cursor_key

IDLE_S, LIFETIME_S = 600, 1800

PAGES = ["/dashboard/", "/dashboard/dashboard.css", "/dashboard/spaces/s1",
         "/dashboard/spaces/s1/feed", "/dashboard/spaces/s1/messages/m1",
         "/dashboard/spaces/s1/consumers", "/dashboard/spaces/s1/uploads",
         "/dashboard/spaces/s1/collections/notes",
         "/dashboard/spaces/s1/collections/notes/revisions/1",
         "/dashboard/spaces/s1/collections/notes/diff",
         "/dashboard/spaces/s1/tokens/tok_x/replace"]
FORMS = ["/dashboard/spaces", "/dashboard/spaces/s1/actors",
         "/dashboard/spaces/s1/actors/bob/disable", "/dashboard/spaces/s1/consumers",
         "/dashboard/spaces/s1/consumers/bob-inbox/view", "/dashboard/spaces/s1/collections",
         "/dashboard/spaces/s1/tokens", "/dashboard/spaces/s1/tokens/tok_x/revoke",
         "/dashboard/spaces/s1/tokens/tok_x/replace"]


def _app(data_dir: Path, **extra: object) -> TestClient:
    settings = Settings(data_dir, ADMIN_TOKEN, dashboard=True, test_hooks=True, sweep_seconds=0,
                        sessions=SessionPolicy(IDLE_S * 1000, LIFETIME_S * 1000), **extra)
    return TestClient(build_app(settings), base_url="http://127.0.0.1")


@pytest.fixture
def dash(data_dir: Path) -> Iterator[Dash]:
    with _app(data_dir) as client:
        Api(client).space("s1")
        yield Dash(client)


def _advance(dash: Dash, seconds: int) -> None:
    moved = dash.client.post("/_test/clock", json={"advance_ms": seconds * 1000},
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert moved.status_code == 200, moved.text


def _refused(dash: Dash) -> bool:
    answer = dash.page("/dashboard/")
    return answer.status_code == 303 and answer.headers["location"] == "/dashboard/sign-in"


def test_no_page_no_asset_and_no_form_without_a_session(dash: Dash) -> None:
    for cookie in (None, "forged-session-id"):
        dash.client.cookies.clear()
        if cookie:
            dash.client.cookies.set("waypost_session", cookie)
        for path in PAGES:
            answer = dash.page(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"] == "/dashboard/sign-in"
            assert "text/css" not in answer.headers.get("content-type", "")
        for path in FORMS:
            answer = dash.client.post(path, data={"csrf": "x"}, follow_redirects=False)
            assert answer.status_code == 401, path
    assert dash.page("/dashboard/sign-in").status_code == 200


def test_the_sign_in_page_is_styled_by_its_own_public_stylesheet(dash: Dash) -> None:
    """Without a session only the sign-in page's layout is served; the dashboard's stylesheet
    stays behind the session."""
    page = dash.page("/dashboard/sign-in")
    assert '<link rel="stylesheet" href="/dashboard/sign-in.css">' in page.text
    css = dash.page("/dashboard/sign-in.css")
    assert (css.status_code, css.headers["content-type"].split(";")[0]) == (200, "text/css")
    assert "Content-Security-Policy" in css.headers
    assert "input[type=password]" in css.text
    assert dash.page("/dashboard/dashboard.css").status_code != 200


def test_the_dashboard_is_off_unless_asked_for(data_dir: Path) -> None:
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN))) as client:
        for path in ("/dashboard/", "/dashboard/sign-in", "/dashboard/dashboard.css"):
            answer = client.get(path)
            assert answer.status_code == 404
            assert answer.json()["error"]["code"] == "NOT_FOUND"


def test_the_database_holds_only_a_digest_of_the_session_id(dash: Dash, data_dir: Path) -> None:
    assert dash.sign_in(ADMIN_TOKEN).status_code == 303
    session_id = dash.session
    assert dash.page("/dashboard/").status_code == 200
    db = apsw.Connection(str(data_dir / DATABASE))
    digests = [bytes(row[0]) for row in db.execute("SELECT session_digest FROM admin_sessions")]
    # an HMAC under the sessions' key, derived from the secret in the data directory
    key = derive(cursor_key(data_dir)).sessions
    assert digests == [hmac.new(key, session_id.encode(), hashlib.sha256).digest()]
    assert digests != [hashlib.sha256(session_id.encode()).digest()]
    db.close()
    for file in data_dir.glob(f"{DATABASE}*"):  # the database and its write-ahead log
        assert session_id.encode() not in file.read_bytes(), file.name


def test_a_signed_out_sessions_cookie_is_refused(dash: Dash) -> None:
    dash.sign_in(ADMIN_TOKEN)
    session_id = dash.session
    out = dash.post("/dashboard/sign-out")
    assert out.status_code == 303
    assert "waypost_session=" in out.headers["set-cookie"]
    dash.client.cookies.set("waypost_session", session_id)  # a copy of the old cookie
    assert _refused(dash)


def test_idle_expiry(dash: Dash) -> None:
    dash.sign_in(ADMIN_TOKEN)
    _advance(dash, IDLE_S - 100)
    assert dash.page("/dashboard/").status_code == 200  # a use restarts the idle time
    _advance(dash, IDLE_S - 100)
    assert dash.page("/dashboard/").status_code == 200
    _advance(dash, IDLE_S + 1)
    assert _refused(dash)


def test_absolute_expiry_even_when_used(dash: Dash) -> None:
    dash.sign_in(ADMIN_TOKEN)
    for _ in range(LIFETIME_S // 500):
        _advance(dash, 500)
        assert dash.page("/dashboard/").status_code == 200
    _advance(dash, LIFETIME_S - (LIFETIME_S // 500) * 500)
    assert _refused(dash)


def test_a_form_without_its_csrf_token_is_refused_and_changes_nothing(dash: Dash) -> None:
    dash.sign_in(ADMIN_TOKEN)
    for token in ({}, {"csrf": "0" * 64}):
        answer = dash.client.post("/dashboard/spaces/s1/actors", follow_redirects=False, data={
            **token, "request_id": "csrf-1", "actor_id": "mallory", "kind": "agent",
            "display_name": "M"})
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    assert "mallory" not in dash.page("/dashboard/spaces/s1").text
    first = dash.csrf()
    dash.client.cookies.clear()
    dash.sign_in(ADMIN_TOKEN)  # another session: the first one's token is no token of this one
    answer = dash.client.post("/dashboard/spaces/s1/actors", follow_redirects=False, data={
        "csrf": first, "request_id": "csrf-2", "actor_id": "mallory", "kind": "agent",
        "display_name": "M"})
    assert answer.status_code == 403


def test_a_sign_in_form_without_its_csrf_pair_is_refused(dash: Dash) -> None:
    answer = dash.client.post("/dashboard/sign-in", follow_redirects=False,
                              data={"admin_token": ADMIN_TOKEN, "csrf": "x"})
    assert answer.status_code == 403
    assert "waypost_session" not in dash.client.cookies


def test_failed_sign_ins_are_rate_limited_per_address(dash: Dash) -> None:
    for _ in range(5):
        assert dash.sign_in("wrong-token").status_code == 401
    limited = dash.sign_in(ADMIN_TOKEN)  # even the right token waits now
    assert limited.status_code == 429
    assert int(limited.headers["retry-after"]) >= 1
    assert "waypost_session" not in dash.client.cookies
    _advance(dash, 61)
    assert dash.sign_in(ADMIN_TOKEN).status_code == 303


def _cookies(answer: httpx.Response) -> dict[str, Morsel[str]]:
    """Each Set-Cookie header of ``answer`` parsed on its own, by cookie name."""
    found: dict[str, Morsel[str]] = {}
    for header in answer.headers.get_list("set-cookie"):
        parsed: SimpleCookie = SimpleCookie()
        parsed.load(header)
        found.update(parsed)
    return found


def test_cookie_flags_and_security_headers(data_dir: Path) -> None:
    with _app(data_dir) as client:
        dash = Dash(client)
        session = _cookies(dash.sign_in(ADMIN_TOKEN))["waypost_session"]
        assert session.value == dash.session
        assert session["httponly"] is True
        assert session["samesite"].lower() == "strict"
        assert session["path"] == "/dashboard"
        assert int(session["max-age"]) == LIFETIME_S
        assert not session["secure"]  # plain HTTP: no Secure
        home = dash.page("/dashboard/")
        policy = home.headers["content-security-policy"]
        assert "default-src 'none'" in policy
        assert "script-src" not in policy
        assert "frame-ancestors 'none'" in policy
        assert home.headers["cache-control"] == "no-store"
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN, dashboard=True, sweep_seconds=0)),
                    base_url="https://127.0.0.1") as client:
        dash = Dash(client)
        form = dash.page("/dashboard/sign-in")
        pair = _cookies(form)["waypost_sign_in"]
        assert pair["httponly"] is True
        assert pair["samesite"].lower() == "strict"
        assert pair["secure"] is True
        session = _cookies(dash.sign_in(ADMIN_TOKEN))["waypost_session"]
        assert session["secure"] is True
        assert session["httponly"] is True
        assert session["samesite"].lower() == "strict"
        assert session["path"] == "/dashboard"


def test_a_non_ascii_csrf_value_is_refused_not_an_error(dash: Dash) -> None:
    form = dash.page("/dashboard/sign-in")
    assert form.status_code == 200
    answer = dash.client.post("/dashboard/sign-in", follow_redirects=False,
                              data={"admin_token": ADMIN_TOKEN, "csrf": "é" * 64})
    assert answer.status_code == 403
    assert "waypost_session" not in dash.client.cookies
    dash.sign_in(ADMIN_TOKEN)
    answer = dash.client.post("/dashboard/spaces/s1/actors", follow_redirects=False, data={
        "csrf": "ü", "request_id": "csrf-3", "actor_id": "mallory", "kind": "agent",
        "display_name": "M"})
    assert answer.status_code == 403
    assert "CSRF" in answer.text


def test_an_idle_expiry_under_a_minute_keeps_a_session_in_use_alive(data_dir: Path) -> None:
    settings = Settings(data_dir, ADMIN_TOKEN, dashboard=True, test_hooks=True, sweep_seconds=0,
                        sessions=SessionPolicy(10_000, LIFETIME_S * 1000))
    with TestClient(build_app(settings), base_url="http://127.0.0.1") as client:
        dash = Dash(client)
        assert dash.sign_in(ADMIN_TOKEN).status_code == 303
        for _ in range(4):  # 24 s of use, a view every 6 s, with a 10 s idle expiry
            _advance(dash, 6)
            assert dash.page("/dashboard/").status_code == 200
        _advance(dash, 11)
        assert _refused(dash)


@pytest.mark.parametrize(("token", "warned"), [("short-admin", True), ("a" * 32, False)])
def test_serve_with_the_dashboard_warns_about_a_short_admin_token(
        data_dir: Path, token: str, warned: bool) -> None:
    # --crash-mode exit without --test-hooks ends the command before it serves anything
    result = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "serve", "--dashboard", "--data-dir", str(data_dir),
         "--crash-mode", "exit"], capture_output=True, text=True, timeout=60,
        env={**os.environ, "WAYPOST_ADMIN_TOKEN": token})
    assert result.returncode == 2, result.stderr
    assert ("shorter than 32 characters" in result.stderr) is warned


def test_signing_out_after_expiry_clears_the_cookie_and_goes_to_sign_in(dash: Dash) -> None:
    dash.sign_in(ADMIN_TOKEN)
    csrf = dash.csrf()
    _advance(dash, IDLE_S + 1)
    out = dash.client.post("/dashboard/sign-out", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert out.headers["location"] == "/dashboard/sign-in"
    assert "waypost_session" not in dash.client.cookies
    dash.client.cookies.set("waypost_session", "forged-session-id")
    forged = dash.client.post("/dashboard/sign-out", data={"csrf": "x"}, follow_redirects=False)
    assert forged.status_code == 303
    cleared = _cookies(forged)["waypost_session"]
    assert (cleared.value, cleared["max-age"], cleared["path"]) == ("", "0", "/dashboard")
