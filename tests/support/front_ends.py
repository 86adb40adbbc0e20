"""Front ends with one defect each, for the kit's tests: what a deployment's proxy, cache or
gateway does wrong in front of a correct server. Each wraps the reference's ASGI app and
rewrites one kind of answer; the reference itself never carries them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
#: (method, path, request JSON, status, answer JSON, the request's headers) → (status, answer)
Rewrite = Callable[[str, str, Any, int, Any, dict[str, str]], tuple[int, Any]]


#: An answer as a front end sees it: status, headers, body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]


def wrapping(app: App, before: Callable[[Scope, bytes], Answer | None] | None = None,
             after: Callable[[Scope, bytes, Answer], Answer] | None = None) -> App:
    """A front end: ``before`` may answer a request (its scope and body) in the app's place;
    ``after`` may change the app's answer."""
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        early = before(scope, body) if before else None
        if early is not None:
            await send_answer(send, early)
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:  # the client waits for its answer, then goes
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, capturing(send, lambda answer: after(scope, body, answer)
                                           if after else answer))
    return wrapped


def capturing(send: Send, change: Callable[[Answer], Answer]) -> Send:
    """A ``send`` that gathers the app's whole answer, then sends ``change(answer)`` to
    ``send`` with its content-length."""
    started: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def capture(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answer = (started["status"], list(started.get("headers", [])), b"".join(chunks))
                await send_answer(send, change(answer))
    return capture


async def send_answer(send: Send, answer: Answer) -> None:
    """``answer`` to the client, with its content-length."""
    status, headers, body = answer
    kept = [(k, v) for k, v in headers if k.lower() != b"content-length"]
    await send({"type": "http.response.start", "status": status,
                "headers": [*kept, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def rewriting(rewrite: Rewrite) -> Callable[[App], App]:
    """A front end that passes each JSON answer through ``rewrite``."""
    def after(scope: Scope, request: bytes, answer: Answer) -> Answer:
        status, headers, body = answer
        if not dict(headers).get(b"content-type", b"").startswith(b"application/json"):
            return answer
        sent = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        status, changed = rewrite(scope["method"], scope["path"], _json(request), status,
                                  _json(body), sent)
        return status, headers, json.dumps(changed).encode()
    return lambda app: wrapping(app, after=after)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def acks_claim_every_stage(method: str, path: str, request: Any, status: int, answer: Any,
                           headers: dict[str, str]) -> tuple[int, Any]:
    """An ACK's answer says every requested stage is the new one, changed (P09)."""
    if (method, path, status) == ("POST", "/v1/acks", 200) and isinstance(request, dict):
        wanted = {item.get("item_id"): item.get("stage") for item in request.get("items", [])
                  if isinstance(item, dict)}
        for item in answer.get("items", []):
            item["stage"], item["changed"] = wanted.get(item["item_id"], item["stage"]), True
    return status, answer


def checkpoint_never_reported(method: str, path: str, request: Any, status: int, answer: Any,
                              headers: dict[str, str]) -> tuple[int, Any]:
    """An ACK's answer never says the checkpoint it saved (P10)."""
    if (method, path, status) == ("POST", "/v1/acks", 200):
        answer["checkpoint_sequence"] = None
    return status, answer


def lookups_show_another_fingerprint(method: str, path: str, request: Any, status: int,
                                     answer: Any, headers: dict[str, str]) -> tuple[int, Any]:
    """The submission lookup shows a fingerprint computed some other way (P04)."""
    if method == "GET" and path.startswith("/v1/submissions/") and status == 200:
        answer["fingerprint"] = answer["fingerprint"][::-1]
    return status, answer


def messages_cut_by_a_preview_cache(method: str, path: str, request: Any, status: int,
                                    answer: Any, headers: dict[str, str]) -> tuple[int, Any]:
    """A message read is served from a preview cache that keeps 6 characters of the text
    (P05)."""
    if method == "GET" and path.startswith("/v1/messages/") and status == 200:
        answer["body"]["text"] = answer["body"]["text"][:6]
    return status, answer


def feed_pages_cached_by_token() -> Rewrite:
    """A cache that keeps each token's last good feed page and serves it when the server
    refuses the token (a revoke the cache never heard of) (P02)."""
    pages: dict[str, Any] = {}

    def rewrite(method: str, path: str, request: Any, status: int, answer: Any,
                headers: dict[str, str]) -> tuple[int, Any]:
        if (method, path) != ("GET", "/v1/feed"):
            return status, answer
        token = headers.get("authorization", "")
        if status == 200:
            pages[token] = answer
        elif status == 401 and token in pages:
            return 200, pages[token]
        return status, answer
    return rewrite


# ----- front ends that call the server more than once per request -------------------------


async def _request_body(receive: Receive) -> bytes:
    """The whole body of the request ``receive`` delivers."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _exchange(app: App, scope: Scope, body: bytes) -> tuple[Message, bytes]:
    """One call of ``app`` with ``body`` as the request's: its response start and body."""
    headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
    inner = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
    start: Message = {}
    chunks: list[bytes] = []
    delivered, answered = False, asyncio.Event()

    async def receive() -> Message:
        nonlocal delivered
        if delivered:  # as a connection that stays until its answer is in
            await answered.wait()
            return {"type": "http.disconnect"}
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    await app(inner, receive, send)
    return start, b"".join(chunks)


def _revision_conflict(status: int, answer: Any) -> int | None:
    """The head a ``409 REVISION_CONFLICT`` names, else None."""
    error = answer.get("error") if isinstance(answer, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    current = details.get("current_revision") if isinstance(details, dict) else None
    if status != 409 or not isinstance(error, dict) or error.get("code") != "REVISION_CONFLICT":
        return None
    return current if isinstance(current, int) and not isinstance(current, bool) else None


def cas_retried(app: App) -> App:
    """A gateway that "helps" a publish which lost its compare-and-swap: on ``409
    REVISION_CONFLICT`` it publishes the same change again at the head the conflict names,
    under a request id of its own, and answers that retry's success, so the client never
    hears of the conflict (P11)."""

    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" \
                or not scope["path"].endswith("/revisions"):
            await app(scope, receive, send)
            return
        request = await _request_body(receive)
        start, body = await _exchange(app, scope, request)
        head = _revision_conflict(int(start.get("status", 0)), _json(body))
        published = _json(request)
        if head is not None and isinstance(published, dict) \
                and isinstance(published.get("request_id"), str):
            again = {**published, "expected_revision": head,
                     "request_id": f"{published['request_id']}.cas"}
            start, body = await _exchange(app, scope, json.dumps(again).encode())
        kept = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        await send({"type": "http.response.start", "status": int(start.get("status", 500)),
                    "headers": [*kept, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
    return front


def acks_replayed_at_the_current_stage(app: App) -> App:
    """A retried ACK answers each receipt's current stage and version (those of the latest
    ACK answered for the item through the same token), not those of its own moment (P10's
    counterexample)."""
    latest: dict[tuple[bytes, str], dict[str, Any]] = {}

    def after(scope: Scope, request: bytes, answer: Answer) -> Answer:
        status, headers, body = answer
        parsed = _json(body)
        if (scope["method"], scope["path"], status) != ("POST", "/v1/acks", 200) \
                or not isinstance(parsed, dict):
            return answer
        token = dict(scope.get("headers", [])).get(b"authorization", b"")
        items = [item for item in parsed.get("items", []) if isinstance(item, dict)]
        if dict(headers).get(b"waypost-replayed") == b"true":
            for item in items:
                item.update(latest.get((token, item.get("item_id")), {}))
            return status, headers, json.dumps(parsed).encode()
        for item in items:
            latest[(token, item.get("item_id"))] = {
                "stage": item.get("stage"), "receipt_version": item.get("receipt_version")}
        return answer
    return wrapping(app, after=after)

def acks_at_version_one(method: str, path: str, request: Any, status: int, answer: Any,
                        headers: dict[str, str]) -> tuple[int, Any]:
    """An ACK's answer gives every receipt version 1, whatever the version (P09)."""
    if (method, path, status) == ("POST", "/v1/acks", 200) and isinstance(answer, dict):
        for item in answer.get("items", []):
            item["receipt_version"] = 1
    return status, answer
