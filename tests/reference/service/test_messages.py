"""``message.send`` and the message read (protocol.md §5, §8; P01, P03, P05)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api import Api, must_fail, rid


def test_send_answers_ids_sequence_and_time(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    assert set(sent) == {"message_id", "thread_id", "feed_item_id", "sequence", "committed_at"}
    assert sent["message_id"].startswith("msg_")
    assert sent["thread_id"].startswith("thr_")
    assert sent["feed_item_id"].startswith("fi_")
    assert isinstance(sent["sequence"], str)
    assert int(sent["sequence"]) >= 1
    assert sent["committed_at"].endswith("Z")


def test_omitted_recipients_mean_the_default_actor(api: Api) -> None:
    sent = api.must_send("s1/bob")
    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["recipient_ids"] == ["alice"]
    assert [i["item_id"] for i in api.all_items("s1/alice")] == [sent["feed_item_id"]]


def test_the_full_message_comes_back(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["carol", "bob", "bob"], kind="question",
                         subject="Lunch?", body={"text": "at noon", "options": ["yes", "no"],
                                                 "source_uri": "https://example.test/q"},
                         metadata={"priority": 2})
    message = api.as_("s1/carol", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message == {
        "message_id": sent["message_id"], "thread_id": sent["thread_id"], "in_reply_to": None,
        "producer_id": "alice", "recipient_ids": ["bob", "carol"], "kind": "question",
        "subject": "Lunch?",
        "body": {"text": "at noon", "options": ["yes", "no"],
                 "source_uri": "https://example.test/q"},
        "attachment_ids": [], "metadata": {"priority": 2}, "committed_at": sent["committed_at"],
        "feed_item_id": sent["feed_item_id"], "sequence": sent["sequence"]}


def test_replay_returns_the_same_result_and_creates_nothing(api: Api) -> None:
    body = {"request_id": "same", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "once", "body": {"text": "x"}}
    first = api.as_("s1/alice", "POST", "/v1/messages", body)
    again = api.as_("s1/alice", "POST", "/v1/messages",
                    {**body, "recipient_ids": ["bob", "bob"]})
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    assert again.headers["Waypost-Replayed"] == "true"
    assert len(api.all_items("s1/bob")) == 1


@pytest.mark.parametrize("change", [
    {"subject": "other"}, {"recipient_ids": ["carol"]}, {"body": {"text": "x", "options": []}},
    {"metadata": {}}, {"kind": "result"},
])
def test_a_different_request_under_one_key_conflicts(api: Api, change: dict[str, Any]) -> None:
    body = {"request_id": rid(), "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "once", "body": {"text": "x"}}
    assert api.as_("s1/alice", "POST", "/v1/messages", body).status_code == 201
    conflict = api.as_("s1/alice", "POST", "/v1/messages", {**body, **change})
    must_fail(conflict, 409, "IDEMPOTENCY_CONFLICT", "request_id")
    assert len(api.all_items("s1/bob")) == 1


def test_omitted_recipients_are_not_the_same_request_as_explicit_ones(api: Api) -> None:
    body = {"request_id": rid(), "thread": {"new": True}, "kind": "info", "subject": "s",
            "body": {"text": "x"}}
    assert api.as_("s1/bob", "POST", "/v1/messages", body).status_code == 201
    explicit = api.as_("s1/bob", "POST", "/v1/messages", {**body, "recipient_ids": ["alice"]})
    must_fail(explicit, 409, "IDEMPOTENCY_CONFLICT")


def test_keys_belong_to_their_producer(api: Api) -> None:
    body = {"request_id": "shared", "thread": {"new": True}, "kind": "info", "subject": "s",
            "body": {"text": "x"}, "recipient_ids": ["carol"]}
    one = api.as_("s1/alice", "POST", "/v1/messages", body).json()
    two = api.as_("s1/bob", "POST", "/v1/messages", body).json()
    assert one["message_id"] != two["message_id"]


def test_replies_stay_in_their_thread(api: Api) -> None:
    first = api.must_send("s1/alice", recipient_ids=["bob"])
    reply = api.must_send("s1/bob", recipient_ids=["alice"],
                          thread={"thread_id": first["thread_id"]},
                          in_reply_to=first["message_id"])
    assert reply["thread_id"] == first["thread_id"]
    message = api.as_("s1/alice", "GET", f"/v1/messages/{reply['message_id']}").json()
    assert message["in_reply_to"] == first["message_id"]


def test_thread_membership_rules(api: Api) -> None:
    first = api.must_send("s1/alice", recipient_ids=["bob"])
    thread = {"thread_id": first["thread_id"]}
    must_fail(api.send("s1/carol", recipient_ids=["alice"], thread=thread), 404, "NOT_FOUND",
           "thread.thread_id")
    must_fail(api.send("s1/bob", recipient_ids=["carol"], thread=thread), 403, "FORBIDDEN",
           "recipient_ids")
    must_fail(api.send("s2/dave", recipient_ids=["erin"], thread=thread), 404, "NOT_FOUND",
           "thread.thread_id")
    must_fail(api.send("s1/bob", thread={"thread_id": "thr_missing"}), 404, "NOT_FOUND",
           "thread.thread_id")
    api.must_admin("POST", f"/admin/v1/spaces/s1/threads/{first['thread_id']}/members",
                   {"request_id": rid(), "actor_ids": ["carol"]})
    assert api.send("s1/bob", recipient_ids=["carol"], thread=thread).status_code == 201


def test_in_reply_to_must_be_a_readable_message_of_the_thread(api: Api) -> None:
    one = api.must_send("s1/alice", recipient_ids=["bob"])
    other = api.must_send("s1/alice", recipient_ids=["bob"])
    must_fail(api.send("s1/bob", recipient_ids=["alice"], thread={"thread_id": one["thread_id"]},
                    in_reply_to=other["message_id"]), 404, "NOT_FOUND", "in_reply_to")
    must_fail(api.send("s1/bob", in_reply_to=one["message_id"]), 400, "INVALID_REQUEST",
           "in_reply_to")


def test_recipients_must_exist_in_the_space_and_be_granted(api: Api) -> None:
    must_fail(api.send("s1/alice", recipient_ids=["ghost"]), 404, "NOT_FOUND", "recipient_ids")
    must_fail(api.send("s1/alice", recipient_ids=["dave"]), 404, "NOT_FOUND", "recipient_ids")
    api.token("s1", "bob", "bob-inbox", name="narrow",
              recipients={"mode": "listed", "actor_ids": ["alice"]})
    assert api.send("narrow", recipient_ids=["alice"]).status_code == 201
    must_fail(api.send("narrow", recipient_ids=["alice", "carol"]), 403, "FORBIDDEN",
           "recipient_ids")


def test_send_needs_the_send_scope(api: Api) -> None:
    api.token("s1", "bob", "bob-inbox", name="reader", scopes=["message.read"])
    must_fail(api.send("reader", recipient_ids=["alice"]), 403, "FORBIDDEN")


def test_attachments_are_refused_until_sealed_blobs_exist(api: Api) -> None:
    must_fail(api.send("s1/alice", attachment_ids=["blb_x"]), 422, "REFERENCE_INVALID",
           "attachment_ids")


@pytest.mark.parametrize(("change", "field"), [
    ({"subject": ""}, "subject"),
    ({"kind": "poem"}, "kind"),
    ({"thread": {}}, "thread"),
    ({"thread": {"new": False}}, "thread.new"),
    ({"thread": {"new": True, "thread_id": "t"}}, "thread"),
    ({"body": {"text": "x", "extra": 1}}, "body.extra"),
    ({"body": {"text": "x", "options": [""]}}, "body.options[0]"),
    ({"recipient_ids": []}, "recipient_ids"),
    ({"attachment_ids": ["a", "a"]}, "attachment_ids"),
    ({"metadata": []}, "metadata"),
    ({"request_id": "has space"}, "request_id"),
    ({"unknown": True}, "unknown"),
])
def test_bad_send_bodies_are_rejected_before_any_effect(api: Api, change: dict[str, Any],
                                                          field: str) -> None:
    must_fail(api.send("s1/alice", **change), 400, "INVALID_REQUEST", field)
    assert api.all_items("s1/alice") == []


@pytest.mark.parametrize(("change", "field", "limit", "high"), [
    ({"subject": "é" * 129}, "subject", "subject_bytes", 256),
    ({"body": {"text": "x" * (64 * 1024 + 1)}}, "body.text", "body_text_bytes", 65536),
    ({"recipient_ids": [f"a{i}" for i in range(65)]}, "recipient_ids", "recipients", 64),
    ({"attachment_ids": [f"b{i}" for i in range(17)]}, "attachment_ids", "attachments", 16),
    ({"metadata": {"k": "v" * 4096}}, "metadata", "metadata_bytes", 4096),
])
def test_published_limits_answer_resource_limit(api: Api, change: dict[str, Any], field: str,
                                                limit: str, high: int) -> None:
    error = must_fail(api.send("s1/alice", **change), 413, "RESOURCE_LIMIT", field)
    assert error["details"]["limit"] == limit
    assert error["details"]["max"] == high
    assert api.client.get("/v1/describe").json()["limits"][limit] == high
    assert api.all_items("s1/alice") == []


def test_readers_are_producer_recipients_and_observers(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    path = f"/v1/messages/{sent['message_id']}"
    assert api.as_("s1/alice", "GET", path).status_code == 200
    assert api.as_("s1/bob", "GET", path).status_code == 200
    api.token("s1", "carol", "carol-inbox", name="carol-narrow", scopes=["message.read"])
    must_fail(api.as_("carol-narrow", "GET", path), 404, "NOT_FOUND")
    api.token("s1", "carol", "carol-inbox", name="observer",
              scopes=["message.read", "space.observe"])
    assert api.as_("observer", "GET", path).status_code == 200
    api.token("s1", "bob", "bob-inbox", name="bob-blind", scopes=["message.send"])
    must_fail(api.as_("bob-blind", "GET", path), 403, "FORBIDDEN")


def test_foreign_invisible_and_missing_messages_answer_identically(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    api.token("s1", "carol", "carol-inbox", name="carol-reader", scopes=["message.read"])
    answers = [
        api.as_("s2/dave", "GET", f"/v1/messages/{sent['message_id']}"),
        api.as_("carol-reader", "GET", f"/v1/messages/{sent['message_id']}"),
        api.as_("s2/dave", "GET", "/v1/messages/msg_doesnotexist"),
    ]
    assert {(a.status_code, a.text) for a in answers} == {(answers[0].status_code,
                                                           answers[0].text)}
    assert answers[0].status_code == 404
