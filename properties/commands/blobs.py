"""Upload and blob commands of the kit (P15, P16, P01, P02): prepare, PUT the declared or other
bytes, seal, read; the server clock moved past an upload's expiry where the target offers the
clock hook."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from waypost.properties.model.matching import MISSING, epoch_ms, protocol_view, shaped
from waypost.properties.model.state import Recorded, Token, Upload
from waypost.properties.protocol import fingerprints
from waypost.properties.verdicts.owners import refusal_ids

if TYPE_CHECKING:
    from waypost.properties.commands.world import World

PREPARED = {"upload_id", "blob_id", "upload_url", "expires_at"}
#: The rules behind a refused PUT or commit of an upload: a dead token or no blob.write (P02),
#: else someone else's upload (P16).
NOT_THEIRS: dict[str, tuple[str, ...]] = {"UNAUTHENTICATED": ("WP-AUTH-2",),
                                          "FORBIDDEN": ("WP-AUTH-14", "WP-UPL-1"),
                                          "NOT_FOUND": ("WP-UPL-6",)}


def prepare(world: World, token: str, content: str, filename: str | None) -> None:
    """``blob.prepare`` fixes ids and expected facts (P15); ``content`` is hex."""
    owner = world.token(token)
    data = bytes.fromhex(content)
    body: dict[str, Any] = {"request_id": world.rid(), "size": len(data),
                            "sha256": hashlib.sha256(data).hexdigest(),
                            "content_type": "application/octet-stream"}
    if filename is not None:
        body["filename"] = filename
    answer = world.as_(owner, "POST", "/v1/blobs", body)
    if world.dead(owner, answer, "prepare"):
        return
    if not owner.has("blob.write"):
        world.expect_refusal(answer, {"FORBIDDEN"}, ("WP-AUTH-14", "WP-UPL-1"),
                             "prepare without blob.write")
        return
    if not world.check(("WP-HTTP-15", "WP-UPL-2"), answer.status == 201
                       and shaped(answer.json, PREPARED)
                       and epoch_ms(answer.json["expires_at"]) is not None,
                       f"prepare should answer 201 with the upload, got {answer.status}",
                       answer=answer.json):
        return
    prepared = answer.json
    world.model.uploads.append(Upload(prepared["upload_id"], prepared["blob_id"], owner.space,
                                      owner.actor_id, data, body["content_type"], filename,
                                      prepared["expires_at"]))
    normal = {k: v for k, v in body.items() if k != "request_id"}
    world.model.submissions[(owner.space, owner.actor_id, "blob.prepare",
                             body["request_id"])] = Recorded(
        "blob.prepare", owner.space, owner.actor_id, owner.handle, body,
        fingerprints.sha256_jcs(normal), 201, prepared)


def expired(world: World, upload: Upload) -> bool:
    """Whether the server clock (as last read through the hook, by any worker of the run) is
    past the expiry."""
    at = epoch_ms(upload.expires_at)
    return (world.model.hooks and upload.state != "sealed" and at is not None
            and at <= world.shared.now_ms)


def upload_refusal(world: World, who: Token, upload: Upload, scope: str) -> set[str] | None:
    """The errors that apply before the upload's own state is looked at, if any."""
    if not world.model.live(who):
        return {"UNAUTHENTICATED"}
    if not who.has(scope):
        return {"FORBIDDEN", "NOT_FOUND"} if upload.owner_id != who.actor_id else {"FORBIDDEN"}
    if upload.space != who.space or upload.owner_id != who.actor_id:
        return {"NOT_FOUND"}
    return None


def put(world: World, token: str, upload: int, right: bool) -> None:
    """Content must match size and SHA-256; create-only: a second or late PUT with other
    bytes never changes what is stored (P15)."""
    who, slot = world.token(token), world.model.uploads[upload]
    data = slot.content if right else slot.content + b"~"
    answer = world.session.put(f"/v1/uploads/{slot.upload_id}/content", data,
                               bearer=who.secret, who=who.handle)
    refused = upload_refusal(world, who, slot, "blob.write")
    if refused is not None:
        world.expect_refusal(answer, refused, refusal_ids(refused, NOT_THEIRS),
                             "PUT by someone else")
        return
    if expired(world, slot):  # stored or not: a PUT after the expiry is refused (WP-UPL-7)
        world.expect_refusal(answer, {"UPLOAD_EXPIRED", "CONTENT_MISMATCH"}, "WP-UPL-7",
                             "PUT after expiry")
        return
    if not right:
        world.expect_refusal(answer, {"CONTENT_MISMATCH"}, ("WP-UPL-3", "WP-UPL-5"),
                             "PUT of other bytes")
        return
    if world.check(("WP-UPL-3", "WP-UPL-4", "WP-UPL-5"), 200 <= answer.status < 300,
                   f"PUT of the declared bytes: {answer.status}", answer=answer.json) \
            and slot.state == "awaiting":
        slot.state = "stored"


def seal(world: World, token: str, upload: int) -> None:
    """``blob.commit``: a stored upload becomes a blob with its verified facts (P15)."""
    who, slot = world.token(token), world.model.uploads[upload]
    body = {"request_id": world.rid()}
    path = f"/v1/uploads/{slot.upload_id}/commit"
    answer = world.as_(who, "POST", path, body)
    refused = upload_refusal(world, who, slot, "blob.write")
    if refused is not None:
        world.expect_refusal(answer, refused, refusal_ids(refused, NOT_THEIRS),
                             "commit by someone else")
        return
    if expired(world, slot):
        world.expect_refusal(answer, {"UPLOAD_EXPIRED"}, ("WP-UPL-7", "WP-UPL-8"),
                             "commit after expiry")
        return
    if slot.state == "awaiting":
        world.expect_refusal(answer, {"NOT_READY"}, "WP-UPL-7", "commit before content")
        return
    if not world.check(("WP-HTTP-15", "WP-UPL-2", "WP-UPL-11"),
                       answer.status == 200 and protocol_view(answer.json, slot.sealed_answer)
                       == slot.sealed_answer,
                       "commit must answer the sealed blob's facts", answer=answer.json,
                       expected=slot.sealed_answer):
        return
    slot.state = "sealed"
    world.model.submissions[(who.space, who.actor_id, "blob.commit", body["request_id"])] = \
        Recorded("blob.commit", who.space, who.actor_id, who.handle, body,
                 fingerprints.sha256_jcs({"upload_id": slot.upload_id}), 200,
                 slot.sealed_answer, path)


def read_blob(world: World, token: str, upload: int | None) -> None:
    """Blob metadata and bytes to the owner, readers of an attaching message and grant
    holders only; to anyone else exactly like a missing blob (P16, P01)."""
    reader = world.token(token)
    slot = None if upload is None else world.model.uploads[upload]
    blob_id = MISSING if slot is None else slot.blob_id
    answer = world.as_(reader, "GET", f"/v1/blobs/{blob_id}")
    if world.dead(reader, answer, "blob read"):
        return
    if slot is None or not world.model.blob_readable(slot.blob_id, reader):
        foreign = slot is not None and slot.space != reader.space
        world.expect_like_missing(answer, reader, "/v1/blobs/{}", blob_id,
                                  ("WP-AUTH-13", "WP-UPL-10") if foreign else "WP-UPL-10",
                                  "a blob the reader may not see")
        return
    expected = {**slot.sealed_answer, "filename": slot.filename}
    shown = {k: v for k, v in answer.json.items() if k != "sealed_at"} \
        if isinstance(answer.json, dict) else None
    if not world.check(("WP-UPL-10", "WP-HTTP-15", "WP-VAL-21", "WP-VAL-22"),
                       answer.status == 200 and protocol_view(shown, expected) == expected,
                       "blob metadata differs", answer=answer.json, expected=expected):
        return
    if slot.sealed is None:
        slot.sealed = answer.json
    world.check("WP-UPL-9", answer.json == slot.sealed, "sealed blob metadata changed",
                answer=answer.json, first=slot.sealed)
    content = world.session.get_bytes(f"/v1/blobs/{blob_id}/content", bearer=reader.secret,
                                      who=reader.handle)
    world.check(("WP-UPL-9", "WP-UPL-3"), content.status == 200 and content.data == slot.content
                and hashlib.sha256(slot.content).hexdigest() in content.etag,
                "a sealed blob's bytes must be exactly the verified content",
                status=content.status, etag=content.etag, size=len(content.data))


def advance_clock(world: World, ms: int) -> None:
    """Move the server clock (test hook) so uploads expire (P15); no command of another
    worker is in flight meanwhile (its model judged expiry by the clock before)."""
    if not world.model.hooks:
        return
    with world.shared.alone():
        before = world.shared.now_ms
        answer = world.session.admin("POST", "/_test/clock", {"advance_ms": ms})
        now = epoch_ms(answer.json.get("now")) if isinstance(answer.json, dict) else None
        moved = answer.status == 200 and now is not None and now >= before + ms
        if moved:  # every worker's model reads the new clock before its next command
            world.shared.clock_moved(now or 0, ms, world)
    world.check("WP-HOOK-3", moved,
                f"POST /_test/clock must move the clock {ms} ms forward and answer now",
                answer=answer.json, status=answer.status, before=before)
