"""Hostile-input checks as data: each names the requirements of docs/protocol.md it exercises,
sends input a careless or malicious client could send, and expects the §7 error envelope (the
status and code the protocol fixes, ``details.field`` where it names one) or, for input the
protocol allows, a normal answer; after each check the server must still answer.

The checks themselves live in ``hostile_values`` (bodies and values) and ``hostile_http``
(headers, routes, content types); ``conformance/hostile_phase.py`` runs them all. They speak HTTP only and
provision their own space through the control plane (:class:`Probe`)."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.properties.protocol.grammar import STATUS, envelope_problems
from waypost.properties.wire.untrusted import excerpt, visible

#: The scopes of the probe's tokens: every scope of protocol.md §4.2.
ALL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write", "memory.write",
              "memory.read", "blob.write", "blob.reference", "event.subscribe"]


#: The exchanges a probe keeps, the last ones: a failed check's evidence.
TRAIL = 8


class Finding(AssertionError):
    """What a check found: the input, the answer and what the protocol wanted; ``evidence``,
    the exchanges that led to it when no probe outlives it (a refused provisioning)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        self.evidence: list[dict[str, Any]] = []


def shown_value(text: str) -> str:
    """``text`` quoted for a message: control characters escaped (:func:`visible`) and each
    space of a run of two or more written ``\\x20``, so that ``'Bearer\\x20\\x20…'`` cannot
    be read as one space and nothing raw reaches a terminal."""
    spaced = re.sub(r" {2,}", lambda run: "\\x20" * len(run.group()), visible(text))
    return f"'{spaced}'"


def control_ids(path: str) -> tuple[str, ...]:
    """The requirement ids a control-plane write of the kit's own setup exercises: an id the
    caller chose (WP-CTRL-3), a space with its default actor (WP-CTRL-6), a token issued with
    its secret (WP-CTRL-11)."""
    if path.endswith("/tokens"):
        return ("WP-CTRL-11",)
    return ("WP-CTRL-3", "WP-CTRL-6") if path == "/admin/v1/spaces" else ("WP-CTRL-3",)


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
    trail: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=TRAIL))
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
        entry: dict[str, Any] = {
            "method": method, "path": path, "params": excerpt(params), "headers": sent,
            "body": excerpt(body) if content is None else content[:600].decode("latin-1"),
            "status": None, "answer": None}
        self.trail.append(entry)
        try:
            if content is not None:
                answer = self.client.request(method, path, content=content, headers=sent,
                                             params=params)
            else:
                answer = self.client.request(method, path, json=body, headers=sent,
                                             params=params)
        except httpx.TransportError as error:
            entry["answer"] = f"no answer: {type(error).__name__}"
            raise Finding(f"{method} {path}: the connection closed without an answer "
                          f"({type(error).__name__})") from None
        entry["status"], entry["answer"] = answer.status_code, answer.text[:600]
        return answer

    def masked(self, text: str) -> str:
        """``text`` with the probe's secrets shown as ``<bob's token>``, control characters
        escaped: what a message or a file may hold."""
        for name, secret in (("admin", self.admin_token), *self.tokens.items()):
            if secret:
                text = text.replace(secret, f"<{name}'s token>")
        return visible(text)

    def evidence(self) -> list[dict[str, Any]]:
        """The last exchanges (at most :data:`TRAIL`), every text in them masked: a failed
        check's."""
        def shown(value: Any) -> Any:
            if isinstance(value, str):
                return self.masked(value)
            if isinstance(value, dict):
                return {shown(key): shown(member) for key, member in value.items()}
            return [shown(member) for member in value] if isinstance(value, list) else value
        return [shown(entry) for entry in self.trail]

    def admin_ok(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A control-plane write of the probe's setup: ``200`` or ``201`` with a JSON object,
        else a :class:`Finding` naming the requirements it breaks (:func:`control_ids`)."""
        answer = self.request(method, path, who="admin", body=body)
        data = json_object(answer)
        if answer.status_code not in (200, 201) or data is None:
            raise Finding(f"provisioning {method} {path}: expected 200 or 201 with a JSON "
                          f"object, got {_shown(answer)} ({', '.join(control_ids(path))})")
        return data

    def sealed_blob(self, who: str, data: bytes, content_type: str = "text/plain") -> str:
        """A blob of ``data`` uploaded and sealed by ``who``."""
        prepared = self.request("POST", "/v1/blobs", who=who, body={
            "request_id": self.rid("b"), "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content_type": content_type})
        what = f"blob.prepare with content_type {content_type!r} (WP-UPL-2, WP-HTTP-15)"
        expect_status(prepared, 201, what)
        return self.upload(who, member(prepared, "upload_id", what), data)

    def upload(self, who: str, upload_id: str, data: bytes) -> str:
        stored = self.request("PUT", f"/v1/uploads/{upload_id}/content", who=who, content=data,
                              headers={"Content-Type": "application/octet-stream"})
        expect_status(stored, range(200, 300), "the upload's content PUT (WP-UPL-3)")
        sealed = self.request("POST", f"/v1/uploads/{upload_id}/commit", who=who,
                              body={"request_id": self.rid("s")})
        expect_status(sealed, 200, "blob.commit (WP-UPL-2, WP-HTTP-15)")
        return member(sealed, "blob_id", "blob.commit (WP-HTTP-15)")

    def head(self, collection: str = "notes") -> int:
        answer = self.request("GET", f"/v1/collections/{collection}", who="alice")
        what = f"reading collection {collection} (WP-MEM-20, WP-HTTP-17)"
        expect_status(answer, 200, what)
        revision = (json_object(answer) or {}).get("current_revision")
        if not isinstance(revision, int) or isinstance(revision, bool):
            raise Finding(f"{what}: no integer current_revision: {_shown(answer)}")
        return revision

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


def json_object(answer: httpx.Response) -> dict[str, Any] | None:
    """The answer's body if it is a JSON object, else None."""
    try:
        data = answer.json()
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def member(answer: httpx.Response, name: str, what: str) -> str:
    """The string member ``name`` of a JSON answer the check goes on from, else a
    :class:`Finding` (``what`` names the requirement)."""
    value = (json_object(answer) or {}).get(name)
    if not isinstance(value, str):
        raise Finding(f"{what}: expected a string {name}, got {_shown(answer)}")
    return value


def provision(client: httpx.Client, admin_token: str, prefix: str) -> Probe:
    """A fresh space ``<prefix>-<random>`` for one run of the checks; a control plane that
    refuses it is a :class:`Finding` naming the requirement (a describe the kit cannot read
    publishes no limits: the checks that need it say so)."""
    described = client.get("/v1/describe")
    data = (json_object(described) or {}) if described.status_code == 200 else {}
    published = data.get("limits")
    limits = {k: v for k, v in (published if isinstance(published, dict) else {}).items()
              if isinstance(v, int) and not isinstance(v, bool)}
    capabilities = data.get("capabilities") or {}
    probe = Probe(client, admin_token, f"{prefix}-{secrets.token_hex(3)}", limits=limits,
                  test_hooks=bool(isinstance(capabilities, dict)
                                  and capabilities.get("test_hooks")))
    try:
        _provision(probe)
    except Finding as finding:
        finding.evidence = probe.evidence()
        raise
    return probe


def _provision(probe: Probe) -> None:
    space = probe.space
    probe.admin_ok("POST", "/admin/v1/spaces", {
        "request_id": probe.rid(), "space_id": space,
        "display_name": f"waypost kit hostile input {space}",
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
        if not isinstance(issued.get("token"), str) or not issued["token"]:
            raise Finding(f"POST /admin/v1/spaces/{space}/tokens: the answer carries no "
                          f"token (WP-CTRL-11): {visible(str(excerpt(issued)))[:300]}")
        probe.tokens[actor] = issued["token"]


# ----- what an answer must be ---------------------------------------------------------------

def _shown(answer: httpx.Response) -> str:
    return f"{answer.status_code} {answer.text[:200]!r}"


def envelope(answer: httpx.Response, what: str) -> dict[str, Any]:
    """The §7 envelope of an error answer to client input: never a ``5xx`` but ``503``
    (WP-ERR-5), JSON, and the envelope :func:`~waypost.properties.protocol.grammar.envelope_problems`
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
