"""Submissions (protocol.md §5): lookup, client-computable fingerprints, an ACK's key."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from tests.support.api import Api, must_fail


def test_lookup_returns_state_fingerprint_and_result(api: Api) -> None:
    body = {"request_id": "fp-1", "recipient_ids": ["carol", "bob"], "thread": {"new": True},
            "kind": "info", "subject": "s", "body": {"text": "x", "options": ["a", "b"]}}
    sent = api.as_("s1/alice", "POST", "/v1/messages", body).json()
    found = api.as_("s1/alice", "GET", "/v1/submissions/message.send/fp-1").json()
    normalised: dict[str, Any] = {k: v for k, v in body.items() if k != "request_id"}
    normalised["recipient_ids"] = sorted(normalised["recipient_ids"])
    expected = hashlib.sha256(rfc8785.dumps(normalised)).hexdigest()
    assert found == {"operation": "message.send", "request_id": "fp-1", "state": "committed",
                     "fingerprint": expected, "result": {"status": 201, "body": sent}}


def test_ack_lookup_carries_the_per_item_result(api: Api) -> None:
    item = api.must_send("s1/alice", recipient_ids=["bob"])["feed_item_id"]
    answer = api.as_("s1/bob", "POST", "/v1/acks", {
        "request_id": "ack-look", "items": [{"item_id": item, "stage": "processed"}]}).json()
    found = api.as_("s1/bob", "GET", "/v1/submissions/receipt.ack/ack-look").json()
    assert found["result"] == {"status": 200, "body": answer}
    expected = hashlib.sha256(rfc8785.dumps(
        {"items": [{"item_id": item, "stage": "processed"}]})).hexdigest()
    assert found["fingerprint"] == expected


def test_lookups_see_only_the_callers_own_keys(api: Api) -> None:
    api.must_send("s1/alice", request_id="mine")
    must_fail(api.as_("s1/bob", "GET", "/v1/submissions/message.send/mine"), 404, "NOT_FOUND")
    must_fail(api.as_("s2/dave", "GET", "/v1/submissions/message.send/mine"), 404, "NOT_FOUND")
    must_fail(api.as_("s1/alice", "GET", "/v1/submissions/receipt.ack/mine"), 404, "NOT_FOUND")
    must_fail(api.as_("s1/alice", "GET", "/v1/submissions/nope/mine"), 404, "NOT_FOUND")
    must_fail(api.as_("s1/alice", "GET", "/v1/submissions/message.send/a%20b"), 400,
           "INVALID_REQUEST", "request_id")


def test_an_ack_whose_view_changed_saves_nothing(api: Api) -> None:
    """A cursor of the view before a change: 409 CURSOR_STALE, the key stays free, the new
    view's checkpoint does not move (WP-RCPT-9). Bob's token is remembered from his feed read,
    so the ACK starts from the old principal and its plan finds the view changed."""
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob")
    body = {"request_id": "stale-ack", "items": [], "checkpoint": {"cursor": page["next_cursor"]}}
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": "view-2", "view": "inbox"})
    must_fail(api.as_("s1/bob", "POST", "/v1/acks", body), 409, "CURSOR_STALE", "cursor")
    must_fail(api.as_("s1/bob", "GET", "/v1/submissions/receipt.ack/stale-ack"), 404,
              "NOT_FOUND")
    assert [i["item_id"] for i in api.feed("s1/bob")["items"]] == [sent["feed_item_id"]]


def test_an_ack_key_is_the_actors_whatever_the_consumer(api: Api) -> None:
    """The key belongs to the actor (§5.1): the same ACK through another consumer of the same
    actor replays the first answer and writes nothing; another ACK under it conflicts."""
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    body = {"request_id": "ack-other", "items": [{"item_id": sent["feed_item_id"],
                                                  "stage": "received"}]}
    first = api.as_("s1/bob", "POST", "/v1/acks", body)
    assert first.status_code == 200
    assert first.json()["items"][0]["changed"] is True
    api.consumer("s1", "bob", "bob-second", "inbox")
    api.token("s1", "bob", "bob-second", name="bob-second")
    again = api.as_("bob-second", "POST", "/v1/acks", body)
    assert (again.status_code, again.json()) == (200, first.json())
    assert again.headers["waypost-replayed"] == "true"
    body["items"][0]["stage"] = "processed"
    must_fail(api.as_("bob-second", "POST", "/v1/acks", body), 409, "IDEMPOTENCY_CONFLICT",
              "request_id")
    receipts = [i for i in api.all_items("s1/alice") if i["type"] == "receipt"]
    assert len(receipts) == 1
