"""Current authority (P02): revoked, expired and disabled credentials stop working at once,
also for a send that starts from a token checked before (its plan's guard decides)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.api import NOTES, Api, item, must_fail, prepare, put, rid
from waypost.reference.server import served_context


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_no_or_malformed_credentials(api: Api) -> None:
    for header in ({}, {"Authorization": "Bearer"}, {"Authorization": "Bearer x.y"},
                   {"Authorization": "Bearer tok_abc.AAAAAAAAAAAAAAAAAAAAAAAA"},
                   {"Authorization": api.tokens["s1/bob"]}):
        must_fail(api.client.get("/v1/feed", headers=header), 401, "UNAUTHENTICATED")
    wrong_secret = api.tokens["s1/bob"][:-4] + "AAAA"
    must_fail(api.client.get("/v1/feed", headers={"Authorization": f"Bearer {wrong_secret}"}),
           401, "UNAUTHENTICATED")


def test_a_revoked_token_has_no_further_effect(api: Api) -> None:
    issued = api.token("s1", "bob", "bob-inbox", name="soon-revoked")
    assert api.send("soon-revoked", recipient_ids=["alice"]).status_code == 201
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    must_fail(api.send("soon-revoked", recipient_ids=["alice"]), 401, "UNAUTHENTICATED")
    must_fail(api.as_("soon-revoked", "GET", "/v1/feed"), 401, "UNAUTHENTICATED")
    assert len(api.all_items("s1/alice")) == 1
    assert api.send("s1/bob", recipient_ids=["alice"]).status_code == 201


def test_an_expired_token_is_refused(api: Api) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    api.token("s1", "bob", "bob-inbox", name="expired", expires_at=_iso(past))
    must_fail(api.as_("expired", "GET", "/v1/feed"), 401, "UNAUTHENTICATED")
    future = datetime.now(UTC) + timedelta(hours=1)
    api.token("s1", "bob", "bob-inbox", name="valid", expires_at=_iso(future))
    assert api.as_("valid", "GET", "/v1/feed").status_code == 200


def test_a_disabled_actor_can_do_nothing_more(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["carol"])
    api.must_admin("POST", "/admin/v1/spaces/s1/actors/carol/disable", {"request_id": rid()})
    must_fail(api.as_("s1/carol", "GET", "/v1/feed"), 401, "UNAUTHENTICATED")
    must_fail(api.send("s1/carol", recipient_ids=["alice"]), 401, "UNAUTHENTICATED")
    must_fail(api.as_("s1/carol", "POST", "/v1/acks", {
        "request_id": rid(), "items": [{"item_id": sent["feed_item_id"], "stage": "received"}]}),
        401, "UNAUTHENTICATED")
    api.token("s1", "carol", "carol-inbox", name="new-for-disabled")
    must_fail(api.as_("new-for-disabled", "GET", "/v1/feed"), 401, "UNAUTHENTICATED")
    assert api.all_items("s1/alice") == []


def test_submission_lookup_needs_current_authority(api: Api) -> None:
    issued = api.token("s1", "bob", "bob-inbox", name="looker")
    body = {"request_id": "look", "thread": {"new": True}, "kind": "info", "subject": "s",
            "body": {"text": "x"}}
    sent = api.as_("looker", "POST", "/v1/messages", body).json()
    found = api.as_("looker", "GET", "/v1/submissions/message.send/look")
    assert found.status_code == 200
    assert found.json()["state"] == "committed"
    assert found.json()["result"] == {"status": 201, "body": sent}
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    must_fail(api.as_("looker", "GET", "/v1/submissions/message.send/look"), 401, "UNAUTHENTICATED")
    same_actor = api.as_("s1/bob", "GET", "/v1/submissions/message.send/look")
    assert same_actor.json()["result"]["body"] == sent


def _reads_counted(api: Api, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the reads the server's real driver makes from now on."""
    driver = served_context(api.client.app).driver
    counted = [0]
    read = driver.read

    async def counting(statements: Any) -> Any:
        counted[0] += 1
        return await read(statements)
    monkeypatch.setattr(driver, "read", counting)
    return counted


def test_a_send_reads_nothing_before_its_plan_once_its_token_is_known(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = _reads_counted(api, monkeypatch)
    api.must_send("s1/alice", recipient_ids=["bob"])
    assert counted[0] == 1  # the token, checked in full once
    for _ in range(3):
        api.must_send("s1/alice", recipient_ids=["bob"])
    assert counted[0] == 1  # the plan's guard re-checks it inside each send's transaction
    must_fail(api.send("s1/alice", recipient_ids=["nobody"]), 404, "NOT_FOUND", "recipient_ids")
    assert counted[0] == 1  # no control-plane write since its check: the token is as it was
    api.token("s1", "carol", "carol-inbox", name="another")
    assert counted[0] == 1
    must_fail(api.send("s1/alice", recipient_ids=["nobody"]), 404, "NOT_FOUND", "recipient_ids")
    assert counted[0] == 2  # after one, a refusal checks the token in full before it answers


def test_a_known_token_revoked_answers_401_before_any_other_refusal(api: Api) -> None:
    issued = api.token("s1", "bob", "bob-inbox", name="known")
    body = {"request_id": "once", "recipient_ids": ["alice"], "thread": {"new": True},
            "kind": "info", "subject": "s", "body": {"text": "x"}}
    assert api.as_("known", "POST", "/v1/messages", body).status_code == 201
    assert api.as_("known", "POST", "/v1/messages", body).status_code == 201  # a replay
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    must_fail(api.as_("known", "POST", "/v1/messages", body), 401, "UNAUTHENTICATED")
    must_fail(api.as_("known", "POST", "/v1/messages", {**body, "request_id": "new"}), 401,
              "UNAUTHENTICATED")
    must_fail(api.as_("known", "POST", "/v1/messages", {"kind": "nonsense"}), 401,
              "UNAUTHENTICATED")
    must_fail(api.as_("known", "POST", "/v1/messages", {**body, "recipient_ids": ["nobody"]}),
              401, "UNAUTHENTICATED")
    assert len(api.all_items("s1/alice")) == 1


def test_every_write_of_a_known_token_revoked_answers_401_replays_too(mem: Api) -> None:
    """An ACK, a prepare, a PUT, a commit and a publish start from a remembered principal
    too: each checks the token before it writes or replays anything."""
    sent = mem.must_send("s1/bob", recipient_ids=["alice"])
    content = b"entry"
    facts = {"size": len(content), "sha256": hashlib.sha256(content).hexdigest(),
             "content_type": "text/plain"}
    writes = {
        "ack": ("POST", "/v1/acks", {"request_id": "a1", "items": [
            {"item_id": sent["feed_item_id"], "stage": "received"}]}),
        "prepare": ("POST", "/v1/blobs", {"request_id": "p1", **facts}),
    }
    answers = {name: mem.as_("writer", *write) for name, write in writes.items()}
    assert [a.status_code for a in answers.values()] == [200, 201]
    upload_id = answers["prepare"].json()["upload_id"]
    assert put(mem, "writer", upload_id, content).status_code == 200
    writes["commit"] = ("POST", f"/v1/uploads/{upload_id}/commit", {"request_id": "c1"})
    blob_id = mem.as_("writer", *writes["commit"]).json()["blob_id"]
    writes["publish"] = ("POST", f"{NOTES}/revisions", {
        "request_id": "r1", "expected_revision": 0, "mode": "delta",
        "items": [item("a", blob_id)]})
    assert mem.as_("writer", *writes["publish"]).status_code == 201
    second = prepare(mem, "writer", content)
    for name, write in [*writes.items(), ("put", None)]:
        # a token of its own per write (a 401 makes the server forget a token), made known by
        # a replay, then revoked: the next request starts from the remembered principal
        issued = mem.token("s1", "alice", "alice-inbox", name=name, collections=[
            {"collection_id": "notes", "actions": ["read", "write"]}])
        known = mem.as_(name, *(write or writes["prepare"]))
        assert known.headers["waypost-replayed"] == "true"
        mem.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke",
                       {"request_id": rid()})
        refused = put(mem, name, second["upload_id"], content) if write is None else (
            mem.as_(name, *write))
        must_fail(refused, 401, "UNAUTHENTICATED")


def test_a_known_token_stops_when_it_expires_or_its_actor_is_disabled(hooked: Api) -> None:
    api = hooked
    soon = datetime.now(UTC) + timedelta(minutes=5)
    api.token("s1", "bob", "bob-inbox", name="expiring", expires_at=_iso(soon))
    api.must_send("expiring", recipient_ids=["alice"])
    assert api.admin("POST", "/_test/clock", {"advance_ms": 10 * 60 * 1000}).status_code == 200
    must_fail(api.send("expiring", recipient_ids=["alice"]), 401, "UNAUTHENTICATED")
    api.must_send("s1/carol", recipient_ids=["alice"])
    api.must_admin("POST", "/admin/v1/spaces/s1/actors/carol/disable", {"request_id": rid()})
    must_fail(api.send("s1/carol", recipient_ids=["alice"]), 401, "UNAUTHENTICATED")


def test_a_feed_read_of_a_known_token_is_one_read_with_its_own_check(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    api.must_send("s1/alice", recipient_ids=["bob"])
    api.feed("s1/bob")
    counted = _reads_counted(api, monkeypatch)
    page = api.feed("s1/bob")  # the saved checkpoint, the page and the token's check at once
    assert counted[0] == 1
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    read = api.feed("s1/bob", cursor=page["next_cursor"])
    assert counted[0] == 2
    assert [item["item_id"] for item in read["items"]] == [sent["feed_item_id"]]
    api.must_admin("POST", "/admin/v1/spaces/s1/actors/bob/disable", {"request_id": rid()})
    must_fail(api.as_("s1/bob", "GET", "/v1/feed"), 401, "UNAUTHENTICATED")
    must_fail(api.as_("s1/bob", "GET", "/v1/feed", params={"cursor": page["next_cursor"]}),
              401, "UNAUTHENTICATED")


def test_a_cursor_of_a_complete_page_reads_again_only_after_a_write_its_view_may_see(
        api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server knows that nothing of bob's view was committed since his page (docs/spec.md
    "Reads that need no read"): his next poll reads nothing, until a send to him or a
    control-plane write; a send to another does not count."""
    api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/bob")["next_cursor"]
    counted = _reads_counted(api, monkeypatch)

    def poll() -> list[str]:
        nonlocal cursor
        page = api.feed("s1/bob", cursor=cursor)
        cursor = page["next_cursor"]
        return [item["item_id"] for item in page["items"]]
    assert (poll(), poll(), counted[0]) == ([], [], 0)
    api.must_send("s1/alice", recipient_ids=["carol"])  # not bob's
    assert (poll(), counted[0]) == ([], 0)
    to_bob = api.must_send("s1/alice", recipient_ids=["bob"])
    assert (poll(), counted[0]) == ([to_bob["feed_item_id"]], 1)
    assert (poll(), counted[0]) == ([], 1)
    api.must_admin("POST", "/admin/v1/spaces/s1/actors/carol/disable", {"request_id": rid()})
    assert (poll(), counted[0]) == ([], 2)
    assert (poll(), counted[0]) == ([], 2)


def test_a_remembered_principal_follows_its_consumers_new_view(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    old = api.feed("s1/bob")  # bob's principal is remembered with view revision 1
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": rid(), "view": "inbox"})
    fresh = api.feed("s1/bob")  # the new view's page (from position 0), not CURSOR_STALE
    assert [item["item_id"] for item in fresh["items"]] == [sent["feed_item_id"]]
    must_fail(api.as_("s1/bob", "GET", "/v1/feed", params={"cursor": old["next_cursor"]}), 409,
              "CURSOR_STALE", "cursor")
    assert api.as_("s1/bob", "GET", "/v1/feed",
                   params={"cursor": fresh["next_cursor"]}).status_code == 200
    api.must_send("s1/bob", recipient_ids=["alice"])


def test_with_a_fault_armed_a_dead_token_never_reaches_it(hooked: Api) -> None:
    api = hooked
    issued = api.token("s1", "bob", "bob-inbox", name="armed")
    api.must_send("armed", recipient_ids=["alice"])  # remembered
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    assert api.admin("POST", "/_test/faults", {"point": "commit.before", "action": "unavailable",
                                               "times": 1}).status_code == 200
    must_fail(api.send("armed", recipient_ids=["alice"]), 401, "UNAUTHENTICATED")
    must_fail(api.send("s1/bob", recipient_ids=["alice"]), 503, "UNAVAILABLE")  # still armed
