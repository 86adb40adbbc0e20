"""Reads that need no read (docs/spec.md): a cursor of a complete page carries the server's
claim that nothing of its token's view followed it; the claim never outlives a commit its view
may see, the token's authority, or the token itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.api import Api, item, must_fail, publish, rid, sealed_blob


@pytest.mark.parametrize("action", ["unavailable", "crash", "lose_response"])
def test_a_send_whose_answer_failed_after_its_commit_is_read(hooked: Api, action: str) -> None:
    """The send commits and its request ends without its answer (WP-HOOK-6): bob's next read
    from his cursor finds it, although nobody told the long polls of it."""
    api = hooked
    cursor = api.feed("s1/bob")["next_cursor"]
    assert api.admin("POST", "/_test/faults", {"point": "commit.after", "action": action,
                                               "times": 1}).status_code == 200
    failed = api.send("s1/alice", recipient_ids=["bob"])
    assert failed.status_code != 201
    page = api.feed("s1/bob", cursor=cursor)
    assert [(item["type"], item["producer_id"]) for item in page["items"]] == [
        ("message", "alice")]


def test_a_send_to_the_default_actor_ends_the_claims_of_its_space(api: Api) -> None:
    """Its recipient is known only once it commits (alice is s1's default actor)."""
    cursor = api.feed("s1/alice")["next_cursor"]
    sent = api.must_send("s1/bob")  # no recipient_ids
    page = api.feed("s1/alice", cursor=cursor)
    assert [item["item_id"] for item in page["items"]] == [sent["feed_item_id"]]


def test_an_ack_ends_the_claims_of_its_space(api: Api) -> None:
    """The receipt goes to the producer of the item acknowledged, known only after it commits."""
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    cursor = api.feed("s1/alice")["next_cursor"]
    acked = api.as_("s1/bob", "POST", "/v1/acks", {"request_id": rid(), "items": [
        {"item_id": sent["feed_item_id"], "stage": "received"}]})
    assert acked.status_code == 200, acked.text
    page = api.feed("s1/alice", cursor=cursor)
    assert [(item["type"], item["receipt"]["subject_item_id"]) for item in page["items"]] == [
        ("receipt", sent["feed_item_id"])]


def test_a_publish_ends_the_claims_of_its_collections_readers(mem: Api) -> None:
    blob = sealed_blob(mem, "writer", b"entry")
    cursor = mem.feed("reader")["next_cursor"]
    assert publish(mem, 0, items=[item("a", blob)]).status_code == 201
    page = mem.feed("reader", cursor=cursor)
    assert [item["type"] for item in page["items"]] == ["memory_revision"]


def test_a_claim_is_its_own_tokens_alone(api: Api) -> None:
    """A cursor serves every token of its consumer with the same grants (WP-CUR-5), but its
    claim vouches only for the token it was minted for: one revoked before the claim was made
    is refused."""
    api.token("s1", "bob", "bob-inbox", name="minting")
    issued = api.token("s1", "bob", "bob-inbox", name="revoked")
    api.feed("revoked")  # known to the server
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    cursor = api.feed("minting")["next_cursor"]  # a claim made after the revocation
    must_fail(api.as_("revoked", "GET", "/v1/feed", params={"cursor": cursor}), 401,
              "UNAUTHENTICATED")
    assert api.feed("minting", cursor=cursor)["items"] == []


def test_a_claim_never_outlives_its_tokens_authority(hooked: Api) -> None:
    api = hooked
    soon = datetime.now(UTC) + timedelta(minutes=5)
    api.token("s1", "bob", "bob-inbox", name="expiring",
              expires_at=soon.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
    issued = api.token("s1", "bob", "bob-inbox", name="revoked")
    expiring, revoked = api.feed("expiring"), api.feed("revoked")
    assert api.feed("expiring", cursor=expiring["next_cursor"])["items"] == []
    assert api.admin("POST", "/_test/clock", {"advance_ms": 10 * 60 * 1000}).status_code == 200
    must_fail(api.as_("expiring", "GET", "/v1/feed", params={"cursor": expiring["next_cursor"]}),
              401, "UNAUTHENTICATED")
    api.must_admin("POST", f"/admin/v1/tokens/{issued['token_id']}/revoke", {"request_id": rid()})
    must_fail(api.as_("revoked", "GET", "/v1/feed", params={"cursor": revoked["next_cursor"]}),
              401, "UNAUTHENTICATED")
