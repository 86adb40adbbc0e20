"""The tests' client of the API and the helpers over it: a thin client with the admin and
bearer tokens, request ids, refused requests, blobs, a memory collection, a principal for
statement tests. The fixtures that build them are in ``tests/conftest.py``."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from starlette.testclient import TestClient

from waypost.reference.domain.grants import Grants
from waypost.reference.domain.principal import ConsumerView, Principal

ADMIN_TOKEN = "test-admin-token"
ALL_SCOPES = ["message.send", "message.read", "space.observe", "receipt.write", "memory.write",
              "memory.read", "blob.write", "blob.reference", "event.subscribe"]
_request_ids = itertools.count(1)


def rid(prefix: str = "r") -> str:
    """A request id never used before in this test run."""
    return f"{prefix}-{next(_request_ids)}"


@dataclass
class Api:
    """A thin client: ``admin_*`` with the admin token, data-plane calls with a bearer token."""

    client: TestClient
    tokens: dict[str, str] = field(default_factory=dict)

    def admin(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.client.request(method, path, json=body,
                                   headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def must_admin(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.admin(method, path, body)
        assert response.status_code in (200, 201), response.text
        data: dict[str, Any] = response.json()
        return data

    def as_(self, who: str, method: str, path: str, body: Any = None,
            params: dict[str, Any] | None = None) -> httpx.Response:
        return self.client.request(method, path, json=body, params=params,
                                   headers={"Authorization": f"Bearer {self.tokens[who]}"})

    def space(self, space_id: str, actors: tuple[str, ...] = ("alice", "bob", "carol")) -> None:
        """A space whose default actor is the first of ``actors``; each actor gets an inbox
        consumer ``<actor>-inbox`` and a token named after it with every scope."""
        self.must_admin("POST", "/admin/v1/spaces", {
            "request_id": rid(), "space_id": space_id, "display_name": space_id,
            "source_uri": f"https://example.test/{space_id}",
            "default_actor": {"actor_id": actors[0], "kind": "agent", "display_name": actors[0]}})
        for actor in actors[1:]:
            self.must_admin("POST", f"/admin/v1/spaces/{space_id}/actors", {
                "request_id": rid(), "actor_id": actor, "kind": "agent", "display_name": actor})
        for actor in actors:
            self.consumer(space_id, actor, f"{actor}-inbox", "inbox")
            self.token(space_id, actor, f"{actor}-inbox", name=f"{space_id}/{actor}")

    def consumer(self, space_id: str, actor: str, consumer_id: str, view: str,
                 filter_: dict[str, list[str]] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"request_id": rid(), "consumer_id": consumer_id,
                                "actor_id": actor, "view": view}
        if filter_ is not None:
            body["filter"] = filter_
        return self.must_admin("POST", f"/admin/v1/spaces/{space_id}/consumers", body)

    def token(self, space_id: str, actor: str, consumer_id: str, *, name: str,
              scopes: list[str] | None = None, recipients: dict[str, Any] | None = None,
              **extra: Any) -> dict[str, Any]:
        body = {"request_id": rid(), "actor_id": actor, "consumer_id": consumer_id,
                "scopes": ALL_SCOPES if scopes is None else scopes,
                "recipients": recipients or {"mode": "any"}, "collections": [],
                "blob_references": [], **extra}
        issued = self.must_admin("POST", f"/admin/v1/spaces/{space_id}/tokens", body)
        self.tokens[name] = issued["token"]
        return issued

    def send(self, who: str, **fields: Any) -> httpx.Response:
        body = {"request_id": rid("send"), "thread": {"new": True}, "kind": "info",
                "subject": "hello", "body": {"text": "hi"}, **fields}
        return self.as_(who, "POST", "/v1/messages", body)

    def must_send(self, who: str, **fields: Any) -> dict[str, Any]:
        response = self.send(who, **fields)
        assert response.status_code == 201, response.text
        data: dict[str, Any] = response.json()
        return data

    def feed(self, who: str, **params: Any) -> dict[str, Any]:
        response = self.as_(who, "GET", "/v1/feed", params=params)
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def all_items(self, who: str, limit: int = 100) -> list[dict[str, Any]]:
        """Every item of the consumer's view from its checkpoint, following cursors."""
        page = self.feed(who, limit=limit)
        items = list(page["items"])
        while page["has_more"]:
            page = self.feed(who, limit=limit, cursor=page["next_cursor"])
            items += page["items"]
        return items


def must_fail(response: Any, status: int, code: str, field: str | None = None) -> dict[str, Any]:
    """The error envelope of a refused request, checked for its status, code and field."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    if field is not None:
        assert error["details"].get("field") == field
    return error


def prepare(api: Api, who: str, content: bytes, **extra: Any) -> dict[str, Any]:
    body = {"request_id": rid("prep"), "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain", **extra}
    response = api.as_(who, "POST", "/v1/blobs", body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def put(api: Api, who: str, upload_id: str, content: bytes) -> Any:
    return api.client.put(f"/v1/uploads/{upload_id}/content", content=content,
                          headers={"Authorization": f"Bearer {api.tokens[who]}"})


def seal(api: Api, who: str, upload_id: str, request_id: str | None = None) -> Any:
    return api.as_(who, "POST", f"/v1/uploads/{upload_id}/commit",
                   {"request_id": request_id or rid("seal")})


def sealed_blob(api: Api, who: str, content: bytes) -> str:
    slot = prepare(api, who, content)
    assert put(api, who, slot["upload_id"], content).status_code == 200
    answer = seal(api, who, slot["upload_id"])
    assert answer.status_code == 200, answer.text
    blob_id: str = answer.json()["blob_id"]
    return blob_id


def stored_objects(data_dir: Path) -> list[Path]:
    """The objects of a data directory's file blob store (its temporary files left out)."""
    return [path for path in (data_dir / "objects").rglob("*")
            if path.is_file() and not path.name.startswith(".")]


def content_of(api: Api, who: str, blob_id: str) -> Any:
    return api.client.get(f"/v1/blobs/{blob_id}/content",
                          headers={"Authorization": f"Bearer {api.tokens[who]}"})


NOTES = "/v1/collections/notes"
def with_notes(api: Api) -> Api:
    """Space s1: collection ``notes`` of alice; ``writer`` (alice) may write and read it,
    ``reader`` (bob) may read it, ``bob`` (no grant) may not; s2 is another space."""
    api.tokens["bob"] = api.tokens["s1/bob"]
    api.must_admin("POST", "/admin/v1/spaces/s1/collections", {
        "request_id": rid(), "collection_id": "notes", "source_actor_id": "alice",
        "scope": "project notes"})
    api.must_admin("POST", "/admin/v1/spaces/s2/collections", {
        "request_id": rid(), "collection_id": "notes", "source_actor_id": "dave", "scope": "x"})
    api.token("s1", "alice", "alice-inbox", name="writer", collections=[
        {"collection_id": "notes", "actions": ["read", "write"]}])
    api.token("s1", "bob", "bob-inbox", name="reader", collections=[
        {"collection_id": "notes", "actions": ["read"]}])
    api.token("s2", "dave", "dave-inbox", name="dave-writer", collections=[
        {"collection_id": "notes", "actions": ["read", "write"]}])
    return api


def publish(api: Api, expected: int, mode: str = "delta", who: str = "writer",
            request_id: str | None = None, **fields: Any) -> Any:
    body = {"request_id": request_id or rid("pub"), "expected_revision": expected, "mode": mode,
            **fields}
    return api.as_(who, "POST", f"{NOTES}/revisions", body)


def item(item_id: str, blob_id: str, path: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"item_id": item_id, "path": path or f"{item_id}.md", "blob_id": blob_id, **extra}


def entries(api: Api, revision: int, who: str = "reader", limit: int = 100,
            tombstones: bool = True) -> list[dict[str, Any]]:
    """Every entry of a revision, page by page."""
    params: dict[str, Any] = {"limit": limit, "include_tombstones": str(tombstones).lower()}
    found: list[dict[str, Any]] = []
    while True:
        page = api.as_(who, "GET", f"{NOTES}/revisions/{revision}/items", params=params)
        assert page.status_code == 200, page.text
        found += page.json()["items"]
        if not page.json()["has_more"]:
            return found
        params["cursor"] = page.json()["next_cursor"]


PRINCIPAL = Principal(
    "tok_x", "s1", "bob", 1, ConsumerView("bob-inbox", "inbox", 1), Grants(
        frozenset({"message.read", "memory.read", "space.observe"}), True, frozenset(),
        frozenset(), frozenset()), b"\0" * 32, None)
