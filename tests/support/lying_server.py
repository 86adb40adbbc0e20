"""A Waypost deployment that lies: the reference behind a front end that misbehaves in one way
per mode, served over real HTTP. The client half (the consumer, ``waypost mcp``, the kit) is
pointed at it and must end each mode within its timeouts with one clear line, store nothing of
a bad answer, request nothing outside the API base and print no raw control character.

Every mode keeps the control plane and whatever it does not lie about honest, so a client gets
as far as the lie. A test sets the scene through the same URL with the header
:data:`SETUP` (passed through untouched). ``Lying.paths`` records every path requested, as
sent on the wire.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.front_ends import Answer, App, Receive, Scope, Send, send_answer
from tests.support.threaded_server import serving_app

#: Control characters a lying server puts in text: ESC sequences, BEL, CR, NUL, C1, bidi.
CONTROLS = "\x1b[2J\x1b]0;owned\x07\r\x00\x85\u202e\u2066"
#: The header of a test's own requests, which pass through without a lie.
SETUP = "x-lying-setup"
#: The bytes every mode that pads sends per chunk.
CHUNK = b"a" * (1 << 20)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _answer(status: int, value: Any, headers: list[tuple[bytes, bytes]] | None = None) -> Answer:
    return (status, [(b"content-type", b"application/json"), *(headers or [])],
            json.dumps(value).encode())


@dataclass
class Lying:
    """The front end: ``mode`` names the lie (see :data:`MODES`)."""

    app: App
    mode: str
    paths: list[str] = field(default_factory=list)
    page: Any = None  # the first non-empty feed page the reference gave
    served: int = 0  # lies told so far

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if any(name == SETUP.encode() for name, _ in scope.get("headers", [])):
            await self.app(scope, receive, send)
            return
        raw = scope.get("raw_path") or scope["path"].encode()
        query = scope.get("query_string", b"")
        self.paths.append((raw + (b"?" + query if query else b"")).decode("latin-1"))
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        stream = STREAMS.get(self.mode)
        if stream is not None and stream.applies(scope):
            await _stream(send, stream.status, stream.chunks(self))
            return
        early = BEFORE.get(self.mode, _none)(self, scope, body)
        if early is not None:
            await send_answer(send, early)
            return
        answer = await _upstream(self.app, scope, body)
        rewrite = AFTER.get(self.mode)
        if rewrite is not None:
            answer = rewrite(self, scope, _json(body), answer)
        if self.mode == "trickle":
            await _trickle(send, answer)
            return
        await send_answer(send, answer)


def _none(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    return None


async def _upstream(app: App, scope: Scope, body: bytes) -> Answer:
    """The reference's whole answer to the request."""
    started: dict[str, Any] = {}
    chunks: list[bytes] = []
    delivered = asyncio.Event()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await delivered.wait()
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def capture(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                delivered.set()
    await app(scope, receive, capture)
    return started["status"], list(started.get("headers", [])), b"".join(chunks)


async def _stream(send: Send, status: int, chunks: AsyncIterator[bytes]) -> None:
    """An answer sent chunk by chunk (its length is whatever the chunks add up to)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    async for chunk in chunks:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})


async def _trickle(send: Send, answer: Answer, gap: float = 2.0) -> None:
    """The answer one byte every ``gap`` seconds."""
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status,
                "headers": [*[(k, v) for k, v in headers if k.lower() != b"content-length"],
                            (b"content-length", str(len(body)).encode())]})
    for byte in body:
        await send({"type": "http.response.body", "body": bytes([byte]), "more_body": True})
        await asyncio.sleep(gap)
    await send({"type": "http.response.body", "body": b""})


def _is(scope: Scope, method: str, prefix: str, suffix: str = "") -> bool:
    path = scope["path"]
    return scope["method"] == method and path.startswith(prefix) and path.endswith(suffix)


# ----- lies told in place of the reference's answer ---------------------------------------


def _repeat_page(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    """Once a page with items was read, every feed read gets it again, ``has_more`` true:
    with the same cursor (``stuck_cursor``) or a new one each time (``new_cursors``)."""
    if not _is(scope, "GET", "/v1/feed") or lying.page is None:
        return None
    lying.served += 1
    page = dict(lying.page, has_more=True)
    if lying.mode == "new_cursors":
        page["next_cursor"] = f"{lying.page['next_cursor']}.{lying.served}"
    return _answer(200, page)


def _always_failing(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    """Every data-plane call: 500 without the envelope, or 503 with a huge Retry-After."""
    if not scope["path"].startswith("/v1/") or scope["path"] == "/v1/describe":
        return None
    lying.served += 1
    if lying.mode == "always_503":
        return _answer(503, {"error": {"code": "UNAVAILABLE", "message": "later",
                                       "details": {}}}, [(b"retry-after", b"86400")])
    return 500, [(b"content-type", b"text/plain")], b"Internal Server Error"


def _compressed(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    """Feed pages gzip-compressed though the client accepted no encoding: 64 MiB of padding
    in 64 KiB on the wire."""
    if not _is(scope, "GET", "/v1/feed"):
        return None
    lying.served += 1
    page = b'{"items": [], "next_cursor": "c", "has_more": false, "pad": "' + b"a" * (64 << 20)
    return (200, [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")],
            gzip.compress(page + b'"}', compresslevel=9))


def _redirect(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    """Every data-plane call is sent to another origin (which would get the token)."""
    if not scope["path"].startswith("/v1/") or scope["path"] == "/v1/describe":
        return None
    return 307, [(b"location", b"http://127.0.0.2:9/steal" + scope["path"].encode())], b""


# ----- lies told by rewriting the reference's answer --------------------------------------


def _feed_items(scope: Scope, answer: Answer) -> list[dict[str, Any]] | None:
    if not _is(scope, "GET", "/v1/feed") or answer[0] != 200:
        return None
    page = _json(answer[2])
    return page["items"] if isinstance(page, dict) and page.get("items") else None


def _rewrite_feed(change: Callable[[Lying, dict[str, Any]], None]
                  ) -> Callable[[Lying, Scope, Any, Answer], Answer]:
    """A lie told on every feed page that has items: ``change`` edits the page in place."""
    def rewrite(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
        if _feed_items(scope, answer) is None:
            return answer
        page = _json(answer[2])
        lying.page = lying.page or json.loads(answer[2])
        change(lying, page)
        lying.served += 1
        return _answer(200, page)
    return rewrite


def _remember(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
    if _feed_items(scope, answer) is not None and lying.page is None:
        lying.page = _json(answer[2])
    return answer


def _wrong_types(lying: Lying, page: dict[str, Any]) -> None:
    page["items"][0]["sequence"] = int(page["items"][0]["sequence"])  # a number, not a string


def _unknown_type(lying: Lying, page: dict[str, Any]) -> None:
    first = page["items"][0]
    first["type"] = "poll"
    first["poll"] = first.pop("message", None) or first.pop("memory_revision", None) or {}
    first.pop("receipt", None)


def _duplicate_ids(lying: Lying, page: dict[str, Any]) -> None:
    page["items"] = [page["items"][0], *page["items"]]


def _oversized_page(lying: Lying, page: dict[str, Any]) -> None:
    first = page["items"][0]
    base = int(first["sequence"])
    page["items"] = [dict(first, item_id=f"fi_extra{n:04d}", sequence=str(base + n))
                     for n in range(120)]


def _hostile_ids(wanted: str) -> Callable[[Lying, dict[str, Any]], None]:
    def change(lying: Lying, page: dict[str, Any]) -> None:
        for item in page["items"]:
            if item["type"] == "message":
                item["message"]["message_id"] = wanted
            item["item_id"] = wanted if lying.mode == "item_id_path" else item["item_id"]
    return change


def _control_page(lying: Lying, page: dict[str, Any]) -> None:
    for item in page["items"]:
        if item["type"] == "message":
            item["message"]["subject"] = f"hi{CONTROLS}there"


def _control_text(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
    """Control characters in feed subjects, in message subjects and bodies, and in the
    error code and message of every refusal."""
    if _feed_items(scope, answer) is not None:
        return _rewrite_feed(_control_page)(lying, scope, request, answer)
    value = _json(answer[2])
    if _is(scope, "GET", "/v1/messages/") and answer[0] == 200 and isinstance(value, dict):
        value["subject"] = f"hi{CONTROLS}there"
        value["body"]["text"] = f"text{CONTROLS}" * 3
        return _answer(200, value)
    if _is(scope, "POST", "/v1/messages"):
        return _answer(400, {"error": {"code": f"BAD{CONTROLS}", "message": f"no{CONTROLS}\n"
                                       "second line\nthird", "details": {"field": CONTROLS}}})
    return answer


def _other_message(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
    """A message read answers another message: same shape, another id."""
    value = _json(answer[2])
    if _is(scope, "GET", "/v1/messages/") and answer[0] == 200 and isinstance(value, dict):
        value["message_id"] = "msg_someoneelse0000000000000"
        value["subject"] = "not what you asked for"
        lying.served += 1
        return _answer(200, value)
    return _remember(lying, scope, request, answer)


def _bad_send_answer(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
    """A send is taken, and answered without its message id."""
    value = _json(answer[2])
    if _is(scope, "POST", "/v1/messages") and answer[0] == 201 and isinstance(value, dict):
        value.pop("message_id", None)
        lying.served += 1
        return _answer(201, value)
    return answer


def _looping_entries(lying: Lying, scope: Scope, request: Any, answer: Answer) -> Answer:
    """A revision's item pages never end: every page says ``has_more`` with a cursor that
    brings the same entries back."""
    if not _is(scope, "GET", "/v1/collections/", "/items") or answer[0] != 200:
        return answer
    value = _json(answer[2])
    value["has_more"] = True
    value["next_cursor"] = f"loop{lying.served % 2}"
    lying.served += 1
    lying.page = value
    return _answer(200, value)


def _loop_back(lying: Lying, scope: Scope, body: bytes) -> Answer | None:
    """An item page asked for with a looping cursor: the first page again."""
    if _is(scope, "GET", "/v1/collections/", "/items") and b"cursor=loop" in scope.get(
            "query_string", b""):
        lying.served += 1
        return _answer(200, lying.page)
    return None


# ----- lies that stream -------------------------------------------------------------------


@dataclass(frozen=True)
class Stream:
    """A lie sent as a stream: where it applies, its status and its chunks."""

    applies: Callable[[Scope], bool]
    status: int
    chunks: Callable[[Lying], AsyncIterator[bytes]]


async def _huge_page(lying: Lying) -> AsyncIterator[bytes]:
    """A 150 MB feed page: a valid page followed by a huge member."""
    lying.served += 1
    yield b'{"items": [], "next_cursor": "c", "has_more": false, "pad": "'
    for _ in range(150):
        yield CHUNK
    yield b'"}'


async def _huge_blob(lying: Lying) -> AsyncIterator[bytes]:
    """400 MB of content for a blob whose metadata says it is small."""
    lying.served += 1
    for _ in range(400):
        yield CHUNK


STREAMS: dict[str, Stream] = {
    "huge_page": Stream(lambda s: _is(s, "GET", "/v1/feed"), 200, _huge_page),
    "huge_blob": Stream(lambda s: _is(s, "GET", "/v1/blobs/", "/content"), 200, _huge_blob),
}
BEFORE: dict[str, Callable[[Lying, Scope, bytes], Answer | None]] = {
    "stuck_cursor": _repeat_page, "new_cursors": _repeat_page,
    "always_500": _always_failing, "always_503": _always_failing, "redirect": _redirect,
    "looping_entries": _loop_back, "compressed": _compressed,
}
AFTER: dict[str, Callable[[Lying, Scope, Any, Answer], Answer]] = {
    "stuck_cursor": _remember, "new_cursors": _remember,
    "wrong_types": _rewrite_feed(_wrong_types), "unknown_type": _rewrite_feed(_unknown_type),
    "duplicate_ids": _rewrite_feed(_duplicate_ids),
    "oversized_page": _rewrite_feed(_oversized_page), "other_message": _other_message,
    "dotdot_id": _rewrite_feed(_hostile_ids("../../../etc/passwd")),
    "nul_id": _rewrite_feed(_hostile_ids("msg_a\x00b")),
    "query_id": _rewrite_feed(_hostile_ids("a/b?x=1#y")),
    "item_id_path": _rewrite_feed(_hostile_ids("../../../etc/passwd")),
    "control_text": _control_text, "looping_entries": _looping_entries,
    "bad_send_answer": _bad_send_answer,
}
#: Every mode, with the row of the issue it stands for; ``honest`` is the control run.
MODES = list(dict.fromkeys(["honest", *BEFORE, *AFTER, *STREAMS, "trickle"]))


def outside_the_api(paths: list[str]) -> list[str]:
    """The paths requested outside the API's bases (``/v1/``, ``/admin/v1/``, ``/_test/``)."""
    return [p for p in paths if not p.startswith(("/v1/", "/admin/v1/", "/_test/"))]


def local_contents(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a consumer's local file, read-only."""
    import apsw

    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
        return {t: sorted(connection.execute(f'SELECT * FROM "{t}"'), key=repr) for t in tables}
    finally:
        connection.close()


def setup_call(url: str, token: str, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """A request of the test's own, passed through without a lie."""
    headers = {SETUP: "1", "Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        return client.request(method, path, **kwargs)


def set_scene(url: str, admin_token: str) -> dict[str, str]:
    """The demo space, set through the door without lies: alice sent bob two messages and
    published a revision of ``notes``; bob sealed a blob of 8 bytes (``blob``). The tokens."""
    from waypost.bootstrap import provision

    with httpx.Client(base_url=url, timeout=30,
                      headers={"Authorization": f"Bearer {admin_token}", SETUP: "1"}) as admin:
        tokens = {k: str(v) for k, v in provision(admin, "demo").items()}
    for n in range(2):
        sent = setup_call(url, tokens["alice"], "POST", "/v1/messages", json={
            "request_id": f"m{n}", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": f"Plan {n}", "body": {"text": f"text {n}"}})
        assert sent.status_code == 201, sent.text
    note = sealed(url, tokens["alice"], b"# a note")
    published = setup_call(url, tokens["alice"], "POST", "/v1/collections/notes/revisions",
                           json={"request_id": "publish", "expected_revision": 0,
                                 "mode": "delta",
                                 "items": [{"item_id": "n1", "path": "note.md", "blob_id": note}]})
    assert published.status_code == 201, published.text
    tokens["blob"] = sealed(url, tokens["bob"], b"8 bytes!")
    return tokens


def sealed(url: str, token: str, content: bytes, content_type: str = "text/markdown") -> str:
    """A blob of ``token``'s actor, sealed through the door without lies; its id."""
    digest = hashlib.sha256(content).hexdigest()
    slot = setup_call(url, token, "POST", "/v1/blobs", json={
        "request_id": f"b-{digest[:16]}", "size": len(content), "sha256": digest,
        "content_type": content_type}).json()
    assert setup_call(url, token, "PUT", f"/v1/uploads/{slot['upload_id']}/content",
                      content=content).status_code == 200
    committed = setup_call(url, token, "POST", f"/v1/uploads/{slot['upload_id']}/commit",
                           json={"request_id": f"s-{digest[:16]}"}).json()
    return str(committed["blob_id"])


def scene_template(folder: Path, admin_token: str) -> tuple[Path, dict[str, str]]:
    """The demo scene (:func:`set_scene`) set once in ``folder/data`` and the server stopped:
    a data folder each test copies (:func:`scene_copy`) instead of setting it again. The
    folder and the tokens."""
    with lying_server("honest", folder / "data", admin_token) as (url, _):
        tokens = set_scene(url, admin_token)
    return folder / "data", tokens


def scene_copy(template: tuple[Path, dict[str, str]], data_dir: Path) -> dict[str, str]:
    """A copy of the scene's data folder at ``data_dir``; its tokens."""
    shutil.copytree(template[0], data_dir)
    return dict(template[1])


@contextmanager
def lying_server(mode: str, data_dir: Path, admin_token: str) -> Iterator[tuple[str, Lying]]:
    """The reference on a fresh data folder behind the ``mode`` lie, over HTTP on loopback:
    its URL and the front end (which records what was requested)."""
    from waypost.reference.server import Settings, build_app

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode}")
    app = build_app(Settings(data_dir, admin_token, synchronous="NORMAL", sweep_seconds=0))
    lying = Lying(app, mode)
    with serving_app(lying) as url:
        yield url, lying

