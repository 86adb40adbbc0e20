"""Submissions (protocol.md §5): lookup, client-computable fingerprints, resume of a pending key."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

from tests.support.api import Api, must_fail
from waypost.reference.server import served_context
from waypost.reference.service.context import Context
from waypost.reference.storage import submissions as sql


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


def _context(api: Api) -> Context:
    ctx: Context = served_context(api.client.app)
    return ctx


def _reserve_ack(api: Api, who: str, body: dict[str, Any], position: int | None) -> None:
    """Leave an ACK key reserved but uncommitted, as a crash after reservation would."""
    from waypost.reference.domain.canonical import digest
    from waypost.reference.domain.requests import parse_ack
    from waypost.reference.storage.tokens import load_token

    ctx = _context(api)
    assert api.client.portal is not None
    state = api.client.portal.call(load_token, ctx.driver, api.tokens[who].split(".")[0])
    assert state is not None
    fingerprint = digest(parse_ack(body, ctx.limits).normalised(position))
    reservation = api.client.portal.call(
        lambda: sql.reserve(ctx.driver, state.principal, ctx.clock.now_ms(), "receipt.ack",
                            body["request_id"], fingerprint, f"sub_{body['request_id']}",
                            state.principal.consumer.consumer_id))
    assert reservation.created


def test_a_pending_ack_is_checked_again_when_retried(api: Api) -> None:
    """An unfinished ACK whose cursor went stale (view changed) must not move the new view's
    checkpoint when retried; its receipts must not land for items now invisible."""
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    page = api.feed("s1/bob")
    body = {"request_id": "pending-ack", "items": [], "checkpoint": {"cursor": page["next_cursor"]}}
    _reserve_ack(api, "s1/bob", body, int(sent["sequence"]))
    api.must_admin("POST", "/admin/v1/spaces/s1/consumers/bob-inbox/view",
                   {"request_id": "view-2", "view": "inbox"})
    must_fail(api.as_("s1/bob", "POST", "/v1/acks", body), 409, "CURSOR_STALE")
    assert [i["item_id"] for i in api.feed("s1/bob")["items"]] == [sent["feed_item_id"]]


def test_a_pending_ack_cannot_be_finished_through_another_consumer(api: Api) -> None:
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    body = {"request_id": "pending-other",
            "items": [{"item_id": sent["feed_item_id"], "stage": "received"}]}
    _reserve_ack(api, "s1/bob", body, None)
    api.consumer("s1", "bob", "bob-second", "inbox")
    api.token("s1", "bob", "bob-second", name="bob-second")
    must_fail(api.as_("bob-second", "POST", "/v1/acks", body), 409, "IDEMPOTENCY_CONFLICT")
    finished = api.as_("s1/bob", "POST", "/v1/acks", body)
    assert finished.status_code == 200
    assert finished.json()["items"][0]["changed"] is True
