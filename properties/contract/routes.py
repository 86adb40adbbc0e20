"""Contract checks of the route table (protocol.md §6.2 and §13) and of the MCP entry (§6.4).

The table is data here, held to docs/protocol.md and to the kit's OpenAPI document by
``tests/properties/contract/test_contract_checks.py``: the kit never reads the repository's docs."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import httpx

from waypost.properties.contract.common import (
    detail,
    error,
    json_of,
    obj,
    shown,
    text,
)
from waypost.properties.hostile.probes import ALL_SCOPES, Finding, HostileCheck, Probe
from waypost.properties.protocol.openapi import documented, problems, success

#: The routes of protocol.md §6.2, but ``/_test/…`` (WP-HTTP-8).
DATA_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/v1/describe"), ("POST", "/v1/messages"), ("GET", "/v1/messages/{message_id}"),
    ("GET", "/v1/feed"), ("POST", "/v1/acks"), ("POST", "/v1/blobs"),
    ("PUT", "/v1/uploads/{upload_id}/content"), ("POST", "/v1/uploads/{upload_id}/commit"),
    ("GET", "/v1/blobs/{blob_id}"), ("GET", "/v1/blobs/{blob_id}/content"),
    ("POST", "/v1/collections/{collection_id}/revisions"),
    ("GET", "/v1/collections/{collection_id}"),
    ("GET", "/v1/collections/{collection_id}/revisions/{revision}"),
    ("GET", "/v1/collections/{collection_id}/revisions/{revision}/items"),
    ("GET", "/v1/submissions/{operation}/{request_id}"))
#: The control plane's routes (protocol.md §13), ``/admin/v1/…`` of §6.2.
ADMIN_ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/admin/v1/spaces"), ("POST", "/admin/v1/spaces/{space_id}/actors"),
    ("POST", "/admin/v1/spaces/{space_id}/actors/{actor_id}/disable"),
    ("POST", "/admin/v1/spaces/{space_id}/consumers"),
    ("POST", "/admin/v1/spaces/{space_id}/consumers/{consumer_id}/view"),
    ("POST", "/admin/v1/spaces/{space_id}/collections"),
    ("POST", "/admin/v1/spaces/{space_id}/tokens"),
    ("POST", "/admin/v1/tokens/{token_id}/revoke"),
    ("POST", "/admin/v1/spaces/{space_id}/threads/{thread_id}/members"),
    ("GET", "/admin/v1/spaces"), ("GET", "/admin/v1/spaces/{space_id}"))
ROUTES = DATA_ROUTES + ADMIN_ROUTES
UPLOAD_CONTENT = ("PUT", "/v1/uploads/{upload_id}/content")
#: Routes whose success the protocol gives by status alone: an upload's PUT answers any 2xx,
#: with or without a body (WP-UPL-3); blob content is bytes. The kit's document gives them no
#: JSON shape; every other success answer is held to the shape of its schema.
STATUS_ONLY = frozenset({UPLOAD_CONTENT, ("GET", "/v1/blobs/{blob_id}/content")})
#: The requirement that gives each route's success answer its shape (§6.3, §13).
SHAPES: dict[tuple[str, str], str] = {
    ("GET", "/v1/describe"): "WP-HTTP-9", ("POST", "/v1/messages"): "WP-HTTP-10",
    ("GET", "/v1/messages/{message_id}"): "WP-HTTP-11", ("GET", "/v1/feed"): "WP-HTTP-13",
    ("POST", "/v1/acks"): "WP-HTTP-14", ("POST", "/v1/blobs"): "WP-HTTP-15",
    UPLOAD_CONTENT: "WP-UPL-3", ("POST", "/v1/uploads/{upload_id}/commit"): "WP-HTTP-15",
    ("GET", "/v1/blobs/{blob_id}"): "WP-HTTP-15", ("GET", "/v1/blobs/{blob_id}/content"):
    "WP-UPL-9", ("POST", "/v1/collections/{collection_id}/revisions"): "WP-HTTP-16",
    ("GET", "/v1/collections/{collection_id}"): "WP-HTTP-17",
    ("GET", "/v1/collections/{collection_id}/revisions/{revision}"): "WP-HTTP-17",
    ("GET", "/v1/collections/{collection_id}/revisions/{revision}/items"): "WP-HTTP-17",
    ("GET", "/v1/submissions/{operation}/{request_id}"): "WP-IDEM-13",
    ("POST", "/admin/v1/spaces"): "WP-CTRL-6",
    ("POST", "/admin/v1/spaces/{space_id}/actors"): "WP-CTRL-3",
    ("POST", "/admin/v1/spaces/{space_id}/actors/{actor_id}/disable"): "WP-CTRL-10",
    ("POST", "/admin/v1/spaces/{space_id}/consumers"): "WP-CTRL-3",
    ("POST", "/admin/v1/spaces/{space_id}/consumers/{consumer_id}/view"): "WP-CTRL-9",
    ("POST", "/admin/v1/spaces/{space_id}/collections"): "WP-CTRL-3",
    ("POST", "/admin/v1/spaces/{space_id}/tokens"): "WP-CTRL-11",
    ("POST", "/admin/v1/tokens/{token_id}/revoke"): "WP-CTRL-13",
    ("POST", "/admin/v1/spaces/{space_id}/threads/{thread_id}/members"): "WP-CTRL-14",
    ("GET", "/admin/v1/spaces"): "WP-CTRL-16", ("GET", "/admin/v1/spaces/{space_id}"):
    "WP-CTRL-16"}
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


class _Table:
    """One pass over the route table: each route called once with real ids, its answer held
    to the kit's OpenAPI document."""

    def __init__(self, probe: Probe) -> None:
        self.probe, self.ids = probe, {"space_id": probe.space, "collection_id": "notes",
                                       "operation": "message.send", "actor_id": "carol",
                                       "consumer_id": "carol-inbox"}
        self.called: set[tuple[str, str]] = set()

    def call(self, method: str, template: str, *, who: str | None = None,
             body: Any = None, content: bytes | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        path = template.format(**self.ids)
        answer = self.probe.request(method, path, who=who, body=body, content=content,
                                    headers=headers)
        what = f"{method} {path} ({method} {template}, WP-HTTP-8)"
        statuses = success(method, template)
        if answer.status_code not in statuses:
            given = [s for s in documented(method, template) if s.startswith("2")]
            raise Finding(f"{what}: {shown(answer)}; the kit's OpenAPI document gives "
                          f"{', '.join(given)}: the route is not served as §6 says")
        schema = statuses[answer.status_code]
        rule = SHAPES[(method, template)]
        if (method, template) == UPLOAD_CONTENT and answer.content:
            json_of(answer, f"{what}: a body, when there is one, is JSON ({rule}, WP-HTTP-1)")
        elif (method, template) not in STATUS_ONLY and schema is not None:
            found = problems(json_of(answer, what), schema)
            if found:
                raise Finding(f"{what}: the answer is not of the shape {rule} gives it "
                              f"(protocol.md §6.3, §13; conformance/openapi/waypost-1.json): "
                              f"{'; '.join(found[:5])}")
        self.called.add((method, template))
        return answer

    def json(self, method: str, template: str, **kwargs: Any) -> dict[str, Any]:
        return obj(self.call(method, template, **kwargs), f"{method} {template}",
                   tuple(range(200, 300)))


def _pass(table: _Table) -> dict[str, Any]:
    """Every route of the table, in an order that gives each the ids it needs."""
    probe, call, ids = table.probe, table.json, table.ids
    call("GET", "/v1/describe")
    other = f"{probe.space}-t"
    call("POST", "/admin/v1/spaces", who="admin", body={
        "request_id": probe.rid("rt"), "space_id": other,
        "display_name": f"waypost kit routes {other}",
        "source_uri": f"waypost-kit://{other}",
        "default_actor": {"actor_id": "ann", "kind": "agent", "display_name": "ann"}})
    base = "/admin/v1/spaces/{space_id}"
    table.call("POST", f"{base}/actors", who="admin", body={
        "request_id": probe.rid("rt"), "actor_id": "carol", "kind": "agent",
        "display_name": "carol"})
    table.call("POST", f"{base}/consumers", who="admin", body={
        "request_id": probe.rid("rt"), "consumer_id": "carol-inbox", "actor_id": "carol",
        "view": "inbox"})
    table.call("POST", f"{base}/consumers/{{consumer_id}}/view", who="admin",
               body={"request_id": probe.rid("rt"), "view": "space_log"})
    table.call("POST", f"{base}/collections", who="admin", body={
        "request_id": probe.rid("rt"), "collection_id": "plans", "source_actor_id": "carol",
        "scope": "routes"})
    issued = call("POST", f"{base}/tokens", who="admin", body={
        "request_id": probe.rid("rt"), "actor_id": "carol", "consumer_id": "carol-inbox",
        "scopes": ALL_SCOPES, "recipients": {"mode": "any"}, "collections": [],
        "blob_references": []})
    ids["token_id"] = text(issued, "token_id", "a token issue")
    request_id = probe.rid("rt")
    sent = call("POST", "/v1/messages", who="alice", body={
        "request_id": request_id, "recipient_ids": ["bob"], "thread": {"new": True},
        "kind": "info", "subject": "routes", "body": {"text": "t"}})
    ids.update(message_id=text(sent, "message_id", "a send"), request_id=request_id,
               thread_id=text(sent, "thread_id", "a send"))
    table.call("POST", f"{base}/threads/{{thread_id}}/members", who="admin",
               body={"request_id": probe.rid("rt"), "actor_ids": ["carol"]})
    call("GET", "/v1/messages/{message_id}", who="bob")
    call("GET", "/v1/feed", who="bob")
    call("POST", "/v1/acks", who="bob", body={"request_id": probe.rid("rt"), "items": [
        {"item_id": text(sent, "feed_item_id", "a send"), "stage": "received"}]})
    data = b"every route"
    prepared = call("POST", "/v1/blobs", who="alice", body={
        "request_id": probe.rid("rt"), "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain"})
    ids["upload_id"] = text(prepared, "upload_id", "blob.prepare")
    table.call("PUT", "/v1/uploads/{upload_id}/content", who="alice", content=data,
               headers={"Content-Type": "application/octet-stream"})
    sealed = call("POST", "/v1/uploads/{upload_id}/commit", who="alice",
                  body={"request_id": probe.rid("rt")})
    ids["blob_id"] = text(sealed, "blob_id", "blob.commit")
    call("GET", "/v1/blobs/{blob_id}", who="alice")
    content = table.call("GET", "/v1/blobs/{blob_id}/content", who="alice")
    if content.content != data:
        raise Finding(f"GET /v1/blobs/{{blob_id}}/content: {len(content.content)} bytes, not "
                      f"the {len(data)} uploaded (WP-HTTP-8)")
    published = call("POST", "/v1/collections/{collection_id}/revisions", who="alice", body={
        "request_id": probe.rid("rt"), "expected_revision": probe.head(), "mode": "delta",
        "items": [{"item_id": "r", "path": "r.md", "blob_id": ids["blob_id"]}]})
    ids["revision"] = str(published.get("revision"))
    call("GET", "/v1/collections/{collection_id}", who="alice")
    call("GET", "/v1/collections/{collection_id}/revisions/{revision}", who="alice")
    call("GET", "/v1/collections/{collection_id}/revisions/{revision}/items", who="alice")
    call("GET", "/v1/submissions/{operation}/{request_id}", who="alice")
    table.call("POST", "/admin/v1/tokens/{token_id}/revoke", who="admin",
               body={"request_id": probe.rid("rt")})
    table.call("POST", f"{base}/actors/{{actor_id}}/disable", who="admin",
               body={"request_id": probe.rid("rt")})
    spaces = table.call("GET", "/admin/v1/spaces", who="admin")
    space = table.call("GET", base, who="admin")
    _no_secret(issued.get("token"), {"GET /admin/v1/spaces": spaces, f"GET {base}": space},
               issued.get("token_id"))
    return obj(space, f"GET {base}", 200)


def _no_secret(token: Any, reads: dict[str, httpx.Response], token_id: Any = None) -> None:
    """No control-plane read shows the token's secret, whole or its part after the last ``.``
    (WP-CTRL-16) where that part is not the token's id (protocol.md fixes no token format)."""
    if not isinstance(token, str) or len(token) < 16:
        return
    tail = token.rsplit(".", 1)[-1]
    named = isinstance(token_id, str) and tail in token_id
    secrets = [token, *([tail] if len(tail) >= 16 and not named else [])]
    for what, read in reads.items():
        if any(secret in read.text for secret in secrets):
            raise Finding(f"{what} shows a token's secret (WP-CTRL-16)")


def route_table(probe: Probe) -> int:
    """Every route of §6.2 and §13 is served with the status and answer shape of the kit's
    OpenAPI document (WP-HTTP-8); every other method of those paths is ``404 NOT_FOUND`` in
    the envelope, like an unknown path (WP-HTTP-5, WP-HTTP-3), and changes nothing."""
    table = _Table(probe)
    _pass(table)
    obj(probe.request("GET", "/openapi.json"), "GET /openapi.json (WP-HTTP-7)", 200)
    before = (detail(probe), probe.head())
    served: dict[str, set[str]] = {}
    for method, template in ROUTES:
        served.setdefault(template, set()).add(method)
    for template, methods in served.items():
        who = "admin" if template.startswith("/admin/") else \
            None if template == "/v1/describe" else "alice"
        path = template.format(**table.ids)
        for method in METHODS:
            if method in methods:
                continue
            body = {"request_id": probe.rid("wm")} if method in ("POST", "PUT", "PATCH") \
                else None
            answer = probe.request(method, path, who=who, body=body)
            error(answer, f"{method} {path}, a method {template} does not serve (WP-HTTP-5, "
                          "WP-HTTP-3)", {"NOT_FOUND": None})
    obj(probe.request("GET", f"/v1/messages/{table.ids['message_id']}", who="bob"),
        "the message after other methods on its path", 200)
    obj(probe.request("GET", f"/v1/blobs/{table.ids['blob_id']}", who="alice"),
        "the blob after other methods on its path", 200)
    if (detail(probe), probe.head()) != before:
        raise Finding("requests with methods the paths do not serve changed the space or the "
                      "collection's head (WP-HTTP-5)")
    return probe.requests


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "waypost-kit", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _rpc_result(answer: httpx.Response) -> Any:
    """The JSON-RPC message of an MCP answer (JSON, or the first event of a stream)."""
    body = answer.text[:1 << 20]
    if "text/event-stream" in answer.headers.get("content-type", ""):
        lines = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        body = lines[0] if lines else ""
    try:
        return json.loads(body)
    except ValueError:
        return None


def mcp_entry(probe: Probe) -> int:
    """``capabilities.mcp`` says whether ``/mcp`` serves MCP (WP-HTTP-18): false, and every
    method of ``/mcp`` with or without a token answers like an unknown path; true, and an
    MCP ``initialize`` needs the bearer token of the HTTP routes (401 without it, a JSON-RPC
    result with it). The tools' own rules are not checked here."""
    described = obj(probe.request("GET", "/v1/describe"), "GET /v1/describe", 200)
    capabilities = described.get("capabilities")
    mcp = capabilities.get("mcp") if isinstance(capabilities, dict) else None
    if not isinstance(mcp, bool):
        raise Finding(f"capabilities.mcp is {mcp!r:.40}, not a boolean (WP-HTTP-9, WP-HTTP-18)")
    if not mcp:
        for who in (None, "bob", "admin"):
            for method in ("POST", "GET", "DELETE"):
                answer = probe.request(method, "/mcp", who=who, headers=MCP_HEADERS,
                                       body=INITIALIZE if method == "POST" else None)
                error(answer, f"{method} /mcp ({who or 'no credential'}) of a server whose "
                              "capabilities.mcp is false (WP-HTTP-18, WP-HTTP-5)",
                      {"NOT_FOUND": None})
        return probe.requests
    bare = probe.request("POST", "/mcp", headers=MCP_HEADERS, body=INITIALIZE)
    if bare.status_code != 401:
        raise Finding(f"an MCP initialize without a token: {shown(bare)}; the tools take the "
                      "bearer token of the HTTP routes (WP-HTTP-18)")
    answer = probe.request("POST", "/mcp", who="bob", headers=MCP_HEADERS, body=INITIALIZE)
    message = _rpc_result(answer)
    result = message.get("result") if isinstance(message, dict) else None
    if answer.status_code != 200 or not isinstance(result, dict) or \
            not isinstance(result.get("protocolVersion"), str):
        raise Finding(f"an MCP initialize with a data token: {shown(answer)}; "
                      "capabilities.mcp is true (WP-HTTP-18)")
    return probe.requests


CHECKS = (
    HostileCheck("route_table", "every route of §6.2 and §13 once, with real ids: the status "
                 "and answer shape of the kit's OpenAPI document; every other method of each "
                 "path is 404 in the envelope and changes nothing",
                 ("WP-HTTP-8", "WP-HTTP-5", "WP-HTTP-3", "WP-HTTP-7", "WP-ERR-1", "WP-CTRL-16"),
                 route_table),
    HostileCheck("mcp_entry", "capabilities.mcp is a boolean; false: /mcp answers like an "
                 "unknown path with or without a token; true: an MCP initialize needs the "
                 "bearer token", ("WP-HTTP-18", "WP-HTTP-9", "WP-HTTP-5"), mcp_entry),
)
