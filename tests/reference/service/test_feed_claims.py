"""Reads that need no read (docs/spec.md): a cursor of a complete page carries the server's
claim that nothing of its token's view followed it; the claim never outlives a commit its view
may see, the token's authority, or the token itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.api import Api, must_fail, rid


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
