"""Hostile-input checks as data: each names the requirements of docs/protocol.md it exercises,
sends input a careless or malicious client could send, and expects the §7 error envelope (the
status and code the protocol fixes, ``details.field`` where it names one) or, for input the
protocol allows, a normal answer; after each check the server must still answer.

The checks themselves live in ``hostile_values`` (bodies and values) and ``hostile_http``
(headers, routes, content types); ``conformance/hostile.py`` runs them all. They speak HTTP only and
provision their own space through the control plane (:class:`Probe`)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.properties.grammar import STATUS, envelope_problems

#: The scopes of the probe's tokens: every scope of protocol.md §4.2.
ALL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write", "memory.write",
              "memory.read", "blob.write", "blob.reference", "event.subscribe"]


class Finding(AssertionError):
    """What a check found: the input, the answer and what the protocol wanted."""


@dataclass
class Probe:
    """One check's view of the target: a provisioned space with two actors (``alice`` the
    default, ``bob``), a token each, and a collection ``notes`` that alice writes."""

    client: httpx.Client
    admin_token: str
    space: str
    tokens: dict[str, str] = field(default_factory=dict)
    limits: dict[str, int] = field(default_factory=dict)
    test_hooks: bool = False
    requests: int = 0
    _next: int = 0

    def rid(self, prefix: str = "h") -> str:
        self._next += 1
        return f"{self.space}.{prefix}{self._next}"

    def request(self, method: str, path: str, *, who: str | None = None,
                body: Any = None, content: bytes | None = None,
                headers: dict[str, str] | None = None,
                params: dict[str, Any] | None = None) -> httpx.Response:
        """One request as ``who`` (a data token's name, ``admin``, or None: no credential).
        A connection that closes without an answer is a finding: a server answers every
        request."""
        sent = dict(headers or {})
        if who is not None:
            secret = self.admin_token if who == "admin" else self.tokens[who]
            sent.setdefault("Authorization", f"Bearer {secret}")
        self.requests += 1
        try:
            if content is not None:
                return self.client.request(method, path, content=content, headers=sent,
                                           params=params)
            return self.client.request(method, path, json=body, headers=sent, params=params)
        except httpx.TransportError as error:
            raise Finding(f"{method} {path}: the connection closed without an answer "
                          f"({type(error).__name__})") from None

    def admin_ok(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.request(method, path, who="admin", body=body)
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"provisioning {method} {path} failed: {answer.status_code} "
                               f"{answer.text[:300]}")
        data: dict[str, Any] = answer.json()
        return data

    def sealed_blob(self, who: str, data: bytes, content_type: str = "text/plain") -> str:
        """A blob of ``data`` uploaded and sealed by ``who``."""
        prepared = self.request("POST", "/v1/blobs", who=who, body={
            "request_id": self.rid("b"), "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content_type": content_type})
        expect_status(prepared, 201, f"blob.prepare with content_type {content_type!r}")
        return self.upload(who, prepared.json()["upload_id"], data)

    def upload(self, who: str, upload_id: str, data: bytes) -> str:
        stored = self.request("PUT", f"/v1/uploads/{upload_id}/content", who=who, content=data,
                              headers={"Content-Type": "application/octet-stream"})
        expect_status(stored, range(200, 300), "the upload's content PUT")
        sealed = self.request("POST", f"/v1/uploads/{upload_id}/commit", who=who,
                              body={"request_id": self.rid("s")})
        expect_status(sealed, 200, "blob.commit")
        return str(sealed.json()["blob_id"])

    def head(self, collection: str = "notes") -> int:
        answer = self.request("GET", f"/v1/collections/{collection}", who="alice")
        expect_status(answer, 200, f"reading collection {collection}")
        return int(answer.json()["current_revision"])

    def inbox(self, who: str) -> list[dict[str, Any]]:
        """Every item of ``who``'s inbox view from its checkpoint."""
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": self.limits.get("page_limit", 50)}
        for _ in range(1000):
            page = self.request("GET", "/v1/feed", who=who, params=params)
            expect_status(page, 200, f"{who}'s feed")
            items += page.json()["items"]
            if not page.json()["has_more"]:
                break
            params["cursor"] = page.json()["next_cursor"]
        return items


def provision(client: httpx.Client, admin_token: str, prefix: str) -> Probe:
    """A fresh space ``<prefix>-<random>`` for one run of the checks."""
    described = client.get("/v1/describe")
    data = described.json() if described.status_code == 200 else {}
    limits = {k: v for k, v in (data.get("limits") or {}).items()
              if isinstance(v, int) and not isinstance(v, bool)}
    capabilities = data.get("capabilities") or {}
    probe = Probe(client, admin_token, f"{prefix}-{secrets.token_hex(3)}", limits=limits,
                  test_hooks=bool(isinstance(capabilities, dict)
                                  and capabilities.get("test_hooks")))
    space = probe.space
    probe.admin_ok("POST", "/admin/v1/spaces", {
        "request_id": probe.rid(), "space_id": space, "display_name": "hostile input",
        "source_uri": f"waypost-kit://{space}",
        "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "alice"}})
    probe.admin_ok("POST", f"/admin/v1/spaces/{space}/actors", {
        "request_id": probe.rid(), "actor_id": "bob", "kind": "agent", "display_name": "bob"})
    probe.admin_ok("POST", f"/admin/v1/spaces/{space}/collections", {
        "request_id": probe.rid(), "collection_id": "notes", "source_actor_id": "alice",
        "scope": "hostile input"})
    for actor in ("alice", "bob"):
        probe.admin_ok("POST", f"/admin/v1/spaces/{space}/consumers", {
            "request_id": probe.rid(), "consumer_id": f"{actor}-inbox", "actor_id": actor,
            "view": "inbox"})
        actions = ["read", "write"] if actor == "alice" else ["read"]
        issued = probe.admin_ok("POST", f"/admin/v1/spaces/{space}/tokens", {
            "request_id": probe.rid(), "actor_id": actor, "consumer_id": f"{actor}-inbox",
            "scopes": ALL_SCOPES, "recipients": {"mode": "any"},
            "collections": [{"collection_id": "notes", "actions": actions}],
            "blob_references": []})
        probe.tokens[actor] = str(issued["token"])
    return probe


# ----- what an answer must be ---------------------------------------------------------------

def _shown(answer: httpx.Response) -> str:
    return f"{answer.status_code} {answer.text[:200]!r}"


def envelope(answer: httpx.Response, what: str) -> dict[str, Any]:
    """The §7 envelope of an error answer to client input: never a ``5xx`` but ``503``
    (WP-ERR-5), JSON, and the envelope :func:`~waypost.properties.grammar.envelope_problems`
    accepts (WP-ERR-1 to WP-ERR-3, WP-HTTP-3)."""
    if answer.status_code >= 500 and answer.status_code != 503:
        raise Finding(f"{what}: a server error for client input (WP-ERR-5): {_shown(answer)}")
    try:
        body = answer.json()
    except ValueError:
        raise Finding(f"{what}: the answer is not the JSON error envelope: "
                      f"{_shown(answer)}") from None
    problems = envelope_problems(answer.status_code, body)
    if problems:
        raise Finding(f"{what}: not the §7 envelope (WP-ERR-1, WP-ERR-2, WP-ERR-3): "
                      f"{'; '.join(problems)}: {_shown(answer)}")
    error: dict[str, Any] = body["error"]
    return error


def refused(answer: httpx.Response, what: str, codes: dict[str, str | None]) -> dict[str, Any]:
    """An envelope whose code is one of ``codes``; each maps to the ``details.field`` it must
    name (None: any or none)."""
    if answer.status_code < 400:
        raise Finding(f"{what}: accepted ({_shown(answer)}), expected "
                      f"{' or '.join(f'{STATUS[c]} {c}' for c in codes)}")
    error = envelope(answer, what)
    if error["code"] not in codes:
        raise Finding(f"{what}: {answer.status_code} {error['code']}, expected "
                      f"{' or '.join(f'{STATUS[c]} {c}' for c in codes)}: {_shown(answer)}")
    wanted = codes[error["code"]]
    details = error["details"]
    if wanted is not None and details.get("field") != wanted:
        raise Finding(f"{what}: {error['code']} must name details.field {wanted!r}, named "
                      f"{details.get('field')!r}")
    return error


def invalid(answer: httpx.Response, what: str, field_name: str | None) -> dict[str, Any]:
    """``400 INVALID_REQUEST`` naming ``field_name``."""
    return refused(answer, what, {"INVALID_REQUEST": field_name})


def expect_status(answer: httpx.Response, wanted: int | range, what: str) -> None:
    ok = answer.status_code in wanted if isinstance(wanted, range) \
        else answer.status_code == wanted
    if not ok:
        raise Finding(f"{what}: expected {wanted}, got {_shown(answer)}")


# ----- the checks as data ---------------------------------------------------------------------

Run = Callable[[Probe], int]  # raises Finding; returns how many inputs it sent


@dataclass(frozen=True)
class HostileCheck:
    """One hostile-input check: its name, what it sends, the requirement ids it exercises,
    and ``needs`` (``"no test hooks"``: it only applies to a target without them; ``"a raw
    connection"``: to a URL a socket reaches)."""

    name: str
    description: str
    requirements: tuple[str, ...]
    run: Run
    needs: str = ""


def still_answering(probe: Probe) -> None:
    """The server keeps answering after hostile input: describe and a token's feed read."""
    described = probe.request("GET", "/v1/describe")
    expect_status(described, 200, "GET /v1/describe after the hostile input")
    feed = probe.request("GET", "/v1/feed", who="bob", params={"limit": 1})
    expect_status(feed, 200, "a feed read after the hostile input")
