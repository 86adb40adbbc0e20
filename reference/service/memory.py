"""``memory.publish`` (reserve → manifest object + staged inputs → CAS commit) and the reads of
collections and fixed revisions (protocol.md §6, §9; P11–P14)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import cursor, values
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import (
    CursorInvalid,
    Forbidden,
    InvalidRequest,
    ResourceLimit,
    WaypostError,
    credential_refused,
    from_code,
    not_found,
)
from waypost.reference.domain.manifest_input import ManifestReader
from waypost.reference.domain.memory_change import Decision, Open, decide, metadata_json
from waypost.reference.domain.memory_requests import (
    Changes,
    PublishMemory,
    parse_publish,
)
from waypost.reference.domain.memory_state import EMPTY_FINGERPRINT
from waypost.reference.domain.principal import Principal
from waypost.reference.service import answers, blobs, manifest_build, submissions
from waypost.reference.service.context import Context, Outcome
from waypost.reference.service.feed import parse_limit
from waypost.reference.service.wakeups import Route, route_keys
from waypost.reference.service.woken import publishing
from waypost.reference.storage import authority, publish_rules
from waypost.reference.storage import memory as sql
from waypost.reference.storage import submissions as submission_sql
from waypost.reference.storage.plan import Row, Statement, verdict_from
from waypost.reference.storage.rules import refusal

OPERATION = "memory.publish"


def _collection_body(collection: sql.CollectionRow) -> dict[str, Any]:
    return {"collection_id": collection.collection_id,
            "source_actor_id": collection.source_actor_id, "scope": collection.scope,
            "current_revision": collection.current_revision}


async def _collection(ctx: Context, principal: Principal, collection_id: str) -> sql.CollectionRow:
    cid = values.object_id(collection_id, "collection_id")
    return _granted(principal, (await ctx.driver.read([
        sql.collection_statement(principal.space_id, cid)]))[0])


def _granted(principal: Principal, rows: Sequence[Row]) -> sql.CollectionRow:
    """The collection read, if the token holds any grant on it; otherwise exactly like a
    missing one (also in another space)."""
    if not rows:
        raise not_found("collection")
    collection = sql.collection_from(rows[0])
    cid = collection.collection_id
    if not (principal.grants.may(cid, "read") or principal.grants.may(cid, "write")):
        raise not_found("collection")
    return collection


async def _changes(ctx: Context, principal: Principal, request: PublishMemory) -> Changes:
    """The inline changes, or those of the manifest blob, which the producer must be able to
    reference before it is read (P16). Its entries' blobs are the plans' to check
    (``storage/publish_rules.py``, ``ENTRY_BLOBS``)."""
    if request.inline is not None:
        return request.inline
    assert request.manifest_blob_id is not None
    await blobs.check_referenceable(ctx, principal, [request.manifest_blob_id],
                                    "manifest_blob_id", "entries must name")
    return await _manifest_input(ctx, principal, request)


async def _manifest_input(ctx: Context, principal: Principal, request: PublishMemory) -> Changes:
    """Refuse a manifest over ``manifest_input_bytes`` unread; parse a smaller one as it
    streams, on a thread, chunk by chunk (it stops at the first entry past the limit)."""
    assert request.manifest_blob_id is not None
    blob = await blobs.readable_blob(ctx, principal, request.manifest_blob_id)
    high = ctx.limits.manifest_input_bytes
    if blob.size > high:
        raise values.over_limit("manifest_blob_id", "manifest_input_bytes", high)
    reader = ManifestReader(request.mode, ctx.limits)
    async for chunk in blobs.stream_of(ctx, blob):
        await asyncio.to_thread(reader.feed, chunk)
    return await asyncio.to_thread(reader.close)


@dataclass(frozen=True)
class Outlook:
    """What a publish would do on the head as read now: ``decision`` when the head is
    ``expected_revision`` (else ``None``: a conflict), with the head's fingerprint and the
    first page of its entries for the manifest."""

    collection: sql.CollectionRow
    decision: Decision | None = None
    parent_fingerprint: bytes = EMPTY_FINGERPRINT
    first_page: list[tuple[str, str, str]] | None = None


def _authorised(principal: Principal, rows: Sequence[Row]) -> sql.CollectionRow:
    """The collection must be one the token holds a grant on (else exactly like a missing
    one), and its source actor's to publish."""
    collection = _granted(principal, rows)
    if (collection.source_actor_id != principal.actor_id
            or not principal.grants.may(collection.collection_id, "write")):
        raise Forbidden("only the collection's source actor with a write grant publishes",
                        field="collection_id")
    return collection


def _outlook_reads(principal: Principal, request: PublishMemory,
                   changes: Changes) -> list[Statement]:
    """What :func:`_outlook_from` decides from, bounded by the input, in one snapshot: the
    collection, the head's totals, the entries the input names, the expected revision's
    metadata and the first page of its entries (the manifest starts from it)."""
    ids = [item.item_id for item in changes.items] + list(changes.delete_ids)
    return [*sql.outlook_statements(principal.space_id, request.collection_id, ids,
                                    [item.path for item in changes.items]),
            sql.revision_statement(principal.space_id, request.collection_id,
                                   request.expected_revision),
            sql.manifest_page_statement(principal.space_id, request.collection_id,
                                        request.expected_revision, "", manifest_build.FIRST_PAGE)]


def _outlook_from(ctx: Context, principal: Principal, request: PublishMemory, changes: Changes,
                  rows: Sequence[Sequence[Row]]) -> Outlook:
    """Decide on the rows of :func:`_outlook_reads`: invalid input raises; a head other than
    ``expected_revision`` is a conflict."""
    found, totals, *parts, revision, page = rows
    collection = _authorised(principal, found)
    if collection.current_revision != request.expected_revision:
        return Outlook(collection)
    wanted = {item.item_id for item in changes.items} | set(changes.delete_ids)
    named: dict[str, Open] = {}
    on_paths: dict[str, Open] = {}
    for entry in (sql.open_from(row) for part in parts for row in part):
        if entry.item_id in wanted:
            named[entry.item_id] = entry
        if entry.active and entry.path is not None:
            on_paths[entry.path] = entry
    decision = decide(collection.collection_id, request.expected_revision, request.mode,
                      changes.items, changes.delete_ids, named, on_paths,
                      sql.totals_from(totals), ctx.limits)
    if not decision.unchanged and request.expected_revision >= values.MAX_REVISION:
        raise ResourceLimit("the collection is at the largest revision", field="expected_revision",
                            limit="revision", max=values.MAX_REVISION)
    parent = sql.revision_from(revision[0]).state_fingerprint if revision else EMPTY_FINGERPRINT
    return Outlook(collection, decision, parent, manifest_build.page_of(page))


async def _outlook(ctx: Context, principal: Principal, request: PublishMemory,
                   changes: Changes) -> Outlook:
    return _outlook_from(ctx, principal, request, changes,
                         await ctx.driver.read(_outlook_reads(principal, request, changes)))


async def publish(ctx: Context, principal: Principal, collection_id: str, raw: Any) -> Outcome:
    """Publish a revision if ``expected_revision`` is the head (CAS), answer ``changed:false``
    for the head's own state, or record ``REVISION_CONFLICT``; replay a settled key. The
    collection, the key and the token's liveness are read in one batch, with what the publish
    decides from when its changes are inline."""
    request = parse_publish(raw, collection_id, ctx.limits)
    if not principal.has("memory.write"):
        raise Forbidden("the token lacks the memory.write scope", field="scope")
    inline = request.inline
    found, key_rows, live, *outlook_rows = await ctx.driver.read([
        sql.collection_statement(principal.space_id, request.collection_id),
        submission_sql.lookup_statement(principal, OPERATION, request.request_id),
        authority.live_statement(principal, ctx.clock.now_ms()),
        *(_outlook_reads(principal, request, inline) if inline is not None else ())])
    if not authority.live_from(live):  # it may be a principal checked before: a replay too
        raise credential_refused()
    _authorised(principal, found)
    fingerprint = digest(request.normalised)
    outlook = None
    if not key_rows:
        changes = await _changes(ctx, principal, request)
        # invalid input fails here or in the reservation's check, before the key is reserved
        outlook = (_outlook_from(ctx, principal, request, changes, outlook_rows) if outlook_rows
                   else await _outlook(ctx, principal, request, changes))
        record, _ = submissions.reserved(await submission_sql.reserve(
            ctx.driver, principal, ctx.clock.now_ms(), OPERATION, request.request_id,
            fingerprint, values.new_id("sub"), outlook.collection.collection_id,
            feed_item_id=values.new_id("fi"), object_ref=values.new_id("obj"),
            blob_id=values.new_id("blb"),
            checks=publish_rules.entry_blob_checks([item.blob_id for item in changes.items])))
        ctx.faults.hit("reserve.after")
    else:
        record = submission_sql.found_from(key_rows[0])[0]
    submissions.check_fingerprint(record, fingerprint)
    if not record.pending:
        return await submissions.replay(ctx, OPERATION, record, None)
    if outlook is None:
        changes = await _changes(ctx, principal, request)
    return await _resume(ctx, principal, request, record, changes, outlook)


async def _state_fingerprint(ctx: Context, principal: Principal, request: PublishMemory,
                             record: submission_sql.SubmissionRecord, changes: Changes,
                             outlook: Outlook) -> bytes | None:
    """The fingerprint the commit is guarded with: the head's own for an unchanged publish,
    ``None`` for a conflict; else the new state's, computed while the manifest object is
    written (a submission still reserved) or read again (one already prepared)."""
    if outlook.decision is None:
        return None
    if outlook.decision.unchanged:
        return outlook.parent_fingerprint
    target = manifest_build.Target(principal.space_id, outlook.collection.collection_id,
                                   request.expected_revision, request.mode, changes,
                                   outlook.first_page, outlook.decision.manifest_bytes)
    if record.state != "reserved":
        return await manifest_build.fingerprint(ctx, target)
    return await _prepare(ctx, principal, record, changes, target)


async def _resume(ctx: Context, principal: Principal, request: PublishMemory,
                  record: submission_sql.SubmissionRecord, changes: Changes,
                  outlook: Outlook | None) -> Outcome:
    """Carry a reserved publish to its commit; the head decides conflict / unchanged / new."""
    for _attempt in range(3):  # the head may reach expected_revision between read and commit
        if outlook is None:
            try:
                outlook = await _outlook(ctx, principal, request, changes)
            except (InvalidRequest, ResourceLimit) as error:
                # The head reached expected_revision after the key was reserved and the input
                # is invalid on it: that is this key's stable result from now on.
                return await _fail(ctx, principal, request, record, error)
        new_fingerprint = await _state_fingerprint(ctx, principal, request, record, changes,
                                                   outlook)
        plan = sql.commit_revision(principal, ctx.clock.now_ms(), sql.RevisionCommit(
            record.submission_id, outlook.collection.collection_id, request.expected_revision,
            request.mode, new_fingerprint, EMPTY_FINGERPRINT, values.new_id("upl")))
        ctx.faults.hit("commit.before")
        route = Route("memory_revision", principal.actor_id, None, request.collection_id)
        decided = submission_sql.decided_from(await publishing(
            ctx, principal.space_id, route_keys(principal.space_id, route), plan))
        ctx.faults.hit("commit.after")
        if decided.verdict == "NOT_READY" and new_fingerprint is None:
            outlook = None
            continue
        break
    verdict = decided.verdict
    if verdict not in ("ok", publish_rules.CONFLICT, publish_rules.UNCHANGED, submission_sql.SETTLED):
        raise refusal(plan.rules, verdict)
    if verdict == "ok":
        ctx.signal.committed(principal.space_id, [route])
    assert decided.record is not None
    if verdict == submission_sql.SETTLED:
        return await submissions.replay(ctx, OPERATION, decided.record, None)
    outcome = await answers.stable_result(ctx, OPERATION, decided.record, None)
    if outcome.status >= 400:  # the recorded conflict, in the very words a replay will use
        recorded = outcome.body["error"]
        raise from_code(recorded["code"], recorded["message"], recorded["details"])
    return outcome


async def _fail(ctx: Context, principal: Principal, request: PublishMemory,
                record: submission_sql.SubmissionRecord, error: WaypostError) -> Outcome:
    plan = submission_sql.record_failure(principal, ctx.clock.now_ms(), record.submission_id,
                                         error.status, error.code, json.dumps(error.details))
    verdict = verdict_from(await ctx.driver.run(plan)).verdict
    if verdict not in ("ok", submission_sql.SETTLED):
        raise refusal(plan.rules, verdict)
    found = await submissions.find(ctx, principal, OPERATION, request.request_id)
    assert found is not None
    if verdict == submission_sql.SETTLED:
        return await submissions.replay(ctx, OPERATION, found[0], None)
    failed = (await answers.stable_result(ctx, OPERATION, found[0], None)).body["error"]
    raise from_code(failed["code"], failed["message"], failed["details"])


async def _prepare(ctx: Context, principal: Principal, record: submission_sql.SubmissionRecord,
                   changes: Changes, target: manifest_build.Target) -> bytes:
    """Write the canonical manifest object as it streams, stage the inputs, mark the submission
    prepared; the new state's fingerprint."""
    assert record.object_ref is not None
    new_fingerprint, facts = await manifest_build.write(ctx, target, record.object_ref)
    ctx.faults.hit("object.after_write")
    inputs = [sql.StagedInput(item.item_id, item.path, item.blob_id, metadata_json(item))
              for item in changes.items] + [sql.StagedInput(item_id)
                                            for item_id in changes.delete_ids]
    plan = sql.stage(principal, ctx.clock.now_ms(), record.submission_id, inputs, facts.sha256,
                     facts.size)
    verdict = verdict_from(await ctx.driver.run(plan)).verdict
    if verdict not in ("ok", publish_rules.NOT_RESERVED):
        raise refusal(plan.rules, verdict)
    ctx.faults.hit("prepare.after")
    return new_fingerprint


async def read_collection(ctx: Context, principal: Principal, collection_id: str) -> Outcome:
    """``GET /v1/collections/{id}``: for tokens with a grant on it and memory.read or
    memory.write."""
    collection = await _collection(ctx, principal, collection_id)
    if not (principal.has("memory.read") or principal.has("memory.write")):
        raise Forbidden("the token lacks the memory.read scope", field="scope")
    return Outcome(200, _collection_body(collection))


async def _readable_revision(ctx: Context, principal: Principal, collection_id: str,
                             revision: str) -> tuple[sql.CollectionRow, int]:
    number = _revision_number(revision)
    collection = await _collection(ctx, principal, collection_id)
    if not (principal.has("memory.read") and principal.grants.may(collection.collection_id,
                                                                    "read")):
        raise Forbidden("reading revisions needs memory.read and a read grant", field="scope")
    if number > collection.current_revision:
        raise not_found("revision")
    return collection, number


def _revision_number(text: str) -> int:
    """The ``{revision}`` path parameter: a decimal integer 0 … 2^53−1 without sign or leading
    zeros (protocol.md WP-VAL-3, WP-VAL-7); anything else is ``400`` naming ``revision``."""
    if (not text.isascii() or not text.isdigit() or (len(text) > 1 and text[0] == "0")
            or int(text) > values.MAX_REVISION):
        raise InvalidRequest("revision must be a decimal integer from 0 to 2^53-1",
                             field="revision")
    return int(text)


async def read_revision(ctx: Context, principal: Principal, collection_id: str,
                        revision: str) -> Outcome:
    """Revision metadata; revision 0 is the virtual empty state (no manifest, no feed item)."""
    collection, number = await _readable_revision(ctx, principal, collection_id, revision)
    body: dict[str, Any] = {"collection_id": collection.collection_id, "revision": number}
    if number == 0:
        return Outcome(200, {**body, "parent_revision": None, "manifest_blob_id": None,
                             "state_fingerprint": EMPTY_FINGERPRINT.hex(), "committed_at": None,
                             "feed_item_id": None, "sequence": None})
    (rows,) = await ctx.driver.read([sql.revision_statement(
        principal.space_id, collection.collection_id, number)])
    found = sql.revision_from(rows[0])
    return Outcome(200, {**body, "parent_revision": found.parent_revision,
                         "manifest_blob_id": found.manifest_blob_id,
                         "state_fingerprint": found.state_fingerprint.hex(),
                         "committed_at": values.format_timestamp(found.committed_at),
                         "feed_item_id": found.feed_item_id,
                         "sequence": values.sequence_text(found.sequence)})


async def read_items(ctx: Context, principal: Principal, collection_id: str, revision: str,
                     query: dict[str, str]) -> Outcome:
    """A page of one fixed revision's entries in ``item_id`` order; the cursor is bound to the
    revision (and to the actor and the tombstone choice)."""
    collection, number = await _readable_revision(ctx, principal, collection_id, revision)
    limit = parse_limit(ctx, query.get("limit"))
    tombstones = _flag(query.get("include_tombstones"))
    after = ""
    if query.get("cursor") is not None:
        decoded = cursor.decode_memory(ctx.cursor_key, query["cursor"])
        if (decoded.space_id, decoded.actor_id, decoded.collection_id, decoded.revision,
                decoded.include_tombstones) != (principal.space_id, principal.actor_id,
                                                collection.collection_id, number, tombstones):
            raise CursorInvalid("cursor is invalid", field="cursor")
        after = decoded.position
    (rows,) = await ctx.driver.read([sql.page_statement(
        principal.space_id, collection.collection_id, number, after, tombstones, limit + 1)])
    page = [sql.entry_from(row) for row in rows[:limit]]
    has_more = len(rows) > limit
    position = page[-1].item_id if page else after
    next_cursor = cursor.encode(ctx.cursor_key, cursor.MemoryCursor(
        principal.space_id, principal.actor_id, collection.collection_id, number, tombstones,
        position))
    return Outcome(200, {"collection_id": collection.collection_id, "revision": number,
                         "items": [entry.public() for entry in page],
                         "next_cursor": next_cursor, "has_more": has_more})


def _flag(raw: str | None) -> bool:
    if raw is None or raw == "false":
        return False
    if raw == "true":
        return True
    raise InvalidRequest("include_tombstones must be true or false", field="include_tombstones")
