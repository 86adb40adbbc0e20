"""The served OpenAPI document: it covers every route, is valid, and real answers conform to it.
Answers are open in the document (a server MAY add members); the reference's own answers are
held to the members the document lists, required or optional, so it shows none it leaves out."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from tests.support.api import Api, content_of, prepare, put, rid, seal, sealed_blob
from tools.kit_openapi import OUT as KIT_DOCUMENT
from tools.kit_openapi import kit_document, render
from waypost.reference.http.app import ROUTES

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
Doc = dict[str, Any]


@pytest.fixture
def doc(client: TestClient) -> Doc:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    data: Doc = response.json()
    return data


def operations(doc: Doc) -> Iterator[tuple[str, str, Doc]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in METHODS:
                yield method, path, op


def validator(doc: Doc, schema: Doc) -> Draft202012Validator:
    """A validator for a schema taken from ``doc``: its ``#/components/...`` refs resolve
    because the components ride along in the root (an unknown keyword to JSON Schema)."""
    return Draft202012Validator({**schema, "components": doc["components"]})


def errors_of(doc: Doc, schema: Doc, instance: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator(doc, schema).iter_errors(instance)]


PROTOCOL_HEADERS = ("Waypost-Replayed", "Retry-After", "ETag")


def closed(node: Any) -> Any:
    """``node`` with every object schema that lists members closed to others: what the
    reference answers, which must be every member it shows (required or optional)."""
    if isinstance(node, list):
        return [closed(value) for value in node]
    if not isinstance(node, dict):
        return node
    shut = {key: closed(value) for key, value in node.items()}
    if "properties" in node and "additionalProperties" not in node:
        shut["additionalProperties"] = False
    return shut


def documented_status(responses: Doc, status: int) -> str:
    """The key of ``responses`` that documents ``status``: itself, else its range (``2XX``)."""
    return str(status) if str(status) in responses else f"{str(status)[0]}XX"


def _media_type_documented(content: Doc, media_type: str) -> bool:
    kind = media_type.split("/")[0]
    return any(key in (media_type, f"{kind}/*", "*/*") for key in content)


def conforms(doc: Doc, method: str, path: str, response: httpx.Response) -> Any:
    """Assert the answer's status is documented for the operation, its media type is one the
    answer declares and its JSON fits the schema, an error's code is one the answer names, and
    its headers are the declared ones (required ones present, values fitting their schemas);
    return the JSON, or the bytes of a non-JSON answer."""
    responses = doc["paths"][path][method]["responses"]
    status = documented_status(responses, response.status_code)
    assert status in responses, f"{method.upper()} {path}: {status} undocumented: {response.text}"
    answer = responses[status]
    headers = answer.get("headers", {})
    for name, header in headers.items():
        if name in response.headers:
            assert errors_of(doc, header["schema"], response.headers[name]) == [], name
        else:
            assert not header.get("required"), f"{method.upper()} {path}: no {name} header"
    for name in PROTOCOL_HEADERS:
        if name in response.headers:
            assert name in headers, f"{method.upper()} {path}: {status} {name} undocumented"
    if "content" not in answer and status.endswith("XX"):  # any body, JSON if there is one
        return response.json() if response.content else response.content
    if "content" not in answer:  # an answer without a body (416 of a range past the end)
        assert response.content == b"", (path, status)
        return response.content
    media_type = response.headers["content-type"].split(";")[0].strip()
    assert _media_type_documented(answer["content"], media_type), (path, status, media_type)
    if media_type != "application/json":
        return response.content
    body = response.json()
    schema = answer["content"]["application/json"]["schema"]
    assert errors_of(doc, schema, body) == [], body
    assert errors_of(closed(doc), closed(schema), body) == [], ("undocumented member", body)
    if response.status_code >= 400:
        assert body["error"]["code"] in answer["description"].split(" or "), (path, body)
    return body


def request_schema(doc: Doc, method: str, path: str) -> Doc:
    schema: Doc = doc["paths"][path][method]["requestBody"]["content"]["application/json"][
        "schema"]
    return schema


# 1. -----------------------------------------------------------------------------------------


def test_every_route_is_documented_with_exactly_its_methods(doc: Doc) -> None:
    routed = {(method.lower(), route.path) for route in ROUTES
              for method in (route.methods or ()) if method != "HEAD"}
    documented = {(method, path) for method, path, _ in operations(doc)}
    assert documented == routed


def test_path_parameters_match_the_path_templates(doc: Doc) -> None:
    for method, path, op in operations(doc):
        in_path = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert in_path == set(re.findall(r"{(\w+)}", path)), (method, path)
        assert all(p["required"] for p in op.get("parameters", []) if p["in"] == "path")


def test_operations_have_unique_ids_security_and_error_envelopes(doc: Doc) -> None:
    ids = [op["operationId"] for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids))
    schemes = set(doc["components"]["securitySchemes"])
    assert schemes == {"bearerAuth", "adminBearer"}
    for method, path, op in operations(doc):
        wanted: list[dict[str, list[str]]] = ([] if path in ("/v1/describe", "/openapi.json")
                  else [{"adminBearer": []}] if path.startswith(("/admin/", "/_test/"))
                  else [{"bearerAuth": []}])
        assert op["security"] == wanted, (method, path)
        for status, answer in op["responses"].items():
            if (status, path) == ("416", CONTENT):
                assert "content" not in answer  # a range past the end: no body, no error code
            elif int(status[0]) >= 4:
                assert answer["content"] == {"application/json": {"schema": {
                    "$ref": "#/components/schemas/Error"}}}, (method, path, status)
        if method == "post" and not path.startswith("/_test/"):  # test hooks are not submissions
            success = next(a for s, a in op["responses"].items() if s.startswith("2"))
            assert "Waypost-Replayed" in success["headers"], path


# 2. -----------------------------------------------------------------------------------------


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_document_is_valid_openapi_3_1(doc: Doc) -> None:
    assert doc["openapi"] == "3.1.0"
    assert doc["info"] == {**doc["info"], "title": "Waypost/1", "version": "1"}
    validate(doc)
    schemas = doc["components"]["schemas"]
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    for _, _, op in operations(doc):
        inline = [p["schema"] for p in op.get("parameters", [])]
        bodies = [*op["responses"].values(), *([op["requestBody"]] if "requestBody" in op else [])]
        inline += [media["schema"] for body in bodies
                   for media in body.get("content", {}).values()
                   if "schema" in media]  # raw bytes have none (OpenAPI 3.1 raw binary)
        inline += [header["schema"] for answer in op["responses"].values()
                   for header in answer.get("headers", {}).values()]
        for schema in inline:
            Draft202012Validator.check_schema(schema)
    for target in set(_refs(doc)):
        assert target.startswith("#/components/schemas/"), target
        assert target.removeprefix("#/components/schemas/") in schemas, target


# 3. -----------------------------------------------------------------------------------------


def test_describe_and_openapi_conform(client: TestClient, doc: Doc) -> None:
    conforms(doc, "get", "/v1/describe", client.get("/v1/describe"))
    conforms(doc, "get", "/openapi.json", client.get("/openapi.json"))


def test_data_plane_answers_conform(api: Api, doc: Doc) -> None:
    body = {"request_id": rid("send"), "thread": {"new": True}, "kind": "question",
            "subject": "lunch?", "recipient_ids": ["bob"], "metadata": {"k": "v"},
            "body": {"text": "where?", "options": ["here", "there"],
                     "source_uri": "https://example.test/q"}}
    assert errors_of(doc, request_schema(doc, "post", "/v1/messages"), body) == []
    sent = conforms(doc, "post", "/v1/messages", api.as_("s1/alice", "POST", "/v1/messages", body))
    replay = api.as_("s1/alice", "POST", "/v1/messages", body)
    assert replay.headers["waypost-replayed"] == "true"
    conforms(doc, "post", "/v1/messages", replay)
    reply = api.send("s1/bob", thread={"thread_id": sent["thread_id"]}, recipient_ids=["alice"],
                     in_reply_to=sent["message_id"], kind="result", subject="re: lunch?")
    replied = conforms(doc, "post", "/v1/messages", reply)

    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}")
    assert conforms(doc, "get", "/v1/messages/{message_id}", message)["metadata"] == {"k": "v"}
    answer = api.as_("s1/alice", "GET", f"/v1/messages/{replied['message_id']}")
    assert conforms(doc, "get", "/v1/messages/{message_id}", answer)["in_reply_to"]

    page = conforms(doc, "get", "/v1/feed", api.as_("s1/bob", "GET", "/v1/feed",
                                                    params={"limit": 10}))
    assert [item["type"] for item in page["items"]] == ["message"]
    ack = {"request_id": rid("ack"), "items": [{"item_id": page["items"][0]["item_id"],
                                                "stage": "processed"}],
           "checkpoint": {"cursor": page["next_cursor"]}}
    assert errors_of(doc, request_schema(doc, "post", "/v1/acks"), ack) == []
    acked = conforms(doc, "post", "/v1/acks", api.as_("s1/bob", "POST", "/v1/acks", ack))
    assert acked["checkpoint_sequence"] == page["items"][0]["sequence"]
    again = {"request_id": rid("ack"), "items": [{"item_id": page["items"][0]["item_id"],
                                                  "stage": "received"}]}
    no_op = conforms(doc, "post", "/v1/acks", api.as_("s1/bob", "POST", "/v1/acks", again))
    assert no_op["items"][0]["changed"] is False
    assert no_op["checkpoint_sequence"] is None

    alice = conforms(doc, "get", "/v1/feed", api.as_("s1/alice", "GET", "/v1/feed"))
    assert "receipt" in {item["type"] for item in alice["items"]}

    lookup = "/v1/submissions/{operation}/{request_id}"
    for who, operation, request_id in (("s1/alice", "message.send", body["request_id"]),
                                       ("s1/bob", "receipt.ack", ack["request_id"])):
        found = api.as_(who, "GET", f"/v1/submissions/{operation}/{request_id}")
        assert conforms(doc, "get", lookup, found)["state"] == "committed"
        assert found.status_code == 200


def test_error_answers_conform(api: Api, client: TestClient, doc: Doc) -> None:
    missing = api.as_("s1/bob", "GET", "/v1/messages/msg_nope")
    assert missing.status_code == 404
    conforms(doc, "get", "/v1/messages/{message_id}", missing)

    bad = {"request_id": rid("send"), "thread": {"new": True}, "kind": "info", "subject": "x",
           "body": {"text": "x"}, "colour": "red"}
    assert errors_of(doc, request_schema(doc, "post", "/v1/messages"), bad) != []
    rejected = api.as_("s1/alice", "POST", "/v1/messages", bad)
    assert rejected.status_code == 400
    assert conforms(doc, "post", "/v1/messages", rejected)["error"]["details"] == {
        "field": "colour"}

    unauthenticated = client.get("/v1/feed")
    assert unauthenticated.status_code == 401
    conforms(doc, "get", "/v1/feed", unauthenticated)

    first = api.send("s1/alice", request_id="same-key")
    conforms(doc, "post", "/v1/messages", first)
    conflict = api.send("s1/alice", request_id="same-key", subject="other")
    assert conflict.status_code == 409
    conforms(doc, "post", "/v1/messages", conflict)

    stale = api.as_("s1/bob", "GET", "/v1/feed", params={"cursor": "v1.forged.tag"})
    assert stale.status_code == 400
    conforms(doc, "get", "/v1/feed", stale)
    unknown = api.as_("s1/bob", "GET", "/v1/submissions/message.send/never-used")
    assert unknown.status_code == 404
    conforms(doc, "get", "/v1/submissions/{operation}/{request_id}", unknown)


def test_control_plane_answers_conform(api: Api, doc: Doc) -> None:
    space = "/admin/v1/spaces/{space_id}"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        (f"{space}/actors", "/admin/v1/spaces/s1/actors",
         {"request_id": rid(), "actor_id": "zed", "kind": "human", "display_name": "Zed"}),
        (f"{space}/consumers", "/admin/v1/spaces/s1/consumers",
         {"request_id": rid(), "consumer_id": "zed-log", "actor_id": "zed", "view": "space_log",
          "filter": {"item_types": ["message"], "producer_ids": ["alice"]}}),
        (f"{space}/consumers/{{consumer_id}}/view", "/admin/v1/spaces/s1/consumers/zed-log/view",
         {"request_id": rid(), "view": "inbox"}),
        (f"{space}/collections", "/admin/v1/spaces/s1/collections",
         {"request_id": rid(), "collection_id": "notes", "source_actor_id": "zed",
          "scope": "repo://notes"}),
        (f"{space}/tokens", "/admin/v1/spaces/s1/tokens",
         {"request_id": rid(), "actor_id": "zed", "consumer_id": "zed-log",
          "scopes": ["message.read"], "recipients": {"mode": "listed", "actor_ids": ["alice"]},
          "collections": [{"collection_id": "notes", "actions": ["read"]}],
          "blob_references": [], "expires_at": "2099-01-01T00:00:00Z"}),
        (f"{space}/actors/{{actor_id}}/disable", "/admin/v1/spaces/s1/actors/carol/disable",
         {"request_id": rid()}),
    ]
    for template, path, body in calls:
        assert errors_of(doc, request_schema(doc, "post", template), body) == [], template
        answer = conforms(doc, "post", template, api.admin("POST", path, body))
        if template.endswith("/tokens"):
            token_id = answer["token_id"]
            replay = api.admin("POST", path, body)
            assert conforms(doc, "post", template, replay)["token"] is None
    revoke = {"request_id": rid()}
    conforms(doc, "post", "/admin/v1/tokens/{token_id}/revoke",
             api.admin("POST", f"/admin/v1/tokens/{token_id}/revoke", revoke))
    thread = api.must_send("s1/alice", recipient_ids=["bob"])["thread_id"]
    members = {"request_id": rid(), "actor_ids": ["zed"]}
    conforms(doc, "post", f"{space}/threads/{{thread_id}}/members",
             api.admin("POST", f"/admin/v1/spaces/s1/threads/{thread}/members", members))
    conforms(doc, "get", "/admin/v1/spaces", api.admin("GET", "/admin/v1/spaces"))
    detail = conforms(doc, "get", space, api.admin("GET", "/admin/v1/spaces/s1"))
    assert {c["consumer_id"] for c in detail["consumers"]} >= {"zed-log"}
    conforms(doc, "get", space, api.admin("GET", "/admin/v1/spaces/nope"))
    bad = {"request_id": rid(), "actor_id": "x y", "kind": "robot", "display_name": ""}
    assert errors_of(doc, request_schema(doc, "post", f"{space}/actors"), bad) != []
    rejected = api.admin("POST", "/admin/v1/spaces/s1/actors", bad)
    assert rejected.status_code == 400
    conforms(doc, "post", f"{space}/actors", rejected)


# 4. -----------------------------------------------------------------------------------------

UPLOAD, COMMIT = "/v1/uploads/{upload_id}/content", "/v1/uploads/{upload_id}/commit"
BLOB, CONTENT = "/v1/blobs/{blob_id}", "/v1/blobs/{blob_id}/content"


def test_raw_bodies_are_documented_as_bytes(doc: Doc) -> None:
    assert doc["paths"][UPLOAD]["put"]["requestBody"]["content"] == {
        "application/octet-stream": {}}
    answer = doc["paths"][CONTENT]["get"]["responses"]["200"]
    assert answer["content"] == {"*/*": {}}
    assert answer["headers"]["ETag"]["required"] is True


def test_blob_answers_conform(api: Api, doc: Doc) -> None:
    data = b"hello, blob"
    body = {"request_id": rid("prep"), "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain",
            "filename": "hello.txt"}
    assert errors_of(doc, request_schema(doc, "post", "/v1/blobs"), body) == []
    slot = conforms(doc, "post", "/v1/blobs", api.as_("s1/alice", "POST", "/v1/blobs", body))
    replay = api.as_("s1/alice", "POST", "/v1/blobs", body)
    assert replay.headers["waypost-replayed"] == "true"
    assert conforms(doc, "post", "/v1/blobs", replay) == slot

    stored = conforms(doc, "put", UPLOAD, put(api, "s1/alice", slot["upload_id"], data))
    assert stored["state"] == "stored"  # the reference's body: not part of the contract
    assert set(stored) == {"upload_id", "blob_id", "state", "size", "sha256"}
    commit = {"request_id": rid("seal")}
    assert errors_of(doc, request_schema(doc, "post", COMMIT), commit) == []
    sealed = conforms(doc, "post", COMMIT, seal(api, "s1/alice", slot["upload_id"],
                                                commit["request_id"]))
    replay = seal(api, "s1/alice", slot["upload_id"], commit["request_id"])
    assert replay.headers["waypost-replayed"] == "true"
    assert conforms(doc, "post", COMMIT, replay) == sealed
    late = conforms(doc, "put", UPLOAD, put(api, "s1/alice", slot["upload_id"], data))
    assert late["state"] == "sealed"

    meta = conforms(doc, "get", BLOB, api.as_("s1/alice", "GET", f"/v1/blobs/{sealed['blob_id']}"))
    assert meta["filename"] == "hello.txt"
    assert conforms(doc, "get", CONTENT, content_of(api, "s1/alice", sealed["blob_id"])) == data
    empty = sealed_blob(api, "s1/alice", b"")
    assert conforms(doc, "get", BLOB, api.as_("s1/alice", "GET", f"/v1/blobs/{empty}"))[
        "filename"] is None
    assert conforms(doc, "get", CONTENT, content_of(api, "s1/alice", empty)) == b""

    lookup = "/v1/submissions/{operation}/{request_id}"
    for operation, request_id, result in (("blob.prepare", body["request_id"], slot),
                                          ("blob.commit", commit["request_id"], sealed)):
        found = api.as_("s1/alice", "GET", f"/v1/submissions/{operation}/{request_id}")
        assert conforms(doc, "get", lookup, found)["result"]["body"] == result


def test_blob_error_answers_conform(api: Api, client: TestClient, doc: Doc) -> None:
    prepare_schema = request_schema(doc, "post", "/v1/blobs")
    base = {"size": 1, "sha256": "0" * 64, "content_type": "x/y"}
    for bad, status in (({"colour": "red"}, 400), ({"sha256": "ABC"}, 400),
                        ({"content_type": ""}, 400), ({"size": 64 * 1024 * 1024 + 1}, 413)):
        body = {"request_id": rid(), **base, **bad}
        assert errors_of(doc, prepare_schema, body) != [], bad
        rejected = api.as_("s1/alice", "POST", "/v1/blobs", body)
        assert rejected.status_code == status, rejected.text
        conforms(doc, "post", "/v1/blobs", rejected)
    first = {"request_id": "prep-once", **base}
    conforms(doc, "post", "/v1/blobs", api.as_("s1/alice", "POST", "/v1/blobs", first))
    conflict = api.as_("s1/alice", "POST", "/v1/blobs", {**first, "content_type": "a/b"})
    assert conflict.status_code == 409
    conforms(doc, "post", "/v1/blobs", conflict)

    data = b"expected bytes"
    slot = prepare(api, "s1/alice", data)
    upload = slot["upload_id"]
    api.token("s1", "alice", "alice-inbox", name="no-write", scopes=["message.read"])
    for who, target, content, status in (
            ("s1/alice", upload, data + b"!", 422), ("s1/bob", upload, data, 404),
            ("no-write", upload, data, 403), ("s1/alice", "bad.id", data, 400)):
        answer = put(api, who, target, content)
        assert answer.status_code == status, answer.text
        conforms(doc, "put", UPLOAD, answer)
    for who, target, status in (("s1/alice", upload, 409), ("s1/bob", upload, 404),
                                ("no-write", upload, 403), ("s1/alice", "bad.id", 400)):
        answer = seal(api, who, target)
        assert answer.status_code == status, answer.text
        conforms(doc, "post", COMMIT, answer)
    unauthenticated = client.put(f"/v1/uploads/{upload}/content", content=data)
    assert unauthenticated.status_code == 401
    conforms(doc, "put", UPLOAD, unauthenticated)

    for blob_id, status in ((slot["blob_id"], 404), ("blb_missing", 404), ("bad.id", 400)):
        meta = api.as_("s1/alice", "GET", f"/v1/blobs/{blob_id}")
        content = content_of(api, "s1/alice", blob_id)
        assert (meta.status_code, content.status_code) == (status, status)
        conforms(doc, "get", BLOB, meta)
        conforms(doc, "get", CONTENT, content)
    for path in ("/v1/blobs/blb_x", "/v1/blobs/blb_x/content"):
        unauthenticated = client.get(path)
        assert unauthenticated.status_code == 401
        conforms(doc, "get", path.replace("blb_x", "{blob_id}"), unauthenticated)


def test_clock_and_expiry_answers_conform(hooked: Api) -> None:
    api = hooked
    doc: Doc = api.client.get("/openapi.json").json()
    before = conforms(doc, "get", "/_test/clock", api.admin("GET", "/_test/clock"))
    data = b"too late"
    waiting, stored = prepare(api, "s1/alice", data), prepare(api, "s1/alice", data)
    assert put(api, "s1/alice", stored["upload_id"], data).status_code == 200
    advance = {"advance_ms": 3600 * 1000 + 1}
    assert errors_of(doc, request_schema(doc, "post", "/_test/clock"), advance) == []
    after = conforms(doc, "post", "/_test/clock", api.admin("POST", "/_test/clock", advance))
    assert after["now"] > before["now"]

    expired = put(api, "s1/alice", waiting["upload_id"], data)
    assert expired.status_code == 410
    conforms(doc, "put", UPLOAD, expired)
    for attempt in (1, 2):
        late = seal(api, "s1/alice", stored["upload_id"], "late-seal")
        assert late.status_code == 410
        assert ("waypost-replayed" in late.headers) is (attempt == 2)
        conforms(doc, "post", COMMIT, late)

    bad = {"advance_ms": -1}
    assert errors_of(doc, request_schema(doc, "post", "/_test/clock"), bad) != []
    rejected = api.admin("POST", "/_test/clock", bad)
    assert rejected.status_code == 400
    conforms(doc, "post", "/_test/clock", rejected)
    for method in ("GET", "POST"):
        unauthenticated = api.client.request(method, "/_test/clock", json=advance)
        assert unauthenticated.status_code == 401
        conforms(doc, method.lower(), "/_test/clock", unauthenticated)


def test_clock_is_not_found_without_test_hooks(api: Api, doc: Doc) -> None:
    for method, body in (("GET", None), ("POST", {"advance_ms": 1})):
        missing = api.admin(method, "/_test/clock", body)
        assert missing.status_code == 404
        conforms(doc, method.lower(), "/_test/clock", missing)


def test_memory_answers_conform(api: Api, doc: Doc) -> None:
    api.must_admin("POST", "/admin/v1/spaces/s1/collections", {
        "request_id": rid(), "collection_id": "notes", "source_actor_id": "alice",
        "scope": "notes"})
    api.token("s1", "alice", "alice-inbox", name="writer", collections=[
        {"collection_id": "notes", "actions": ["read", "write"]}])
    blob = sealed_blob(api, "writer", b"entry")
    path = "/v1/collections/{collection_id}/revisions"
    body = {"request_id": rid("pub"), "expected_revision": 0, "mode": "delta",
            "items": [{"item_id": "a", "path": "a.md", "blob_id": blob, "metadata": {"k": 1}},
                      {"item_id": "b", "path": "b.md", "blob_id": blob}]}
    assert errors_of(doc, request_schema(doc, "post", path), body) == []
    url = "/v1/collections/notes/revisions"
    assert conforms(doc, "post", path, api.as_("writer", "POST", url, body))["changed"]
    conforms(doc, "post", path, api.as_("writer", "POST", url, body))  # replayed
    same = {**body, "request_id": rid("pub"), "expected_revision": 1}
    assert conforms(doc, "post", path, api.as_("writer", "POST", url, same)) == {
        "revision": 1, "changed": False}
    snapshot = {"request_id": rid("pub"), "expected_revision": 1, "mode": "snapshot",
                "items": []}
    conforms(doc, "post", path, api.as_("writer", "POST", url, snapshot))
    conflict = api.as_("writer", "POST", url, {**snapshot, "request_id": rid("pub")})
    assert conforms(doc, "post", path, conflict)["error"]["code"] == "REVISION_CONFLICT"
    conforms(doc, "post", path, api.as_("writer", "POST", url, {"request_id": "x"}))
    conforms(doc, "get", "/v1/collections/{collection_id}",
             api.as_("writer", "GET", "/v1/collections/notes"))
    conforms(doc, "get", "/v1/collections/{collection_id}",
             api.as_("writer", "GET", "/v1/collections/missing"))
    meta = "/v1/collections/{collection_id}/revisions/{revision}"
    for revision in (0, 1, 2, 3):
        conforms(doc, "get", meta, api.as_("writer", "GET", f"/v1/collections/notes/revisions/"
                                                             f"{revision}"))
    items = f"{meta}/items"
    page = conforms(doc, "get", items, api.as_(
        "writer", "GET", "/v1/collections/notes/revisions/2/items",
        params={"include_tombstones": "true", "limit": 1}))
    assert page["has_more"]
    conforms(doc, "get", items, api.as_("writer", "GET", "/v1/collections/notes/revisions/2/items",
                                        params={"cursor": "v1.x.y"}))
    lookup = api.as_("writer", "GET", f"/v1/submissions/memory.publish/{body['request_id']}")
    conforms(doc, "get", "/v1/submissions/{operation}/{request_id}", lookup)
    feed = conforms(doc, "get", "/v1/feed", api.as_("writer", "GET", "/v1/feed"))
    assert [i["type"] for i in feed["items"]].count("memory_revision") == 2


#: What the reference serves beyond the kit's normative document: the optional test hooks of
#: protocol.md §14 (only with --test-hooks do they answer) and the schemas only they use.
def test_the_reference_serves_the_kits_document_plus_the_test_hooks(doc: Doc) -> None:
    from waypost.conformance.fuzz import contract

    kit = contract()
    assert sorted(set(doc["paths"]) - set(kit["paths"])) == [
        "/_test/clock", "/_test/faults", "/_test/restart"]
    assert kit_document(doc) == kit, "stale kit document: run python tools/kit_openapi.py"
    assert KIT_DOCUMENT.read_text(encoding="utf-8") == render()


def test_the_kits_document_is_valid_and_links_its_operations() -> None:
    from waypost.conformance.fuzz import contract

    kit = contract()
    validate(kit)
    ids = {op["operationId"] for item in kit["paths"].values() for op in item.values()}
    links = [link for item in kit["paths"].values() for op in item.values()
             for answer in op["responses"].values() for link in answer.get("links", {}).values()]
    assert len(links) >= 20
    assert {link["operationId"] for link in links} <= ids


def test_text_limits_are_bytes_the_schema_never_overstates(doc: Doc) -> None:
    """maxLength counts characters: every text's maxLength is at most a quarter of its byte
    limit (a character is at most 4 bytes of UTF-8), which x-waypost-max-bytes states."""
    texts = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "x-waypost-max-bytes" in node and node.get("type") == "string":
                texts.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(doc)
    assert len(texts) >= 8
    assert all(t["maxLength"] * 4 <= t["x-waypost-max-bytes"] for t in texts), texts
    subject = doc["components"]["schemas"]["MessageSendRequest"]["properties"]["subject"]
    assert subject["x-waypost-max-bytes"] == 256


def test_metadata_integers_past_the_safe_range_are_refused_as_the_document_says(
        api: Api, doc: Doc) -> None:
    value = doc["components"]["schemas"]["JsonValue"]["anyOf"][1]
    assert (value["type"], value["minimum"], value["maximum"]) == (
        "integer", -(2**53 - 1), 2**53 - 1)

    def send(metadata: bytes) -> httpx.Response:
        body = (b'{"request_id": "%s", "thread": {"new": true}, "kind": "info", '
                b'"subject": "s", "body": {"text": ""}, "metadata": ' % rid().encode()
                + metadata + b"}")
        return api.client.post("/v1/messages", content=body, headers={
            "Authorization": f"Bearer {api.tokens['s1/alice']}",
            "Content-Type": "application/json"})
    for fine in (b'{"n": 9007199254740991}', b'{"n": -9007199254740991}', b'{"n": 1.5}',
                 b'{"n": 1e+21}'):
        assert send(fine).status_code == 201, fine
    for raw in (b'{"n": 9007199254740992}', b'{"n": [-9007199254740992]}'):
        refused = send(raw)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["details"]["field"] == "metadata"


@pytest.mark.parametrize(("path", "valid"), [
    ("a", True), ("a/b.txt", True), ("...", True), (".a/..b", True), ("é/x\x7f", True),
    ("./a", False), ("a/.", False), ("a/../b", False), ("a//b", False), ("/a", False),
    ("a/", False), ("a\\b", False), ("a\x01", False)])
def test_the_path_pattern_is_the_reference_path_rule(doc: Doc, path: str, valid: bool) -> None:
    from waypost.reference.domain import values
    from waypost.reference.domain.errors import InvalidRequest

    schema = doc["components"]["schemas"]["PublishRequest"]["oneOf"][0]
    item = schema["properties"]["items"]["items"]["properties"]["path"]
    assert (errors_of(doc, item, path) == []) is valid
    try:
        values.relative_path(path, "path")
        accepted = True
    except InvalidRequest:
        accepted = False
    assert accepted is valid
