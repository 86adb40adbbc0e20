"""The served OpenAPI document: it covers every route, is valid, and real answers conform to it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from starlette.testclient import TestClient

from tests.conftest import Api, rid
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


def conforms(doc: Doc, method: str, path: str, response: httpx.Response) -> Any:
    """Assert the answer's status is documented for the operation and its JSON fits the schema
    (and that a replay header is one the document declares); return the JSON."""
    responses = doc["paths"][path][method]["responses"]
    status = str(response.status_code)
    assert status in responses, f"{method.upper()} {path}: {status} undocumented: {response.text}"
    body = response.json()
    schema = responses[status]["content"]["application/json"]["schema"]
    assert errors_of(doc, schema, body) == [], body
    if "waypost-replayed" in response.headers:
        assert "Waypost-Replayed" in responses[status].get("headers", {})
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
                  else [{"adminBearer": []}] if path.startswith("/admin/")
                  else [{"bearerAuth": []}])
        assert op["security"] == wanted, (method, path)
        for status, answer in op["responses"].items():
            if int(status) >= 400:
                assert answer["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"}, (method, path, status)
        if method == "post":
            success = next(a for s, a in op["responses"].items() if int(s) < 300)
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
    try:
        from openapi_spec_validator import validate  # type: ignore[import-not-found]
    except ImportError:  # not installed here: check the JSON Schema parts below
        pass
    else:
        validate(doc)
    schemas = doc["components"]["schemas"]
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    for method, path, op in operations(doc):
        inline = [p["schema"] for p in op.get("parameters", [])]
        inline += [a["content"]["application/json"]["schema"] for a in op["responses"].values()]
        if "requestBody" in op:
            inline.append(request_schema(doc, method, path))
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
