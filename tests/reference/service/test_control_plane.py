"""The control plane (protocol.md §6): every operation, its replay, conflict and errors."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api, must_fail, rid


def test_admin_requests_need_the_admin_token(api: Api) -> None:
    body = {"request_id": rid(), "actor_id": "x", "kind": "agent", "display_name": "X"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"},
                    {"Authorization": f"Bearer {api.tokens['s1/alice']}"}):
        response = api.client.post("/admin/v1/spaces/s1/actors", json=body, headers=headers)
        must_fail(response, 401, "UNAUTHENTICATED")


def test_create_space_makes_the_default_actor_and_replays(api: Api) -> None:
    body = {"request_id": "space-x", "space_id": "sx", "display_name": "X",
            "source_uri": "https://example.test/x",
            "default_actor": {"actor_id": "boss", "kind": "human", "display_name": "Boss"}}
    first = api.admin("POST", "/admin/v1/spaces", body)
    assert first.status_code == 201
    assert first.json() == {"space_id": "sx", "default_actor_id": "boss"}
    assert "Waypost-Replayed" not in first.headers
    again = api.admin("POST", "/admin/v1/spaces", body)
    assert (again.status_code, again.json()) == (201, first.json())
    assert again.headers["Waypost-Replayed"] == "true"
    altered = api.admin("POST", "/admin/v1/spaces", {**body, "display_name": "Y"})
    must_fail(altered, 409, "IDEMPOTENCY_CONFLICT", "request_id")
    detail = api.admin("GET", "/admin/v1/spaces/sx").json()
    assert detail["display_name"] == "X"
    assert [a["actor_id"] for a in detail["actors"]] == ["boss"]


def test_space_ids_and_source_uris_are_unique(api: Api) -> None:
    body = {"request_id": rid(), "space_id": "s1", "display_name": "again",
            "source_uri": "https://example.test/other",
            "default_actor": {"actor_id": "a", "kind": "agent", "display_name": "A"}}
    must_fail(api.admin("POST", "/admin/v1/spaces", body), 400, "INVALID_REQUEST", "space_id")
    body = {**body, "request_id": rid(), "space_id": "new", "source_uri": "https://example.test/s1"}
    must_fail(api.admin("POST", "/admin/v1/spaces", body), 400, "INVALID_REQUEST", "source_uri")
    assert api.admin("GET", "/admin/v1/spaces/new").status_code == 404


@pytest.mark.parametrize(("body", "field"), [
    ({"space_id": "ok"}, "request_id"),
    ({"request_id": "r", "space_id": "bad id", "display_name": "d", "source_uri": "u",
      "default_actor": {"actor_id": "a", "kind": "agent", "display_name": "A"}}, "space_id"),
    ({"request_id": "r", "space_id": "ok", "display_name": "d", "source_uri": "u",
      "default_actor": {"actor_id": "a", "kind": "robot", "display_name": "A"}},
     "default_actor.kind"),
    ({"request_id": "r", "space_id": "ok", "display_name": "d", "source_uri": "u", "typo": 1,
      "default_actor": {"actor_id": "a", "kind": "agent", "display_name": "A"}}, "typo"),
])
def test_bad_space_bodies_name_their_field(api: Api, body: dict[str, Any], field: str) -> None:
    must_fail(api.admin("POST", "/admin/v1/spaces", body), 400, "INVALID_REQUEST", field)


def test_malformed_json_is_invalid_request(api: Api) -> None:
    for raw in (b"{", b"[1,", b"", b"\xff", b'{"a":1,"a":2}', b"NaN"):
        response = api.client.post("/admin/v1/spaces", content=raw,
                                   headers={"Authorization": "Bearer test-admin-token"})
        must_fail(response, 400, "INVALID_REQUEST", "body")


def test_actor_creation_errors(api: Api) -> None:
    body = {"request_id": rid(), "actor_id": "bob", "kind": "agent", "display_name": "Bob"}
    must_fail(api.admin("POST", "/admin/v1/spaces/s1/actors", body), 400, "INVALID_REQUEST",
           "actor_id")
    body = {**body, "request_id": rid(), "actor_id": "zed"}
    must_fail(api.admin("POST", "/admin/v1/spaces/nope/actors", body), 404, "NOT_FOUND", "space_id")


def test_disable_actor_bumps_its_authority_version(api: Api) -> None:
    body = {"request_id": rid()}
    result = api.must_admin("POST", "/admin/v1/spaces/s1/actors/carol/disable", body)
    assert result == {"space_id": "s1", "actor_id": "carol", "disabled": True,
                      "authority_version": 2}
    replay = api.admin("POST", "/admin/v1/spaces/s1/actors/carol/disable", body)
    assert replay.json() == result
    assert replay.headers["Waypost-Replayed"] == "true"
    must_fail(api.admin("POST", "/admin/v1/spaces/s1/actors/nobody/disable", {"request_id": rid()}),
           404, "NOT_FOUND", "actor_id")


def test_consumers_views_and_filters(api: Api) -> None:
    created = api.consumer("s1", "bob", "bob-log", "space_log",
                           {"producer_ids": ["alice", "alice"], "item_types": ["message"]})
    assert created == {"consumer_id": "bob-log", "actor_id": "bob", "view": "space_log",
                       "view_revision": 1}
    changed = api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-log/view",
                             {"request_id": rid(), "view": "inbox"})
    assert changed["view_revision"] == 2
    assert changed["view"] == "inbox"
    listed = api.admin("GET", "/admin/v1/spaces/s1").json()["consumers"]
    assert {c["consumer_id"]: c["filter"] for c in listed}["bob-log"] == {}
    bad = api.admin("POST", "/admin/v1/spaces/s1/consumers",
                    {"request_id": rid(), "consumer_id": "c", "actor_id": "bob", "view": "inbox",
                     "filter": {"item_types": ["letter"]}})
    must_fail(bad, 400, "INVALID_REQUEST", "filter.item_types[0]")
    bad = api.admin("POST", "/admin/v1/spaces/s1/consumers",
                    {"request_id": rid(), "consumer_id": "c", "actor_id": "ghost", "view": "inbox"})
    must_fail(bad, 404, "NOT_FOUND", "actor_id")
    must_fail(api.admin("POST", "/admin/v1/spaces/s1/consumers/none/view",
                     {"request_id": rid(), "view": "inbox"}), 404, "NOT_FOUND", "consumer_id")


def test_tokens_return_the_secret_once_and_store_only_its_digest(api: Api, data_dir: Any) -> None:
    body = {"request_id": "tok-1", "actor_id": "bob", "consumer_id": "bob-inbox",
            "scopes": ["message.read", "message.send", "message.read"],
            "recipients": {"mode": "listed", "actor_ids": ["carol", "alice"]},
            "collections": [], "blob_references": [], "expires_at": "2099-01-01T00:00:00Z"}
    first = api.must_admin("POST", "/admin/v1/spaces/s1/tokens", body)
    assert first["token"].startswith(first["token_id"] + ".")
    assert first["expires_at"] == "2099-01-01T00:00:00.000Z"
    replay = api.admin("POST", "/admin/v1/spaces/s1/tokens", body)
    assert replay.headers["Waypost-Replayed"] == "true"
    assert replay.json() == {**first, "token": None}
    reordered = {**body, "scopes": ["message.send", "message.read"],
                 "recipients": {"mode": "listed", "actor_ids": ["alice", "carol"]}}
    assert api.admin("POST", "/admin/v1/spaces/s1/tokens", reordered).json() == replay.json()
    raw = (data_dir / "waypost.sqlite3").read_bytes()
    assert first["token"].split(".")[1].encode() not in raw


def test_same_grants_give_the_same_grant_fingerprint(api: Api) -> None:
    one = api.token("s1", "bob", "bob-inbox", name="b1", scopes=["message.read"])
    two = api.token("s1", "bob", "bob-inbox", name="b2", scopes=["message.read"])
    other = api.token("s1", "bob", "bob-inbox", name="b3", scopes=["message.send"])
    assert one["token_id"] != two["token_id"]
    assert one["grant_fingerprint"] == two["grant_fingerprint"] != other["grant_fingerprint"]


@pytest.mark.parametrize(("change", "status", "field"), [
    ({"actor_id": "ghost"}, 404, "actor_id"),
    ({"consumer_id": "ghost"}, 404, "consumer_id"),
    ({"consumer_id": "alice-inbox"}, 400, "consumer_id"),
    ({"recipients": {"mode": "listed", "actor_ids": ["dave"]}}, 404, "recipients.actor_ids"),
    ({"recipients": {"mode": "listed"}}, 400, "recipients.actor_ids"),
    ({"recipients": {"mode": "any", "actor_ids": []}}, 400, "recipients.actor_ids"),
    ({"collections": [{"collection_id": "none", "actions": ["read"]}]}, 404, "collections"),
    ({"collections": [{"collection_id": "c", "actions": []}]}, 400, "collections[0].actions"),
    ({"blob_references": ["blb_x"]}, 404, "blob_references"),
    ({"scopes": ["root"]}, 400, "scopes[0]"),
    ({"expires_at": "soon"}, 400, "expires_at"),
])
def test_token_errors(api: Api, change: dict[str, Any], status: int, field: str) -> None:
    body = {"request_id": rid(), "actor_id": "bob", "consumer_id": "bob-inbox",
            "scopes": [], "recipients": {"mode": "any"}, "collections": [],
            "blob_references": [], **change}
    response = api.admin("POST", "/admin/v1/spaces/s1/tokens", body)
    must_fail(response, status, "NOT_FOUND" if status == 404 else "INVALID_REQUEST", field)


def test_collections_and_collection_grants(api: Api) -> None:
    made = api.must_admin("POST", "/admin/v1/spaces/s1/collections",
                          {"request_id": rid(), "collection_id": "notes",
                           "source_actor_id": "alice", "scope": "project notes"})
    assert made == {"collection_id": "notes", "source_actor_id": "alice",
                    "scope": "project notes", "current_revision": 0}
    api.token("s1", "bob", "bob-inbox", name="reader",
              collections=[{"collection_id": "notes", "actions": ["read", "read"]}])
    again = api.admin("POST", "/admin/v1/spaces/s1/collections",
                      {"request_id": rid(), "collection_id": "notes",
                       "source_actor_id": "alice", "scope": "x"})
    must_fail(again, 400, "INVALID_REQUEST", "collection_id")


def test_revoke_is_idempotent_and_unknown_tokens_are_not_found(api: Api) -> None:
    issued = api.token("s1", "bob", "bob-inbox", name="temp")
    path = f"/admin/v1/tokens/{issued['token_id']}/revoke"
    assert api.must_admin("POST", path, {"request_id": rid()}) == {
        "token_id": issued["token_id"], "revoked": True}
    assert api.must_admin("POST", path, {"request_id": rid()})["revoked"] is True
    must_fail(api.admin("POST", "/admin/v1/tokens/tok_none/revoke", {"request_id": rid()}),
           404, "NOT_FOUND", "token_id")


def test_thread_members_are_added_by_the_control_plane(api: Api) -> None:
    thread = api.must_send("s1/alice", recipient_ids=["bob"])["thread_id"]
    path = f"/admin/v1/spaces/s1/threads/{thread}/members"
    added = api.must_admin("POST", path, {"request_id": rid(), "actor_ids": ["carol", "carol"]})
    assert added == {"space_id": "s1", "thread_id": thread,
                     "member_ids": ["alice", "bob", "carol"]}
    must_fail(api.admin("POST", path, {"request_id": rid(), "actor_ids": ["dave"]}),
           404, "NOT_FOUND", "actor_ids")
    must_fail(api.admin("POST", "/admin/v1/spaces/s1/threads/thr_none/members",
                     {"request_id": rid(), "actor_ids": ["bob"]}), 404, "NOT_FOUND", "thread_id")


def test_listings_show_no_secrets(api: Api) -> None:
    spaces = api.admin("GET", "/admin/v1/spaces").json()["spaces"]
    assert [s["space_id"] for s in spaces] == ["s1", "s2"]
    detail = api.admin("GET", "/admin/v1/spaces/s1").json()
    assert {t["actor_id"] for t in detail["tokens"]} == {"alice", "bob", "carol"}
    text = str(detail)
    for token in api.tokens.values():
        assert token.split(".")[1] not in text
    assert api.admin("GET", "/admin/v1/spaces/none").status_code == 404


WRITES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("/admin/v1/spaces/s1/actors", {"actor_id": "dan", "kind": "human", "display_name": "Dan"},
     {"display_name": "Other"}),
    ("/admin/v1/spaces/s1/actors/bob/disable", {}, {}),
    ("/admin/v1/spaces/s1/consumers", {"consumer_id": "c9", "actor_id": "bob", "view": "inbox"},
     {"view": "space_log"}),
    ("/admin/v1/spaces/s1/consumers/bob-inbox/view", {"view": "space_log"}, {"view": "inbox"}),
    ("/admin/v1/spaces/s1/collections", {"collection_id": "k", "source_actor_id": "bob",
                                          "scope": "x"}, {"scope": "y"}),
    ("/admin/v1/spaces/s1/tokens", {"actor_id": "bob", "consumer_id": "bob-inbox",
                                     "scopes": ["message.read"], "recipients": {"mode": "any"},
                                     "collections": [], "blob_references": []}, {"scopes": []}),
]


@pytest.mark.parametrize(("path", "body", "change"), WRITES, ids=[w[0] for w in WRITES])
def test_every_control_plane_write_replays_and_conflicts(api: Api, path: str,
                                                         body: dict[str, Any],
                                                         change: dict[str, Any]) -> None:
    request = {"request_id": rid("admin"), **body}
    first = api.admin("POST", path, request)
    assert first.status_code in (200, 201), first.text
    again = api.admin("POST", path, request)
    assert again.status_code == first.status_code
    assert again.headers["Waypost-Replayed"] == "true"
    expected = {**first.json(), "token": None} if "token" in first.json() else first.json()
    assert again.json() == expected
    if change:  # (disable has no body to change: its key and path are the whole request)
        must_fail(api.admin("POST", path, {**request, **change}), 409, "IDEMPOTENCY_CONFLICT",
               "request_id")


def test_revoke_and_members_replay_and_conflict(api: Api) -> None:
    issued = api.token("s1", "bob", "bob-inbox", name="r")
    path = f"/admin/v1/tokens/{issued['token_id']}/revoke"
    first = api.admin("POST", path, {"request_id": "rev-1"})
    again = api.admin("POST", path, {"request_id": "rev-1"})
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    other = api.token("s1", "bob", "bob-inbox", name="r2")
    must_fail(api.admin("POST", f"/admin/v1/tokens/{other['token_id']}/revoke",
                     {"request_id": "rev-1"}), 409, "IDEMPOTENCY_CONFLICT")
    thread = api.must_send("s1/alice", recipient_ids=["bob"])["thread_id"]
    members = f"/admin/v1/spaces/s1/threads/{thread}/members"
    first = api.admin("POST", members, {"request_id": "mem-1", "actor_ids": ["carol"]})
    again = api.admin("POST", members, {"request_id": "mem-1", "actor_ids": ["carol"]})
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    must_fail(api.admin("POST", members, {"request_id": "mem-1", "actor_ids": ["bob"]}), 409,
           "IDEMPOTENCY_CONFLICT")
