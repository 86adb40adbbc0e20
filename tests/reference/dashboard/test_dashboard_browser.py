"""The dashboard in a real browser: Debian's chromium driven by Playwright (pytest-playwright's
``page``: a fresh context per test) against ``waypost serve --dashboard`` (uvicorn on loopback).
The data plane is reached with httpx. Run by the ``browser`` tox env, alone in its process."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from waypost.conformance.targets import ServerProcess

pytestmark = pytest.mark.browser

ADMIN = "browser-admin-token"
IDLE_SECONDS = 1800  # the server's default
SCRIPT = "<script>document.title='pwned'</script>"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    running = ServerProcess(tmp_path_factory.mktemp("dash") / "data", ADMIN, "--dashboard",
                            "--test-hooks", "--no-access-log", "--synchronous", "normal")
    try:
        yield running.url
    finally:
        running.stop()


class Http:
    """The control and data planes over httpx."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(base_url=url, timeout=30)

    def admin(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.client.post(path, json=body, headers={"Authorization": f"Bearer {ADMIN}"})
        assert answer.status_code in (200, 201), answer.text
        result: dict[str, Any] = answer.json()
        return result

    def as_(self, token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.client.request(method, path, headers={"Authorization": f"Bearer {token}"},
                                   **kwargs)

    def space(self, space_id: str, collections: list[dict[str, Any]] | None = None) -> str:
        """A space with actors alice (default) and bob, each with an inbox consumer; the token of
        alice (every scope, the given collection grants) is returned."""
        self.admin("/admin/v1/spaces", {
            "request_id": f"{space_id}-space", "space_id": space_id, "display_name": space_id,
            "source_uri": f"https://example.test/{space_id}",
            "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "Alice"}})
        self.admin(f"/admin/v1/spaces/{space_id}/actors", {
            "request_id": f"{space_id}-bob", "actor_id": "bob", "kind": "agent",
            "display_name": "Bob"})
        for actor in ("alice", "bob"):
            self.admin(f"/admin/v1/spaces/{space_id}/consumers", {
                "request_id": f"{space_id}-{actor}-inbox", "consumer_id": f"{actor}-inbox",
                "actor_id": actor, "view": "inbox"})
        if collections:
            for grant in collections:
                self.admin(f"/admin/v1/spaces/{space_id}/collections", {
                    "request_id": f"{space_id}-{grant['collection_id']}",
                    "collection_id": grant["collection_id"], "source_actor_id": "alice",
                    "scope": "notes"})
        issued = self.admin(f"/admin/v1/spaces/{space_id}/tokens", {
            "request_id": f"{space_id}-alice-token", "actor_id": "alice",
            "consumer_id": "alice-inbox", "scopes": [
                "message.send", "message.read", "space.observe", "receipt.write",
                "memory.write", "memory.read", "blob.write", "blob.reference"],
            "recipients": {"mode": "any"}, "collections": collections or [],
            "blob_references": []})
        return str(issued["token"])


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[Http]:
    client = Http(server)
    yield client
    client.client.close()


def sign_in(page: Page, server: str) -> None:
    page.goto(f"{server}/dashboard/")
    expect(page.locator("h1")).to_have_text("Sign in")
    page.fill("#admin-token", ADMIN)
    page.click("#sign-in")
    expect(page.locator("h1")).to_have_text("Spaces")


def test_sign_in_and_sign_out(page: Page, server: str) -> None:
    page.goto(f"{server}/dashboard/")
    page.fill("#admin-token", "not-the-token")
    page.click("#sign-in")
    expect(page.locator("#message")).to_have_text("That is not the admin token.")
    sign_in(page, server)
    cookie = next(c for c in page.context.cookies() if c["name"] == "waypost_session")
    assert (cookie["httpOnly"], cookie["sameSite"], cookie["path"]) == (True, "Strict", "/dashboard")
    page.click("#sign-out")
    expect(page.locator("h1")).to_have_text("Sign in")
    page.goto(f"{server}/dashboard/")
    expect(page.locator("h1")).to_have_text("Sign in")


def test_a_session_expires_when_idle(page: Page, server: str, http: Http) -> None:
    sign_in(page, server)
    page.goto(f"{server}/dashboard/dashboard.css")
    assert "font" in page.content()
    moved = http.client.post("/_test/clock", json={"advance_ms": (IDLE_SECONDS + 1) * 1000},
                             headers={"Authorization": f"Bearer {ADMIN}"})
    assert moved.status_code == 200
    page.goto(f"{server}/dashboard/")
    expect(page.locator("h1")).to_have_text("Sign in")


def test_a_form_without_its_csrf_token_is_refused(page: Page, server: str, http: Http) -> None:
    http.space("csrf")
    sign_in(page, server)
    page.goto(f"{server}/dashboard/spaces/csrf")
    page.eval_on_selector("#create-actor input[name=csrf]", "input => input.remove()")
    page.fill("#create-actor input[name=actor_id]", "mallory")
    page.fill("#create-actor input[name=display_name]", "Mallory")
    page.click("#create-actor button")
    expect(page.locator("#error")).to_contain_text("CSRF token is missing or wrong")
    page.goto(f"{server}/dashboard/spaces/csrf")
    expect(page.locator("#actors")).not_to_contain_text("mallory")


def test_create_an_actor_and_a_token_then_revoke_it(page: Page, server: str, http: Http) -> None:
    http.space("ids")
    sign_in(page, server)
    page.goto(f"{server}/dashboard/spaces/ids")
    page.fill("#create-actor input[name=actor_id]", "dora")
    page.select_option("#create-actor select[name=kind]", "human")
    page.fill("#create-actor input[name=display_name]", "Dora")
    page.click("#create-actor button")
    expect(page.locator("#actors")).to_contain_text("dora")
    page.fill("#create-consumer input[name=consumer_id]", "dora-inbox")
    page.fill("#create-consumer input[name=actor_id]", "dora")
    page.click("#create-consumer button")
    expect(page.locator("#consumers")).to_contain_text("dora-inbox")
    form = page.locator("#issue-token")
    form.locator("input[name=actor_id]").fill("dora")
    form.locator("input[name=consumer_id]").fill("dora-inbox")
    form.locator("input[value='message.read']").check()
    form.locator("button").click()
    token = page.locator("#secret").inner_text().strip()
    token_id = token.split(".")[0]
    assert http.as_(token, "GET", "/v1/feed").status_code == 200
    page.goto(f"{server}/dashboard/spaces/ids")
    page.locator(f"tr[data-token='{token_id}'] button.revoke").click()
    expect(page.locator("#confirm-title")).to_contain_text(f"Revoke token {token_id}?")
    assert http.as_(token, "GET", "/v1/feed").status_code == 200  # not yet
    page.click("#confirm")
    expect(page.locator(f"tr[data-token='{token_id}']")).to_contain_text("revoked")
    refused = http.as_(token, "GET", "/v1/feed")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "UNAUTHENTICATED"


def test_markup_in_a_message_is_shown_as_text(page: Page, server: str, http: Http) -> None:
    alice = http.space("xss")
    sent = http.as_(alice, "POST", "/v1/messages", json={
        "request_id": "xss-1", "recipient_ids": ["bob"], "thread": {"new": True},
        "kind": "info", "subject": f"hello {SCRIPT}", "body": {"text": f"body {SCRIPT}"}})
    assert sent.status_code == 201, sent.text
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    sign_in(page, server)
    page.goto(f"{server}/dashboard/spaces/xss/messages/{sent.json()['message_id']}")
    expect(page.locator("#subject")).to_have_text(f"hello {SCRIPT}")
    expect(page.locator("#body")).to_contain_text(f"body {SCRIPT}")
    assert page.locator("script").count() == 0
    assert page.title() != "pwned"
    assert dialogs == []


def _send_many(url: str, token: str, count: int) -> None:
    """``count`` messages, 16 at a time (threads: Playwright's sync API owns this thread's
    event loop)."""
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {token}"},
                      limits=httpx.Limits(max_connections=16)) as client:
        def one(n: int) -> int:
            return client.post("/v1/messages", json={
                "request_id": f"bulk-{n}", "recipient_ids": ["bob"], "thread": {"new": True},
                "kind": "info", "subject": f"bulk {n}", "body": {"text": str(n)}}).status_code

        with ThreadPoolExecutor(16) as pool:
            assert set(pool.map(one, range(count))) == {201}


def test_paging_a_feed_of_a_thousand_items(page: Page, server: str, http: Http) -> None:
    alice = http.space("bulk")
    _send_many(server, alice, 1000)
    sign_in(page, server)
    page.goto(f"{server}/dashboard/spaces/bulk/feed")
    seen: list[int] = []
    for _ in range(20):
        rows = page.locator("#feed tr td:first-child").all_inner_texts()
        assert len(rows) == 100
        seen += [int(sequence) for sequence in rows]
        if page.locator("#next-page").count() == 0:
            break
        page.click("#next-page")
    expect(page.locator("nav.pager")).to_contain_text("last page")
    assert len(seen) == 1000
    assert seen == sorted(set(seen), reverse=True)


def _blob(http: Http, token: str, content: bytes) -> str:
    prepared = http.as_(token, "POST", "/v1/blobs", json={
        "request_id": f"prep-{hashlib.sha256(content).hexdigest()[:12]}", "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"})
    assert prepared.status_code == 201, prepared.text
    upload = prepared.json()["upload_id"]
    assert http.as_(token, "PUT", f"/v1/uploads/{upload}/content",
                    content=content).status_code == 200
    sealed = http.as_(token, "POST", f"/v1/uploads/{upload}/commit",
                      json={"request_id": f"seal-{upload}"})
    assert sealed.status_code == 200, sealed.text
    return str(sealed.json()["blob_id"])


def test_the_difference_between_two_revisions(page: Page, server: str, http: Http) -> None:
    alice = http.space("mem", [{"collection_id": "notes", "actions": ["read", "write"]}])
    one, two = _blob(http, alice, b"first"), _blob(http, alice, b"second")
    revisions = [{"items": [{"item_id": i, "path": f"{i}.md", "blob_id": one}
                            for i in ("keep", "edit", "drop")]},
                 {"items": [{"item_id": "edit", "path": "edit.md", "blob_id": two},
                            {"item_id": "new", "path": "new.md", "blob_id": one}],
                  "delete_ids": ["drop"]}]
    for expected, change in enumerate(revisions):
        published = http.as_(alice, "POST", "/v1/collections/notes/revisions", json={
            "request_id": f"pub-{expected}", "expected_revision": expected, "mode": "delta",
            **change})
        assert published.status_code == 201, published.text
    sign_in(page, server)
    page.goto(f"{server}/dashboard/spaces/mem/collections/notes")
    page.fill("#diff-form input[name=from]", "1")
    page.fill("#diff-form input[name=to]", "2")
    page.click("#diff-form button")
    rows = page.locator("#diff tr").all_inner_texts()[1:]
    assert [row.split("\t")[:2] for row in rows] == [
        ["drop", "removed"], ["edit", "changed"], ["new", "added"]]
    assert two in rows[1]



@pytest.fixture(scope="module")
def every_page(http: Http) -> list[str]:
    """A space with something on every page (long ids, a message with an attachment, an ACK,
    two revisions, uploads) and the path of each page the dashboard has."""
    alice = http.space("wide", [{"collection_id": "notes", "actions": ["read", "write"]}])
    blob = _blob(http, alice, b"wide content")
    sent = http.as_(alice, "POST", "/v1/messages", json={
        "request_id": "wide-send", "recipient_ids": ["bob"], "thread": {"new": True},
        "kind": "question", "subject": "a subject long enough to need a second line " * 3,
        "body": {"text": "a body " * 200, "options": ["yes", "no"]}, "attachment_ids": [blob]})
    assert sent.status_code == 201, sent.text
    bob = str(http.admin("/admin/v1/spaces/wide/tokens", {
        "request_id": "wide-bob-token", "actor_id": "bob", "consumer_id": "bob-inbox",
        "scopes": ["message.read", "receipt.write"], "recipients": {"mode": "any"},
        "collections": [], "blob_references": []})["token"])
    acked = http.as_(bob, "POST", "/v1/acks", json={
        "request_id": "wide-ack", "items": [{"item_id": sent.json()["feed_item_id"],
                                             "stage": "received"}]})
    assert acked.status_code == 200, acked.text
    for revision in (0, 1):
        published = http.as_(alice, "POST", "/v1/collections/notes/revisions", json={
            "request_id": f"wide-pub-{revision}", "expected_revision": revision,
            "mode": "delta", "items": [{"item_id": f"i{revision}", "path": "a/" * 100 + f"{revision}.md",
                                        "blob_id": blob, "metadata": {"k": "v" * 300}}]})
        assert published.status_code == 201, published.text
    token_id = alice.split(".")[0]
    space = "/dashboard/spaces/wide"
    return ["/dashboard/", space, f"{space}/feed", f"{space}/messages/{sent.json()['message_id']}",
            f"{space}/consumers", f"{space}/collections/notes",
            f"{space}/collections/notes/revisions/2",
            f"{space}/collections/notes/diff?from=0&to=2", f"{space}/uploads",
            f"{space}/tokens/{token_id}/replace", f"{space}/collections/nothing"]


@pytest.mark.parametrize("width", [400, 1280])
def test_every_page_fits_a_phone_and_a_desk(page: Page, server: str, every_page: list[str],
                                            width: int,
                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    """No page scrolls sideways: wide tables scroll in their own box, the header wraps, and
    its links stay on the dark bar (a screenshot of each page is kept to look at)."""
    shots = tmp_path_factory.mktemp(f"width-{width}")
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, server)
    for path in every_page:
        page.goto(f"{server}{path}")
        page.screenshot(path=str(shots / f"{len(list(shots.iterdir())):02d}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (width, path, overflow)
        header = page.locator("header").bounding_box()
        assert header is not None
        for link in page.locator("header a").all():
            box = link.bounding_box()
            assert box is not None
            assert box["x"] + box["width"] <= width, (path, link.inner_text())
            assert box["y"] + box["height"] <= header["y"] + header["height"], (
                path, link.inner_text())
        _every_column_shown(page, path, width)


def _every_column_shown(page: Page, path: str, width: int) -> None:
    """No table hides a column in a sideways scroll, no button or cell is cut at the window's
    edge, and chart text is drawn at 11 px or more."""
    hidden = page.evaluate("""[...document.querySelectorAll('.scroll')]
        .filter(box => box.scrollWidth > box.clientWidth + 1).map(box => box.innerHTML.slice(0, 80))""")
    assert hidden == [], (width, path, hidden)
    cut = page.evaluate(f"""[...document.querySelectorAll('main td, main button')]
        .filter(el => el.getClientRects().length && el.getBoundingClientRect().right > {width} + 0.5)
        .map(el => el.outerHTML.slice(0, 80))""")
    assert cut == [], (width, path, cut)
    smallest = page.evaluate("""Math.min(Infinity, ...[...document.querySelectorAll('svg text')]
        .map(t => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a))""")
    assert smallest >= 10.99, (width, path, smallest)

