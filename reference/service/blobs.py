"""Uploads and blobs (protocol.md §6, §10; P15, P16): ``blob.prepare``, the content PUT,
``blob.commit``, blob reads, and cleanup of expired uploads."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import parsing, ranges, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import (
    ContentMismatch,
    Forbidden,
    ReferenceInvalid,
    UploadExpired,
    credential_refused,
    internal_error,
    not_found,
)
from waypost.reference.domain.principal import Principal
from waypost.reference.service import answers, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import authority, references
from waypost.reference.storage import uploads as sql
from waypost.reference.storage.blob_store import FactsMismatch, ObjectFacts
from waypost.reference.storage.plan import verdict_from
from waypost.reference.storage.rules import KEY_TAKEN, refusal

log = logging.getLogger("waypost.blobs")

PREPARE, COMMIT = "blob.prepare", "blob.commit"


def _need_write(principal: Principal) -> None:
    if not principal.has("blob.write"):
        raise Forbidden("the token lacks the blob.write scope", field="scope")


async def prepare(ctx: Context, principal: Principal, raw: Any) -> Outcome:
    """Fix the blob id, the object reference and the expected facts of an upload slot: one
    plan, which claims the key and writes the upload (or reads back the key's holder)."""
    body = parsing.fields(raw, "", ["request_id", "size", "sha256", "content_type"],
                          ["filename"])
    request_id = values.request_id(body["request_id"])
    size = body["size"]
    if isinstance(size, int) and not isinstance(size, bool) and size > ctx.limits.upload_bytes:
        raise values.over_limit("size", "upload_bytes", ctx.limits.upload_bytes)
    size = values.integer(size, "size", 0, ctx.limits.upload_bytes)
    sha256 = values.sha256_hex(body["sha256"], "sha256")
    content_type = values.content_type(body["content_type"])
    normalised: dict[str, Any] = {"size": size, "sha256": sha256.hex(),
                                  "content_type": content_type}
    filename = None
    if "filename" in body:
        filename = values.line(body["filename"], "filename", values.BLOB_TEXT_BYTES)
        normalised["filename"] = filename
    _need_write(principal)
    now = ctx.clock.now_ms()
    slot = sql.Slot(values.new_id("sub"), values.new_id("upl"), values.new_id("blb"),
                    values.new_id("obj"), size, sha256, content_type, filename,
                    now + ctx.limits.upload_expiry_seconds * 1000)
    fingerprint = digest(normalised)
    ctx.faults.hit("commit.before")
    plan = sql.prepare(principal, now, request_id, fingerprint, slot)
    decided, upload = sql.prepared_from(await ctx.driver.run(plan))
    ctx.faults.hit("commit.after")
    if decided.verdict not in ("ok", KEY_TAKEN):
        raise refusal(plan.rules, decided.verdict)
    assert decided.record is not None
    if decided.verdict == KEY_TAKEN:
        submissions.check_fingerprint(decided.record, fingerprint)
    if upload is None:  # a prepare is one plan: its key's holder has its upload
        raise RuntimeError(f"blob.prepare {decided.record.submission_id} has no upload")
    outcome = Outcome(201, answers.prepared(upload))
    outcome.replayed = decided.verdict == KEY_TAKEN
    return outcome


async def check_referenceable(ctx: Context, principal: Principal, blob_ids: Sequence[str],
                              field: str, rule: str) -> None:
    """P16: every blob named must be a sealed blob of the space that the producer owns or holds
    a ``blob.reference`` grant for; the first other one is ``REFERENCE_INVALID`` (``rule`` says
    what must name such blobs, e.g. "attachments must be")."""
    if not blob_ids:
        return
    (rows,) = await ctx.driver.read([references.referenceable_statement(principal, blob_ids)])
    allowed = references.referenceable_ids(rows)
    for blob_id in blob_ids:
        if blob_id not in allowed:
            raise ReferenceInvalid(f"{rule} sealed blobs of this space that the producer owns "
                                   "or may reference", field=field, blob_id=blob_id)


async def _mine(ctx: Context, principal: Principal, upload_id: str) -> sql.UploadRow:
    """The caller's upload (404 otherwise), read with the token's liveness in one batch: the
    PUT may start from a principal checked before (``domain/remembered.py``)."""
    uid = values.object_id(upload_id, "upload_id")
    rows, live = await ctx.driver.read([sql.upload_statement(principal.space_id, uid),
                                        authority.live_statement(principal,
                                                                 ctx.clock.now_ms())])
    if not authority.live_from(live):
        raise credential_refused()
    upload = sql.upload_from(rows[0]) if rows else None
    if upload is None or upload.owner_id != principal.actor_id:
        raise not_found("upload")
    return upload


async def put_content(ctx: Context, principal: Principal, upload_id: str,
                      chunks: AsyncIterable[bytes]) -> Outcome:
    """Stream the bytes to the object store, verified against the declared size and SHA-256;
    create-only, so a second or late PUT never changes stored bytes."""
    _need_write(principal)
    upload = await _mine(ctx, principal, upload_id)
    now = ctx.clock.now_ms()
    if upload.state in ("cleaning", "cleaned") or (
            upload.state != "sealed" and upload.expires_at <= now):
        raise UploadExpired("the upload expired", field="upload_id")
    expected = ObjectFacts(upload.expected_size, upload.expected_sha256)
    try:
        await ctx.blobs.create_only(upload.object_ref, chunks, expected)
    except FactsMismatch:
        raise ContentMismatch("the bytes differ from the declared size and sha256",
                              field="content") from None
    ctx.faults.hit("upload.after_store")
    plan = sql.mark_stored(principal.space_id, upload.upload_id, now)
    stored = verdict_from(await ctx.driver.run(plan))
    if stored.verdict != "ok":
        raise refusal(plan.rules, stored.verdict)
    return Outcome(200, {"upload_id": upload.upload_id, "blob_id": upload.blob_id,
                         "state": "sealed" if stored.state == "sealed" else "stored",
                         "size": upload.expected_size, "sha256": upload.expected_sha256.hex()})


async def commit(ctx: Context, principal: Principal, upload_id: str, raw: Any) -> Outcome:
    """``blob.commit``: seal the stored upload into an immutable blob, in one plan that claims
    the key (or reads back the key's holder)."""
    body = parsing.fields(raw, "", ["request_id"])
    request_id = values.request_id(body["request_id"])
    _need_write(principal)
    uid = values.object_id(upload_id, "upload_id")
    fingerprint = digest({"upload_id": uid})
    plan = sql.seal(principal, ctx.clock.now_ms(), request_id, fingerprint,
                    values.new_id("sub"), uid)
    ctx.faults.hit("seal.before_commit")
    ctx.faults.hit("commit.before")
    decided, blob = sql.sealed_from(await ctx.driver.run(plan))
    ctx.faults.hit("commit.after")
    verdict = decided.verdict
    if verdict not in ("ok", sql.EXPIRED, KEY_TAKEN):
        raise refusal(plan.rules, verdict)
    record = decided.record
    assert record is not None
    if verdict == KEY_TAKEN:
        submissions.check_fingerprint(record, fingerprint)
    if record.state == "failed":
        error = UploadExpired(answers.RECORDED_MESSAGES["UPLOAD_EXPIRED"])
        error.replayed = verdict == KEY_TAKEN
        raise error
    if blob is None:  # a commit is one plan: its key's holder is final
        raise RuntimeError(f"blob.commit {record.submission_id} is {record.state}")
    outcome = Outcome(200, answers.sealed(blob))
    outcome.replayed = verdict == KEY_TAKEN
    return outcome


async def _readable(ctx: Context, principal: Principal, blob_id: str) -> sql.BlobRow:
    bid = values.object_id(blob_id, "blob_id")
    rows, allowed = await ctx.driver.read([sql.blob_statement(principal.space_id, bid),
                                           sql.blob_readers_statement(principal, bid)])
    if not rows or not sql.readable_from(allowed):
        raise not_found("blob")
    return sql.blob_from(rows[0])


async def read_blob(ctx: Context, principal: Principal, blob_id: str) -> Outcome:
    blob = await _readable(ctx, principal, blob_id)
    return Outcome(200, {"blob_id": blob.blob_id, "size": blob.size, "sha256": blob.sha256.hex(),
                         "content_type": blob.content_type, "filename": blob.filename,
                         "sealed_at": values.format_timestamp(blob.sealed_at)})


@dataclass(frozen=True)
class Content:
    """A sealed blob's bytes (or the asked range of them) as a stream of bounded chunks, with
    what a download answers. ``span`` is the range served (None: the whole blob);
    ``unsatisfiable`` says the range asked lies past the end (no bytes are streamed)."""

    chunks: AsyncIterator[bytes]
    size: int
    content_type: str
    etag: str
    span: ranges.Span | None = None
    unsatisfiable: bool = False


async def read_content(ctx: Context, principal: Principal, blob_id: str,
                       wanted: ranges.Wanted | None = None,
                       if_range: str | None = None) -> Content:
    """The sealed bytes as a stream, their content type and ETag (the SHA-256); with a range
    ``wanted`` (and an ``If-Range`` that holds, if given), only those bytes. Who may read is
    decided before the range is looked at. The first chunk is read here, so a store that fails
    fails before an answer starts."""
    blob = await _readable(ctx, principal, blob_id)
    etag = blob.sha256.hex()
    span = None
    if wanted is not None and ranges.if_range_holds(if_range, etag):
        try:
            span = ranges.resolve(wanted, blob.size)
        except ranges.Unsatisfiable:
            return Content(_nothing(), blob.size, blob.content_type, etag, unsatisfiable=True)
    if span is None:  # the whole blob: its bytes are held to its SHA-256 as they pass
        chunks = _checked(blob.blob_id, blob.size, ctx.blobs.stream(blob.object_ref),
                          blob.sha256)
        whole = blob.size <= VERIFIED_FIRST
    else:  # a range: its length only (its digest would need the whole object read)
        chunks = _checked(blob.blob_id, span.length,
                          ctx.blobs.stream(blob.object_ref, span.start, span.length))
        whole = False
    return Content(await _primed(chunks, whole), blob.size, blob.content_type, etag, span)


async def readable_blob(ctx: Context, principal: Principal, blob_id: str) -> sql.BlobRow:
    """The blob row, if the principal may read it (``NOT_FOUND`` otherwise)."""
    return await _readable(ctx, principal, blob_id)


def stream_of(ctx: Context, blob: sql.BlobRow) -> AsyncIterator[bytes]:
    """The bytes of a readable blob, checked against its size and SHA-256 as they pass."""
    return _checked(blob.blob_id, blob.size, ctx.blobs.stream(blob.object_ref), blob.sha256)


#: A blob this small is read and checked whole before its answer starts: a damaged one is
#: answered 500 in the envelope instead of 200 (a larger one is cut short at its end).
VERIFIED_FIRST = 256 * 1024


class DamagedBlob(RuntimeError):
    """A stored blob's bytes no longer match the size or SHA-256 it was sealed with."""


async def _checked(blob_id: str, expected: int, chunks: AsyncIterator[bytes],
                   sha256: bytes | None = None) -> AsyncIterator[bytes]:
    """The chunks, which must add up to ``expected`` bytes (the blob's size or its range's)
    and, given ``sha256``, hash to it: else the stream ends in :class:`DamagedBlob` before its
    last bytes, so that no client can take it as complete, and the operator gets one line."""
    seen, hasher, hashed = 0, hashlib.sha256() if sha256 is not None else None, True
    async for chunk in chunks:
        seen += len(chunk)
        if seen > expected:
            break
        if hasher is not None:
            hasher.update(chunk)
            if seen == expected and not (hashed := hasher.digest() == sha256):
                break  # the last chunk is held back: the answer stays short of its length
        yield chunk
    if seen != expected or not hashed:
        log.error("stored blob %s is damaged: its bytes do not match the size and SHA-256 it "
                  "was sealed with (waypost verify lists every damaged object)", blob_id)
        raise DamagedBlob(f"stored blob {blob_id} fails its verified facts")


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that yields nothing


async def _primed(chunks: AsyncIterator[bytes], whole: bool = False) -> AsyncIterator[bytes]:
    """The stream with its first chunk read before the answer starts (a store that fails,
    fails first); ``whole``: every chunk, so that a damaged small blob is refused (500)
    before the first byte is sent."""
    try:
        if whole:
            held = [chunk async for chunk in chunks]
        else:
            first = await anext(chunks, None)
            held = [] if first is None else [first]
    except DamagedBlob:
        raise internal_error() from None

    async def rest() -> AsyncIterator[bytes]:
        for chunk in held:
            yield chunk
        async for chunk in chunks:
            yield chunk
    return rest()


async def sweep(ctx: Context) -> list[str]:
    """Clean expired unsealed uploads: claim (the race with sealing is decided here), remove
    the object, mark cleaned. Returns the upload ids cleaned."""
    claimed = sql.claimed_from(await ctx.driver.run(sql.claim_expired(ctx.clock.now_ms())))
    if claimed:  # the point is "the sweeper claimed an expired upload" (protocol.md §14)
        ctx.faults.hit("cleanup.after_claim")
    cleaned = []
    for upload in claimed:
        await ctx.blobs.remove(upload.object_ref)
        await ctx.driver.run(sql.mark_cleaned(upload.space_id, upload.upload_id))
        cleaned.append(upload.upload_id)
    return cleaned
