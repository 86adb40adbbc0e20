"""Uploads and blobs (protocol.md §6, §10): verified, create-only, expiring, sealed once; read
and referenced only by those allowed (P15, P16)."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from pathlib import Path

from tests.support.api import Api, content_of, must_fail, prepare, put, rid, seal, sealed_blob
from waypost.reference.server import served_context
from waypost.reference.service.blobs import sweep
from waypost.reference.service.context import Context


def test_prepare_put_commit_read(api: Api) -> None:
    data = b"hello, blob"
    slot = prepare(api, "s1/alice", data, filename="hello.txt")
    assert set(slot) == {"upload_id", "blob_id", "upload_url", "expires_at"}
    assert slot["upload_url"] == f"/v1/uploads/{slot['upload_id']}/content"
    must_fail(api.as_("s1/alice", "GET", f"/v1/blobs/{slot['blob_id']}"), 404, "NOT_FOUND")
    stored = put(api, "s1/alice", slot["upload_id"], data)
    assert stored.status_code == 200
    assert stored.json()["state"] == "stored"
    sealed = seal(api, "s1/alice", slot["upload_id"])
    assert sealed.json() == {"blob_id": slot["blob_id"], "size": len(data),
                             "sha256": hashlib.sha256(data).hexdigest(),
                             "content_type": "text/plain"}
    meta = api.as_("s1/alice", "GET", f"/v1/blobs/{slot['blob_id']}").json()
    assert meta["filename"] == "hello.txt"
    assert meta["sealed_at"].endswith("Z")
    got = content_of(api, "s1/alice", slot["blob_id"])
    assert got.content == data
    assert got.headers["ETag"] == f'"{hashlib.sha256(data).hexdigest()}"'


def test_zero_bytes_are_a_valid_blob(api: Api) -> None:
    blob_id = sealed_blob(api, "s1/alice", b"")
    assert content_of(api, "s1/alice", blob_id).content == b""


def test_prepare_and_commit_replay_and_conflict(api: Api) -> None:
    body = {"request_id": "prep-once", "size": 3, "sha256": hashlib.sha256(b"abc").hexdigest(),
            "content_type": "text/plain"}
    first = api.as_("s1/alice", "POST", "/v1/blobs", body)
    again = api.as_("s1/alice", "POST", "/v1/blobs", body)
    assert again.json() == first.json()
    assert again.headers["Waypost-Replayed"] == "true"
    must_fail(api.as_("s1/alice", "POST", "/v1/blobs", {**body, "content_type": "x/y"}), 409,
           "IDEMPOTENCY_CONFLICT")
    upload = first.json()["upload_id"]
    put(api, "s1/alice", upload, b"abc")
    one = seal(api, "s1/alice", upload, "seal-once")
    two = seal(api, "s1/alice", upload, "seal-once")
    assert two.json() == one.json()
    assert two.headers["Waypost-Replayed"] == "true"
    other = prepare(api, "s1/alice", b"x")
    must_fail(seal(api, "s1/alice", other["upload_id"], "seal-once"), 409, "IDEMPOTENCY_CONFLICT")


def test_mismatching_content_seals_nothing(api: Api) -> None:
    data = b"expected bytes"
    slot = prepare(api, "s1/alice", data)
    for wrong in (b"expected bytez", data + b"!", data[:-1], b""):
        must_fail(put(api, "s1/alice", slot["upload_id"], wrong), 422, "CONTENT_MISMATCH")
    must_fail(seal(api, "s1/alice", slot["upload_id"]), 409, "NOT_READY")
    assert put(api, "s1/alice", slot["upload_id"], data).status_code == 200
    assert seal(api, "s1/alice", slot["upload_id"]).status_code == 200


def test_content_is_create_only(api: Api) -> None:
    data = b"first and only"
    slot = prepare(api, "s1/alice", data)
    assert put(api, "s1/alice", slot["upload_id"], data).status_code == 200
    assert put(api, "s1/alice", slot["upload_id"], data).status_code == 200  # same bytes: fine
    must_fail(put(api, "s1/alice", slot["upload_id"], b"second bytes!!"), 422, "CONTENT_MISMATCH")
    blob_id = seal(api, "s1/alice", slot["upload_id"]).json()["blob_id"]
    late = put(api, "s1/alice", slot["upload_id"], b"late overwrite")
    must_fail(late, 422, "CONTENT_MISMATCH")
    assert content_of(api, "s1/alice", blob_id).content == data


def test_uploads_belong_to_their_owner(api: Api) -> None:
    slot = prepare(api, "s1/alice", b"mine")
    must_fail(put(api, "s1/bob", slot["upload_id"], b"mine"), 404, "NOT_FOUND")
    must_fail(put(api, "s2/dave", slot["upload_id"], b"mine"), 404, "NOT_FOUND")
    must_fail(seal(api, "s1/bob", slot["upload_id"]), 404, "NOT_FOUND")
    api.token("s1", "alice", "alice-inbox", name="no-write", scopes=["message.read"])
    must_fail(put(api, "no-write", slot["upload_id"], b"mine"), 403, "FORBIDDEN")


def test_limits_and_bad_prepare_bodies(api: Api) -> None:
    too_big = {"request_id": rid(), "size": 64 * 1024 * 1024 + 1, "sha256": "0" * 64,
               "content_type": "x/y"}
    error = must_fail(api.as_("s1/alice", "POST", "/v1/blobs", too_big), 413, "RESOURCE_LIMIT")
    assert error["details"]["limit"] == "upload_bytes"
    for change, field in (({"size": -1}, "size"), ({"sha256": "ABC"}, "sha256"),
                          ({"content_type": ""}, "content_type"), ({"extra": 1}, "extra")):
        body = {"request_id": rid(), "size": 1, "sha256": "0" * 64, "content_type": "x/y",
                **change}
        must_fail(api.as_("s1/alice", "POST", "/v1/blobs", body), 400, "INVALID_REQUEST", field)


def test_expired_uploads_cannot_be_stored_or_sealed(hooked: Api) -> None:
    api = hooked
    data = b"too late"
    waiting = prepare(api, "s1/alice", data)
    stored = prepare(api, "s1/alice", data)
    assert put(api, "s1/alice", stored["upload_id"], data).status_code == 200
    clock = api.admin("POST", "/_test/clock", {"advance_ms": 3600 * 1000 + 1})
    assert clock.status_code == 200
    must_fail(put(api, "s1/alice", waiting["upload_id"], data), 410, "UPLOAD_EXPIRED")
    # stored before its expiry, it can no longer be sealed: a PUT again says so (WP-UPL-7)
    must_fail(put(api, "s1/alice", stored["upload_id"], data), 410, "UPLOAD_EXPIRED")
    first = seal(api, "s1/alice", stored["upload_id"], "late-seal")
    must_fail(first, 410, "UPLOAD_EXPIRED")
    again = seal(api, "s1/alice", stored["upload_id"], "late-seal")
    must_fail(again, 410, "UPLOAD_EXPIRED")
    assert again.headers["Waypost-Replayed"] == "true"  # a recorded stable failure


def test_cleanup_and_sealing_race_through_the_upload_state(hooked: Api) -> None:
    api = hooked
    ctx: Context = served_context(api.client.app)
    data = b"raced"
    sealed = sealed_blob(api, "s1/alice", data)
    abandoned = prepare(api, "s1/alice", data)
    assert put(api, "s1/alice", abandoned["upload_id"], data).status_code == 200
    api.admin("POST", "/_test/clock", {"advance_ms": 3600 * 1000 + 1})
    assert api.client.portal is not None
    cleaned = api.client.portal.call(sweep, ctx)
    assert cleaned == [abandoned["upload_id"]]
    must_fail(seal(api, "s1/alice", abandoned["upload_id"]), 410, "UPLOAD_EXPIRED")
    assert content_of(api, "s1/alice", sealed).content == data  # sealed blobs are never swept
    assert api.client.portal.call(sweep, ctx) == []
    assert asyncio.iscoroutinefunction(sweep)


def test_test_hooks_are_off_by_default(api: Api) -> None:
    must_fail(api.admin("GET", "/_test/clock"), 404, "NOT_FOUND")
    assert api.client.get("/v1/describe").json()["capabilities"]["test_hooks"] is False


def test_blob_readers_are_owner_recipients_and_grantees(api: Api) -> None:
    data = b"attachment"
    blob_id = sealed_blob(api, "s1/alice", data)
    api.token("s1", "bob", "bob-inbox", name="bob-plain", scopes=["message.read"])
    for outsider in ("bob-plain", "s1/carol", "s2/dave"):
        must_fail(api.as_(outsider, "GET", f"/v1/blobs/{blob_id}"), 404, "NOT_FOUND")
    missing = api.as_("s2/dave", "GET", "/v1/blobs/blb_missing")
    foreign = api.as_("s2/dave", "GET", f"/v1/blobs/{blob_id}")
    assert (missing.status_code, missing.json()) == (foreign.status_code, foreign.json())
    sent = api.must_send("s1/alice", recipient_ids=["bob"], attachment_ids=[blob_id])
    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["attachment_ids"] == [blob_id]
    assert content_of(api, "s1/bob", blob_id).content == data
    api.token("s1", "carol", "carol-inbox", name="carol-plain", scopes=["message.read"])
    must_fail(api.as_("carol-plain", "GET", f"/v1/blobs/{blob_id}"), 404, "NOT_FOUND")
    assert api.as_("s1/carol", "GET", f"/v1/blobs/{blob_id}").status_code == 200  # observer
    api.token("s1", "carol", "carol-inbox", name="carol-granted", scopes=[],
              blob_references=[blob_id])
    assert api.as_("carol-granted", "GET", f"/v1/blobs/{blob_id}").status_code == 200


def test_attachments_must_be_sealed_and_referenceable(api: Api) -> None:
    mine = sealed_blob(api, "s1/alice", b"a")
    theirs = sealed_blob(api, "s1/bob", b"b")
    pending = prepare(api, "s1/alice", b"c")["blob_id"]
    foreign = sealed_blob(api, "s2/dave", b"d")
    for bad in (theirs, pending, foreign, "blb_missing"):
        error = must_fail(api.send("s1/alice", attachment_ids=[mine, bad]), 422,
                       "REFERENCE_INVALID", "attachment_ids")
        assert error["details"]["blob_id"] == bad
    api.token("s1", "alice", "alice-inbox", name="alice-granted", blob_references=[theirs])
    sent = api.must_send("alice-granted", recipient_ids=["carol"],
                         attachment_ids=[theirs, mine])
    message = api.as_("s1/carol", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["attachment_ids"] == [theirs, mine]
    must_fail(api.admin("POST", "/admin/v1/spaces/s1/tokens", {
        "request_id": rid(), "actor_id": "bob", "consumer_id": "bob-inbox", "scopes": [],
        "recipients": {"mode": "any"}, "collections": [], "blob_references": [foreign]}),
        404, "NOT_FOUND", "blob_references")


def test_content_is_served_with_its_stored_type(api: Api) -> None:
    slot = prepare(api, "s1/alice", b"x")
    put(api, "s1/alice", slot["upload_id"], b"x")
    blob_id = seal(api, "s1/alice", slot["upload_id"]).json()["blob_id"]
    assert content_of(api, "s1/alice", blob_id).headers["Content-Type"] == "text/plain"


def test_a_cleanup_crashed_after_its_claim_is_finished_by_the_next_sweep(hooked: Api) -> None:
    """``cleanup.after_claim``: the claim is durable, so the next sweep removes the object."""
    from waypost.reference.domain.faults import Abandoned

    api = hooked
    ctx: Context = served_context(api.client.app)
    data = b"left behind"
    slot = prepare(api, "s1/alice", data)
    assert put(api, "s1/alice", slot["upload_id"], data).status_code == 200
    api.admin("POST", "/_test/clock", {"advance_ms": 3600 * 1000 + 1})
    assert api.admin("POST", "/_test/faults", {"point": "cleanup.after_claim",
                                               "action": "crash"}).status_code == 200
    async def sweep_that_may_crash(ctx: Context) -> str:
        try:
            await sweep(ctx)
        except Abandoned as point:  # a BaseException: it would end the test's event loop
            return f"crashed at {point}"
        return "finished"

    assert api.client.portal is not None
    assert api.client.portal.call(sweep_that_may_crash, ctx) == "crashed at cleanup.after_claim"
    must_fail(seal(api, "s1/alice", slot["upload_id"]), 410, "UPLOAD_EXPIRED")  # claimed already
    assert api.client.portal.call(sweep, ctx) == [slot["upload_id"]]
    assert api.client.portal.call(sweep, ctx) == []


def test_gc_cleans_a_data_directory_and_refuses_one_without_a_database(tmp_path: Path,
                                                                        api: Api) -> None:
    data_dir = tmp_path / "data"  # the api fixture's server keeps its database here
    cleaned = subprocess.run([sys.executable, "-m", "waypost.cli", "gc", "--data-dir",
                              str(data_dir)], capture_output=True, text=True, timeout=60)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "cleaned 0 expired upload(s)" in cleaned.stdout
    empty = tmp_path / "not-a-server"
    refused = subprocess.run([sys.executable, "-m", "waypost.cli", "gc", "--data-dir", str(empty)],
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "holds no Waypost database" in refused.stderr
    assert not empty.exists()  # nothing was created there
