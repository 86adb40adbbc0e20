"""Contract checks of what a refusal leaves and what a grant allows: failures that are never a
key's stable result (WP-IDEM-11), a ``blob.reference`` grant without its scope (WP-AUTH-15), a
write without its scope to an upload the caller cannot see (WP-AUTH-14), and the consumer
filter on collections, which no receipt matches (WP-VIS-2)."""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

import httpx

from waypost.properties.contract.common import (
    add_actor,
    admin,
    error,
    issue,
    json_of,
    obj,
    replayed,
    shown,
    text,
)
from waypost.properties.hostile.probes import Finding, HostileCheck, Probe, expect_status


def _prepared(probe: Probe, who: str, data: bytes) -> dict[str, Any]:
    """``blob.prepare`` of ``data`` by ``who``: the upload, its content not sent yet."""
    return obj(probe.request("POST", "/v1/blobs", who=who, body={
        "request_id": probe.rid("pr"), "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain"}),
        "blob.prepare", 201)


def _put(probe: Probe, who: str, upload_id: str, data: bytes) -> httpx.Response:
    return probe.request("PUT", f"/v1/uploads/{upload_id}/content", who=who, content=data,
                         headers={"Content-Type": "application/octet-stream"})


def _first(answer: httpx.Response, status: int, what: str) -> dict[str, Any]:
    """A success decided afresh: ``status``, not marked replayed (WP-IDEM-11, WP-IDEM-7)."""
    if answer.status_code != status or replayed(answer):
        raise Finding(f"{what}: {shown(answer)}{' (replayed)' if replayed(answer) else ''}; "
                      f"expected a first {status}: a refusal of this kind is never the key's "
                      "stable result (WP-IDEM-11)")
    return obj(answer, what, status)


def _message(probe: Probe, recipients: list[str], **extra: Any) -> dict[str, Any]:
    return {"request_id": probe.rid("uf"), "recipient_ids": recipients,
            "thread": {"new": True}, "kind": "info", "subject": "unrecorded",
            "body": {"text": "t"}, **extra}


def unrecorded_failures(probe: Probe) -> int:
    """A ``blob.commit`` before the content (``NOT_READY``), a send to an actor not created
    yet (``NOT_FOUND``) and a send attaching a blob not sealed yet (``REFERENCE_INVALID``),
    each retried with its request_id once the cause is gone: a first success, then replayed
    (WP-IDEM-11, WP-IDEM-6)."""
    data = b"unrecorded"
    upload = text(_prepared(probe, "alice", data), "upload_id", "blob.prepare")
    commit = {"request_id": probe.rid("uf")}
    path = f"/v1/uploads/{upload}/commit"
    error(probe.request("POST", path, who="alice", body=commit),
          "blob.commit before the content (WP-UPL-7)", {"NOT_READY": None})
    expect_status(_put(probe, "alice", upload, data), range(200, 300),
                  "the upload's content PUT (WP-UPL-3)")
    _first(probe.request("POST", path, who="alice", body=commit),
           200, "blob.commit retried with its request_id once the content is stored")
    to_frank = _message(probe, ["frank"])
    error(probe.request("POST", "/v1/messages", who="alice", body=to_frank),
          "a send to an actor the space lacks (WP-MSG-3)", {"NOT_FOUND": "recipient_ids"})
    admin(probe, "POST", f"/admin/v1/spaces/{probe.space}/actors", {
        "request_id": probe.rid("ac"), "actor_id": "frank", "kind": "agent",
        "display_name": "frank"})
    _first(probe.request("POST", "/v1/messages", who="alice", body=to_frank), 201,
           "the send retried with its request_id once the recipient exists")
    slot = _prepared(probe, "alice", b"attached")
    attaching = _message(probe, ["bob"], attachment_ids=[text(slot, "blob_id", "blob.prepare")])
    error(probe.request("POST", "/v1/messages", who="alice", body=attaching),
          "a send attaching a blob not sealed yet (WP-MSG-8)", {"REFERENCE_INVALID": None})
    probe.upload("alice", text(slot, "upload_id", "blob.prepare"), b"attached")
    sent = _first(probe.request("POST", "/v1/messages", who="alice", body=attaching), 201,
                  "the send retried with its request_id once the blob is sealed")
    again = probe.request("POST", "/v1/messages", who="alice", body=attaching)
    if not replayed(again) or obj(again, "the send once more", 201) != sent:
        raise Finding(f"the same send once more: {shown(again)}; it must replay the result "
                      "its retry fixed (WP-IDEM-6)")
    return probe.requests


def _like_missing(answers: tuple[httpx.Response, httpx.Response],
                  ids: tuple[str, str], what: str) -> None:
    """Two answers, for ``ids[0]`` and for ``ids[1]`` (one that does not exist), the same apart
    from an echoed id (WP-AUTH-13)."""
    shapes = [json.dumps(json_of(answer, what)).replace(probed, "<id>")
              for answer, probed in zip(answers, ids, strict=True)]
    if answers[0].status_code != answers[1].status_code or shapes[0] != shapes[1]:
        raise Finding(f"{what}: {shown(answers[0])}, while for an id that does not exist "
                      f"{shown(answers[1])}: the same answer (WP-AUTH-13, WP-AUTH-14)")


def reference_grants(probe: Probe) -> int:
    """A blob in a token's ``blob_references`` is readable and attachable through it without
    the scope ``blob.reference``; the scope without the blob listed gives nothing: the blob is
    like a missing one, and attaching it is ``REFERENCE_INVALID`` (WP-AUTH-15, WP-AUTH-6)."""
    data = b"granted by the list"
    blob = probe.sealed_blob("alice", data)
    missing = f"blb_{secrets.token_hex(13)}"
    add_actor(probe, "carol")
    issue(probe, "carol", name="scoped", scopes=["message.send", "message.read",
                                                  "blob.reference"])
    issue(probe, "carol", name="listed", scopes=["message.send", "message.read"],
          blob_references=[blob])
    for suffix in ("", "/content"):
        answers = (probe.request("GET", f"/v1/blobs/{blob}{suffix}", who="scoped"),
                   probe.request("GET", f"/v1/blobs/{missing}{suffix}", who="scoped"))
        what = f"GET /v1/blobs/{{id}}{suffix} with the scope blob.reference, the blob not listed"
        error(answers[0], f"{what} (WP-AUTH-15, WP-UPL-10)", {"NOT_FOUND": None})
        _like_missing(answers, (blob, missing), what)
    error(probe.request("POST", "/v1/messages", who="scoped",
                        body=_message(probe, ["bob"], attachment_ids=[blob])),
          "attaching a blob not listed, with the scope blob.reference (WP-AUTH-15, WP-MSG-8)",
          {"REFERENCE_INVALID": None})
    what = "through a token listing the blob in blob_references, without the scope (WP-AUTH-15)"
    obj(probe.request("GET", f"/v1/blobs/{blob}", who="listed"), f"its metadata {what}", 200)
    content = probe.request("GET", f"/v1/blobs/{blob}/content", who="listed")
    expect_status(content, 200, f"its content {what}")
    if content.content != data:
        raise Finding(f"its content {what}: {len(content.content)} other bytes (WP-UPL-9)")
    obj(probe.request("POST", "/v1/messages", who="listed",
                      body=_message(probe, ["bob"], attachment_ids=[blob])),
        f"attaching it {what}", 201)
    return probe.requests


def scope_or_invisible(probe: Probe) -> int:
    """A content PUT and a ``blob.commit`` without ``blob.write``: to another actor's upload
    ``403`` or ``404``, exactly as to an upload that does not exist; to one's own ``403``,
    and the upload stays as it was (WP-AUTH-14, WP-AUTH-13)."""
    data = b"not yours"
    upload = text(_prepared(probe, "alice", data), "upload_id", "blob.prepare")
    missing = f"upl_{secrets.token_hex(13)}"
    add_actor(probe, "carol")
    issue(probe, "carol", name="unscoped", scopes=["message.read"])
    issue(probe, "alice", name="alice-unscoped", scopes=["message.read"])
    for method, suffix in (("PUT", "content"), ("POST", "commit")):
        what = f"{method} /v1/uploads/{{id}}/{suffix} without blob.write"

        def call(upload_id: str, who: str, method: str = method,
                 suffix: str = suffix) -> httpx.Response:
            if method == "PUT":
                return _put(probe, who, upload_id, data)
            return probe.request("POST", f"/v1/uploads/{upload_id}/{suffix}", who=who,
                                 body={"request_id": probe.rid("so")})
        answers = (call(upload, "unscoped"), call(missing, "unscoped"))
        error(answers[0], f"{what}, to another actor's upload (WP-AUTH-14)",
              {"FORBIDDEN": None, "NOT_FOUND": None})
        _like_missing(answers, (upload, missing), f"{what}, to another actor's upload")
        error(call(upload, "alice-unscoped"), f"{what}, to one's own upload (WP-AUTH-14)",
              {"FORBIDDEN": None})
    probe.upload("alice", upload, data)
    return probe.requests


def _items(page: Any, what: str) -> list[dict[str, Any]]:
    items = page.get("items") if isinstance(page, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise Finding(f"{what}: no list of items: {page!r:.200}")
    return items


def collection_filters(probe: Probe) -> int:
    """A consumer whose filter lists the collection sees its revision and not the receipt
    about it, which the same actor's unfiltered inbox shows (WP-VIS-2, WP-VIS-3)."""
    blob = probe.sealed_blob("alice", b"filtered")
    obj(probe.request("POST", "/v1/collections/notes/revisions", who="alice", body={
        "request_id": probe.rid("cf"), "expected_revision": probe.head(), "mode": "delta",
        "items": [{"item_id": "f", "path": "f.md", "blob_id": blob}]}), "a publish", 201)
    revisions = [item.get("item_id") for item in probe.inbox("bob")
                 if item.get("type") == "memory_revision"]
    if len(revisions) != 1:
        raise Finding(f"bob's inbox, with a read grant on notes, shows {len(revisions)} "
                      "revision items after one publish (WP-VIS-1)")
    obj(probe.request("POST", "/v1/acks", who="bob", body={
        "request_id": probe.rid("cf"), "items": [{"item_id": revisions[0],
                                                  "stage": "received"}]}), "bob's ACK", 200)
    receipts = [item for item in probe.inbox("alice") if item.get("type") == "receipt"]
    if len(receipts) != 1:
        raise Finding(f"alice's inbox shows {len(receipts)} receipt items after bob "
                      "acknowledged her revision (WP-RCPT-7)")
    base = f"/admin/v1/spaces/{probe.space}"
    admin(probe, "POST", f"{base}/consumers", {
        "request_id": probe.rid("co"), "consumer_id": "alice-notes", "actor_id": "alice",
        "view": "inbox", "filter": {"collection_ids": ["notes"]}})
    issued = admin(probe, "POST", f"{base}/tokens", {
        "request_id": probe.rid("tk"), "actor_id": "alice", "consumer_id": "alice-notes",
        "scopes": ["message.read", "memory.read"], "recipients": {"mode": "any"},
        "collections": [{"collection_id": "notes", "actions": ["read"]}],
        "blob_references": []}, status=201)
    probe.tokens["filtered"] = text(issued, "token", "a token of the filtered consumer")
    page = probe.request("GET", "/v1/feed", who="filtered", params={"limit": 10})
    seen = [(item.get("type"), item.get("item_id"))
            for item in _items(obj(page, "the filtered consumer's feed", 200),
                               "the filtered consumer's feed")]
    if seen != [("memory_revision", revisions[0])]:
        raise Finding(f"a consumer filtered on collection notes shows {seen!r:.300}: only "
                      "the revision has a collection; a receipt, also one about the "
                      "revision, matches no collection_ids (WP-VIS-2)")
    return probe.requests


CHECKS = (
    HostileCheck("unrecorded_failures", "blob.commit before the content, a send to an actor "
                 "not created yet and one attaching a blob not sealed yet: each retried with "
                 "its request_id once the cause is gone succeeds as a first answer",
                 ("WP-IDEM-11", "WP-IDEM-6", "WP-IDEM-7", "WP-UPL-7", "WP-MSG-3", "WP-MSG-8",
                  "WP-ERR-1"), unrecorded_failures),
    HostileCheck("reference_grants", "a blob listed in a token's blob_references is read and "
                 "attached without the scope blob.reference; the scope alone gives nothing",
                 ("WP-AUTH-15", "WP-AUTH-6", "WP-UPL-10", "WP-MSG-8", "WP-AUTH-13",
                  "WP-ERR-1"), reference_grants),
    HostileCheck("scope_or_invisible", "a PUT and a commit without blob.write: to another "
                 "actor's upload 403 or 404, exactly as to a missing one; to one's own 403",
                 ("WP-AUTH-14", "WP-AUTH-13", "WP-UPL-1", "WP-UPL-6", "WP-ERR-1"),
                 scope_or_invisible),
    HostileCheck("collection_filters", "a consumer filtered on a collection sees the revision "
                 "and not the receipt about it", ("WP-VIS-2", "WP-VIS-3", "WP-RCPT-7"),
                 collection_filters),
)
