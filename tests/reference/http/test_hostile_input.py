"""Hostile input the reference refuses (issue #13): media types, path aliases, header and path
spellings, test hooks that are off, and JSON routes given another content type."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.support.api import (
    ADMIN_TOKEN,
    NOTES,
    Api,
    content_of,
    entries,
    item,
    must_fail,
    publish,
    put,
    rid,
    seal,
    sealed_blob,
)

EMPTY = hashlib.sha256(b"").hexdigest()


def _prepare(api: Api, content_type: object) -> httpx.Response:
    return api.as_("s1/bob", "POST", "/v1/blobs", {
        "request_id": rid("ct"), "size": 0, "sha256": EMPTY, "content_type": content_type})


@pytest.mark.parametrize("content_type", [
    "text", "text/", "/plain", "text/plain\r\nX-Evil: 1", "text/plain\n", "text/plain\x00",
    "text/plain;\tcharset=utf-8", "text/plaín", " ", " text/plain", "text/plain ",
    "text/plain; charset", "text/plain;", "text/plain; charset=a b", "a/" + "b" * 254, "", 5])
def test_a_content_type_that_is_not_a_media_type_is_refused(api: Api,
                                                            content_type: object) -> None:
    error = must_fail(_prepare(api, content_type), 400, "INVALID_REQUEST", "content_type")
    assert set(error) == {"code", "message", "details"}


@pytest.mark.parametrize("content_type", [
    "application/octet-stream", "text/plain; charset=utf-8", 'text/plain;charset="utf-8"',
    'multipart/form-data; boundary="a b"', "TEXT/Plain", "a/" + "b" * 253])
def test_a_media_type_is_stored_as_given_and_sent_back_as_the_header(
        api: Api, content_type: str) -> None:
    answer = _prepare(api, content_type)
    assert answer.status_code == 201, answer.text
    upload_id = answer.json()["upload_id"]
    assert put(api, "s1/bob", upload_id, b"").status_code == 200
    sealed = seal(api, "s1/bob", upload_id)
    assert sealed.json()["content_type"] == content_type
    assert content_of(api, "s1/bob", sealed.json()["blob_id"]).headers["content-type"] == (
        content_type)


@pytest.mark.parametrize("path", [
    "alias/./x", "./alias/x/.", "a/.", ".", "./a", "a/..", "..", "/a", "a/", "a//b", "a\\b",
    "a\x00b", "a\tb", "a\nb", "a\rb", "a\x01", "a\x1f"])
def test_a_path_with_another_spelling_or_a_control_character_is_refused(mem: Api,
                                                                        path: str) -> None:
    blob_id = sealed_blob(mem, "writer", b"x")
    answer = publish(mem, 0, items=[item("a", blob_id, path)])
    error = must_fail(answer, 400, "INVALID_REQUEST", "items[0].path")
    assert set(error) == {"code", "message", "details"}


def test_a_file_has_one_spelling(mem: Api) -> None:
    blob_id = sealed_blob(mem, "writer", b"x")
    assert publish(mem, 0, items=[item("a", blob_id, "alias/x")]).status_code == 201
    for alias in ("alias/./x", "./alias/x/."):
        must_fail(publish(mem, 1, items=[item("b", blob_id, alias)]), 400, "INVALID_REQUEST",
                  "items[0].path")
    assert publish(mem, 1, items=[item("b", blob_id, "odd\x7fname/ü")]).status_code == 201
    assert [entry["path"] for entry in entries(mem, 2)] == ["alias/x", "odd\x7fname/ü"]


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_name_is_case_insensitive(api: Api, scheme: str) -> None:
    data = api.client.get("/v1/feed", headers={"Authorization": f"{scheme} {api.tokens['s1/bob']}"})
    assert data.status_code == 200, data.text
    admin = api.client.get("/admin/v1/spaces", headers={"Authorization": f"{scheme} {ADMIN_TOKEN}"})
    assert admin.status_code == 200, admin.text
    wrong = api.client.get("/v1/feed", headers={"Authorization": f"{scheme}x {api.tokens['s1/bob']}"})
    must_fail(wrong, 401, "UNAUTHENTICATED")


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/_test/clock"), ("POST", "/_test/clock"), ("GET", "/_test/faults"),
    ("POST", "/_test/faults"), ("DELETE", "/_test/faults"), ("POST", "/_test/restart"),
    ("GET", "/_test/restart"), ("PUT", "/_test/clock")])
def test_test_hooks_that_are_off_answer_like_an_unknown_path(api: Api, method: str,
                                                             path: str) -> None:
    unknown = api.client.request(method, "/_test/nothing-here")
    must_fail(unknown, 404, "NOT_FOUND")
    for token in (None, ADMIN_TOKEN, api.tokens["s1/bob"], "nonsense"):
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        answer = api.client.request(method, path, headers=headers, json={"advance_ms": 1})
        assert (answer.status_code, answer.content) == (unknown.status_code, unknown.content)


@pytest.mark.parametrize("revision", ["abc", "-1", "+1", "01", "1.0", "1e3", "0x1", "１",
                                      "9007199254740992", "9" * 40])
@pytest.mark.parametrize("suffix", ["", "/items"])
def test_a_revision_in_the_path_that_is_not_a_decimal_integer_is_bad_input(
        mem: Api, revision: str, suffix: str) -> None:
    answer = mem.as_("reader", "GET", f"{NOTES}/revisions/{revision}{suffix}")
    must_fail(answer, 400, "INVALID_REQUEST", "revision")


def test_a_revision_above_the_head_is_still_not_found(mem: Api) -> None:
    must_fail(mem.as_("reader", "GET", f"{NOTES}/revisions/9007199254740991"), 404, "NOT_FOUND")
    assert mem.as_("reader", "GET", f"{NOTES}/revisions/0").status_code == 200


def test_submission_lookup_path_values(api: Api) -> None:
    """A malformed request_id is bad input naming it; an unknown operation is 404 as
    protocol.md WP-IDEM-14 requires."""
    must_fail(api.as_("s1/bob", "GET", "/v1/submissions/message.send/a%20b"), 400,
              "INVALID_REQUEST", "request_id")
    must_fail(api.as_("s1/bob", "GET", "/v1/submissions/no.such/r1"), 404, "NOT_FOUND")


BODY = b'{"request_id": "ct-x", "thread": {"new": true}, "kind": "info", "subject": "s", ' \
       b'"body": {"text": "t"}}'


@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "application/xml", "text/json",
    "multipart/form-data; boundary=x", "application/jsonx", ""])
def test_a_json_route_refuses_another_content_type(api: Api, content_type: str) -> None:
    token = api.tokens["s1/alice"]
    answer = api.client.post("/v1/messages", content=BODY, headers={
        "Authorization": f"Bearer {token}", "Content-Type": content_type})
    must_fail(answer, 400, "INVALID_REQUEST", "content-type")
    admin = api.client.post("/admin/v1/spaces", content=b"{}", headers={
        "Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": content_type})
    must_fail(admin, 400, "INVALID_REQUEST", "content-type")
    assert api.all_items("s1/bob") == []


@pytest.mark.parametrize("content_type", [
    None, "application/json", "application/json; charset=utf-8", "Application/JSON ;charset=UTF-8"])
def test_a_json_route_takes_application_json_or_no_content_type(api: Api,
                                                                content_type: str | None) -> None:
    headers = {"Authorization": f"Bearer {api.tokens['s1/alice']}"}
    if content_type is not None:
        headers["Content-Type"] = content_type
    body = BODY.replace(b"ct-x", rid("ct").encode())
    answer = api.client.post("/v1/messages", content=body, headers=headers)
    assert answer.status_code == 201, answer.text


def test_a_content_type_stored_before_the_rule_is_sent_as_octet_stream(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blob sealed by an older server with a content type that is no header value stays
    downloadable."""
    from waypost.reference.service import blobs

    monkeypatch.setattr(blobs.values, "content_type", lambda value, field="content_type": value)
    answer = _prepare(api, "text/plain\r\nX-Evil: 1")
    monkeypatch.undo()
    upload_id = answer.json()["upload_id"]
    assert put(api, "s1/bob", upload_id, b"").status_code == 200
    blob_id = seal(api, "s1/bob", upload_id).json()["blob_id"]
    content = content_of(api, "s1/bob", blob_id)
    assert content.status_code == 200
    assert content.headers["content-type"] == "application/octet-stream"
    assert "x-evil" not in content.headers


@pytest.mark.parametrize("path", ["/v1/describe", "/openapi.json"])
def test_a_route_without_query_parameters_refuses_one(api: Api, path: str) -> None:
    assert api.client.get(path).status_code == 200
    must_fail(api.client.get(path, params={"x": "1"}), 400, "INVALID_REQUEST", "x")


def test_data_and_admin_routes_refuse_unknown_or_repeated_query_parameters(api: Api) -> None:
    must_fail(api.admin("GET", "/admin/v1/spaces?x=1"), 400, "INVALID_REQUEST", "x")
    must_fail(api.admin("GET", "/admin/v1/spaces/s1?limit=2"), 400, "INVALID_REQUEST", "limit")
    must_fail(api.as_("s1/bob", "GET", "/v1/feed?limit=1&limit=2"), 400, "INVALID_REQUEST",
              "limit")
    must_fail(api.as_("s1/bob", "GET", "/v1/feed", params={"after": "1"}), 400,
              "INVALID_REQUEST", "after")
    unknown = api.client.get("/v1/feed?x=1")  # the credential is checked first
    must_fail(unknown, 401, "UNAUTHENTICATED")
    assert api.as_("s1/bob", "GET", "/v1/feed", params={"limit": 1}).status_code == 200
