"""Ambiguities a port written from the docs met, as protocol.md now settles them, and the
reference held to each answer (through the in-process app): a token issue naming what is not
there (WP-CTRL-11), numbers beyond a double (WP-VAL-19), receipts and the collection filter
(WP-VIS-2), the failures a key records (WP-IDEM-10, WP-IDEM-11), a ``blob.reference`` grant
(WP-AUTH-15), a write without its scope to an upload it cannot see (WP-AUTH-14) and the
notation of ``details.field`` (WP-ERR-8). The kit's side is ``test_ambiguities_kit.py``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.api import (
    Api,
    content_of,
    item,
    must_fail,
    prepare,
    publish,
    put,
    rid,
    seal,
    sealed_blob,
)

TOKENS = "/admin/v1/spaces/s1/tokens"


def _token(api: Api, **changes: Any) -> Any:
    return api.admin("POST", TOKENS, {
        "request_id": rid(), "actor_id": "alice", "consumer_id": "alice-inbox", "scopes": [],
        "recipients": {"mode": "any"}, "collections": [], "blob_references": [], **changes})


def _token_count(api: Api) -> int:
    return len(api.admin("GET", "/admin/v1/spaces/s1").json()["tokens"])


def test_a_token_issue_names_what_is_not_there(api: Api) -> None:
    before = _token_count(api)
    must_fail(_token(api, actor_id="nobody"), 404, "NOT_FOUND", "actor_id")
    must_fail(_token(api, actor_id="nobody", consumer_id="nobody-inbox"), 404, "NOT_FOUND",
              "actor_id")
    must_fail(_token(api, consumer_id="nobody-inbox"), 404, "NOT_FOUND", "consumer_id")
    must_fail(_token(api, consumer_id="bob-inbox"), 400, "INVALID_REQUEST", "consumer_id")
    must_fail(_token(api, recipients={"mode": "listed", "actor_ids": ["nobody"]}), 404,
              "NOT_FOUND", "recipients.actor_ids")
    must_fail(_token(api, collections=[{"collection_id": "none", "actions": ["read"]}]), 404,
              "NOT_FOUND", "collections")
    assert _token_count(api) == before


def _raw(api: Api, who: str, path: str, body: bytes) -> Any:
    return api.client.post(path, content=body, headers={
        "Authorization": f"Bearer {api.tokens[who]}", "Content-Type": "application/json"})


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1" + b"0" * 400])
def test_a_number_beyond_a_double_is_judged_as_its_members_value(mem: Api, number: bytes) -> None:
    revision = _raw(mem, "writer", "/v1/collections/notes/revisions", b'{"request_id": "'
                    + rid().encode() + b'", "expected_revision": ' + number
                    + b', "mode": "delta", "items": []}')
    must_fail(revision, 400, "INVALID_REQUEST", "expected_revision")
    size = _raw(mem, "s1/alice", "/v1/blobs", b'{"request_id": "' + rid().encode()
                + b'", "size": ' + number + b', "sha256": "' + b"0" * 64
                + b'", "content_type": "text/plain"}')
    if number.isdigit():
        must_fail(size, 413, "RESOURCE_LIMIT", "size")
    else:
        must_fail(size, 400, "INVALID_REQUEST", "size")
    metadata = _raw(mem, "s1/alice", "/v1/messages", b'{"request_id": "' + rid().encode()
                    + b'", "thread": {"new": true}, "kind": "info", "subject": "s", '
                    b'"body": {"text": "t"}, "metadata": {"n": [' + number + b"]}}")
    must_fail(metadata, 400, "INVALID_REQUEST", "metadata")


def test_a_receipt_about_a_revision_matches_no_collection_filter(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"x")
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    (revision,) = [i for i in mem.all_items("reader") if i["type"] == "memory_revision"]
    ack = mem.as_("reader", "POST", "/v1/acks", {"request_id": rid(), "items": [
        {"item_id": revision["item_id"], "stage": "received"}]})
    assert ack.status_code == 200, ack.text
    receipts = [i for i in mem.all_items("writer") if i["type"] == "receipt"]
    assert [r["receipt"]["subject_resource_id"] for r in receipts] == ["notes"]
    mem.consumer("s1", "alice", "notes-only", "space_log", {"collection_ids": ["notes"]})
    mem.token("s1", "alice", "notes-only", name="notes-only", collections=[
        {"collection_id": "notes", "actions": ["read"]}])
    assert [i["item_id"] for i in mem.all_items("notes-only")] == [revision["item_id"]]


def _lookup(api: Api, who: str, operation: str, request_id: str) -> Any:
    return api.as_(who, "GET", f"/v1/submissions/{operation}/{request_id}")


def test_not_ready_is_never_the_keys_result(api: Api) -> None:
    slot = prepare(api, "s1/alice", b"late")
    key = rid("seal")
    must_fail(seal(api, "s1/alice", slot["upload_id"], key), 409, "NOT_READY")
    must_fail(_lookup(api, "s1/alice", "blob.commit", key), 404, "NOT_FOUND")
    assert put(api, "s1/alice", slot["upload_id"], b"late").status_code == 200
    sealed = seal(api, "s1/alice", slot["upload_id"], key)
    assert sealed.status_code == 200
    assert "waypost-replayed" not in sealed.headers
    assert seal(api, "s1/alice", slot["upload_id"], key).headers["waypost-replayed"] == "true"


def test_refused_sends_are_never_the_keys_result(api: Api) -> None:
    body = {"request_id": rid("send"), "recipient_ids": ["zed"], "thread": {"new": True},
            "kind": "info", "subject": "s", "body": {"text": "t"}}
    must_fail(api.as_("s1/alice", "POST", "/v1/messages", body), 404, "NOT_FOUND",
              "recipient_ids")
    must_fail(_lookup(api, "s1/alice", "message.send", body["request_id"]), 404, "NOT_FOUND")
    api.must_admin("POST", "/admin/v1/spaces/s1/actors", {
        "request_id": rid(), "actor_id": "zed", "kind": "agent", "display_name": "zed"})
    sent = api.as_("s1/alice", "POST", "/v1/messages", body)
    assert sent.status_code == 201
    assert "waypost-replayed" not in sent.headers
    slot = prepare(api, "s1/alice", b"att")
    attaching = {**body, "request_id": rid("send"), "recipient_ids": ["bob"],
                 "attachment_ids": [slot["blob_id"]]}
    must_fail(api.as_("s1/alice", "POST", "/v1/messages", attaching), 422, "REFERENCE_INVALID")
    put(api, "s1/alice", slot["upload_id"], b"att")
    assert seal(api, "s1/alice", slot["upload_id"]).status_code == 200
    assert api.as_("s1/alice", "POST", "/v1/messages", attaching).status_code == 201
    api.token("s1", "alice", "alice-inbox", name="mute", scopes=["message.read"])
    forbidden = {**body, "request_id": rid("send"), "recipient_ids": ["bob"]}
    must_fail(api.as_("mute", "POST", "/v1/messages", forbidden), 403, "FORBIDDEN")
    assert api.as_("s1/alice", "POST", "/v1/messages", forbidden).status_code == 201


def test_a_listed_blob_needs_no_blob_reference_scope(api: Api) -> None:
    blob = sealed_blob(api, "s1/alice", b"listed")
    api.token("s1", "bob", "bob-inbox", name="listed", scopes=["message.send", "message.read"],
              blob_references=[blob])
    api.token("s1", "carol", "carol-inbox", name="scoped", scopes=[
        "message.send", "message.read", "blob.reference"])
    must_fail(api.as_("scoped", "GET", f"/v1/blobs/{blob}"), 404, "NOT_FOUND")
    must_fail(api.send("scoped", recipient_ids=["alice"], attachment_ids=[blob]), 422,
              "REFERENCE_INVALID")
    assert api.as_("listed", "GET", f"/v1/blobs/{blob}").status_code == 200
    assert content_of(api, "listed", blob).content == b"listed"
    assert api.send("listed", recipient_ids=["carol"], attachment_ids=[blob]).status_code == 201


def test_a_write_without_its_scope_is_403_whatever_the_upload(api: Api) -> None:
    slot = prepare(api, "s1/alice", b"mine")
    api.token("s1", "bob", "bob-inbox", name="bob-unscoped", scopes=["message.read"])
    api.token("s1", "alice", "alice-inbox", name="alice-unscoped", scopes=["message.read"])
    answers = []
    for who, upload in (("bob-unscoped", slot["upload_id"]), ("bob-unscoped", "upl_nothing"),
                        ("alice-unscoped", slot["upload_id"])):
        stored = put(api, who, upload, b"mine")
        committed = seal(api, who, upload)
        answers += [(stored.status_code, stored.json()), (committed.status_code,
                                                          committed.json())]
    assert {json.dumps(answer) for answer in answers} == {json.dumps(answers[0])}
    assert answers[0][0] == 403


FIELDS = [
    ("recipient_ids", {"recipient_ids": []}),
    ("body.options[1]", {"body": {"text": "t", "options": ["a", ""]}}),
    ("thread.thread_id", {"thread": {"thread_id": "a b"}}),
]


@pytest.mark.parametrize(("field", "changes"), FIELDS, ids=[f for f, _ in FIELDS])
def test_details_field_of_a_send(api: Api, field: str, changes: dict[str, Any]) -> None:
    must_fail(api.send("s1/alice", **changes), 400, "INVALID_REQUEST", field)


def test_details_field_in_arrays(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"f")
    good = item("g", blob)
    for field, items, extra in (
            ("items[0].extra", [{**good, "extra": 1}], {}),
            ("items[1].path", [good, item("h", blob, "a//b")], {}),
            ("items", [good, {**good, "path": "h.md"}], {}),
            ("delete_ids[1]", [], {"delete_ids": ["g", "a b"]}),
            ("items", [item(f"i{n}", blob) for n in range(1001)], {})):
        answer = publish(mem, 0, items=items, **extra)
        assert answer.json()["error"]["details"]["field"] == field, answer.text
    sent = mem.must_send("s1/alice", recipient_ids=["bob"])
    ack = mem.as_("s1/bob", "POST", "/v1/acks", {"request_id": rid(), "items": [
        {"item_id": sent["feed_item_id"], "stage": "received"},
        {"item_id": "fi_nothing", "stage": "received"}]})
    must_fail(ack, 404, "NOT_FOUND", "items[1].item_id")
    must_fail(mem.send("s1/alice", attachment_ids=[blob, blob]), 400, "INVALID_REQUEST",
              "attachment_ids")
    must_fail(_token(mem, collections=[{"collection_id": "notes", "actions": ["fly"]}]), 400,
              "INVALID_REQUEST", "collections[0].actions[0]")
