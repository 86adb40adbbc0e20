"""A liberal deployment: the reference behind a front end that takes every freedom
docs/protocol.md grants (docs/porting.md, "Freedoms a server may take"). A fair kit passes it
as it passes the reference; ``tests/conformance/test_kit_liberal.py`` holds it to that.

The freedoms, each a separate rewrite so a failing run can name the one at fault:

- ``extra``: every answer object of §6.3 carries a member the contract does not name (never
  inside ``metadata``, ``limits``, ``filter`` or an error's ``details``, which are data);
- ``reorder``: every JSON object's members in reverse order;
- ``no_content``: the upload content PUT answers ``204`` with no body (any 2xx, WP-UPL-3);
- ``messages``: every error's human message worded anew (only ``code`` and ``details`` count);
- ``bearer_spaces``: one or more spaces after ``Bearer`` (RFC 6750 §2.1: ``1*SP``);
- ``bad_head``: a control character in a header value answers ``400 INVALID_REQUEST`` with
  ``details.field = "headers"`` and ``Connection: close``, as a stack that cannot parse the head;
- ``chunked``: every answer body in several chunks without ``Content-Length`` (uvicorn sends
  them with ``Transfer-Encoding: chunked``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.front_ends import (
    Answer,
    App,
    Message,
    Receive,
    Scope,
    Send,
    capturing,
    send_answer,
)

FREEDOMS = ("extra", "reorder", "no_content", "messages", "bearer_spaces", "bad_head",
            "chunked")
#: Members whose values are the client's data or a table of named values: left as they are.
DATA = frozenset({"metadata", "limits", "filter", "details", "options"})
EXTRA = "x_liberal_note"
CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
CONTENT_PUT = re.compile(r"^/v1/uploads/[^/]+/content$")
# Blob content is the stored bytes (a manifest is JSON too): never rewritten.


def _extra(value: Any) -> Any:
    if isinstance(value, dict):
        changed = {key: (item if key in DATA else _extra(item)) for key, item in value.items()}
        if "error" not in value:
            changed[EXTRA] = "a member the contract does not name"
        return changed
    if isinstance(value, list):
        return [_extra(item) for item in value]
    return value


def _reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _reordered(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(item) for item in value]
    return value


def _reworded(value: Any) -> Any:
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and "message" in error:
        error["message"] = f"refused ({error.get('code')}); see the code and details"
    return value


def _rewrite(scope: Scope, answer: Answer, freedoms: frozenset[str]) -> Answer:
    status, headers, body = answer
    if "no_content" in freedoms and scope["method"] == "PUT" and 200 <= status < 300 \
            and CONTENT_PUT.match(scope["path"]):
        return 204, [(k, v) for k, v in headers if k.lower() != b"content-type"], b""
    if not dict(headers).get(b"content-type", b"").startswith(b"application/json") \
            or scope["path"] == "/openapi.json" or scope["path"].endswith("/content"):
        return answer
    try:
        value = json.loads(body)
    except ValueError:
        return answer
    if "messages" in freedoms:
        value = _reworded(value)
    if "extra" in freedoms and status < 400:
        value = _extra(value)
    if "reorder" in freedoms:
        value = _reordered(value)
    return status, headers, json.dumps(value).encode()


def _bad_head(scope: Scope, body: bytes) -> Answer | None:
    """A head with a control character in a header value, answered as unparsable."""
    if not any(CONTROL.search(value) for _, value in scope.get("headers", [])):
        return None
    envelope = {"error": {"code": "INVALID_REQUEST", "message": "the head cannot be parsed",
                          "details": {"field": "headers"}}}
    return 400, [(b"content-type", b"application/json"), (b"connection", b"close")], \
        json.dumps(envelope).encode()


def _one_space(scope: Scope) -> Scope:
    headers = [(key, re.sub(rb"^([Bb][Ee][Aa][Rr][Ee][Rr]) +", rb"\1 ", value)
                if key.lower() == b"authorization" else value)
               for key, value in scope.get("headers", [])]
    return {**scope, "headers": headers}


def liberal(app: App, freedoms: frozenset[str] = frozenset(FREEDOMS)) -> App:
    """``app`` behind a front end taking ``freedoms`` (all by default). The request streams
    through as it comes (an answer before the body stays early); the answer is rewritten
    whole."""
    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if "bearer_spaces" in freedoms:
            scope = _one_space(scope)
        out = _chunking(send) if "chunked" in freedoms else send
        early = _bad_head(scope, b"") if "bad_head" in freedoms else None
        if early is not None:
            await send_answer(out, early)
            return
        await app(scope, receive, capturing(out, lambda answer: _rewrite(scope, answer,
                                                                          freedoms)))
    return front


def _chunking(send: Send) -> Send:
    """The answer's body in chunks of at most 512 bytes, without Content-Length."""
    async def chunked(message: Message) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [(k, v) for k, v in message.get("headers", [])
                                              if k.lower() != b"content-length"]}
            await send(message)
            return
        if message["type"] != "http.response.body" or message.get("more_body"):
            await send(message)
            return
        body = message.get("body", b"")
        pieces = [body[n:n + 512] for n in range(0, len(body), 512)] or [b""]
        for index, piece in enumerate(pieces):
            await send({"type": "http.response.body", "body": piece,
                        "more_body": index < len(pieces) - 1})
    return chunked
