"""The dashboard inspector (docs/dashboard.md): published facts, fixed memory revisions and
independent receipts of one space, a bounded page at a time. Reading never writes anything,
least of all a consumer's progress."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain import values
from waypost.reference.domain.errors import InvalidRequest, not_found
from waypost.reference.service.context import Context
from waypost.reference.service.messages import verified_body
from waypost.reference.storage import inspector as sql
from waypost.reference.storage import listings
from waypost.reference.storage.memory import collection_from, collection_statement
from waypost.reference.storage.rows import texts

PAGE = 100
ITEM_TYPES = ("message", "memory_revision", "receipt")
MAX_RECEIPT_STEPS = 1000
MAX_CHECKPOINT_ROWS = 500
#: Items behind a checkpoint are counted up to this many; more show as "10,000+".
MAX_BEHIND = 10_000
HOURS = 24
MAX_POSITION = 2**63 - 1  # SQLite's largest integer


@dataclass(frozen=True)
class Page:
    """Rows of one page and where the next one starts (``None``: this is the last)."""

    rows: list[Any]
    next: str | None


def _optional_id(value: str | None, field: str) -> str | None:
    return values.object_id(value, field) if value else None


def _position(value: str | None, field: str, default: str) -> str:
    """A decimal page position (a sequence or revision), ``default`` when not given."""
    if not value:
        return default
    if not value.isascii() or not value.isdigit() or int(value) > MAX_POSITION:
        raise InvalidRequest(f"{field} must be an integer from 0 to {MAX_POSITION}", field=field)
    return value


async def space(ctx: Context, space_id: str) -> listings.SpaceRow:
    sid = values.object_id(space_id, "space_id")
    (rows,) = await ctx.driver.read([listings.space(sid)])
    if not rows:
        raise not_found("space")
    return listings.space_from(rows[0])


async def feed(ctx: Context, space_id: str, query: dict[str, str]) -> Page:
    """Items newest first, before ``query['before']``, filtered by type, producer and thread."""
    item_type = query.get("type") or None
    if item_type is not None and item_type not in ITEM_TYPES:
        raise InvalidRequest("type must be message, memory_revision or receipt", field="type")
    before = _position(query.get("before"), "before", sql.TOP)
    (rows,) = await ctx.driver.read([sql.feed_page(
        space_id, before, PAGE + 1, item_type, _optional_id(query.get("producer"), "producer"),
        _optional_id(query.get("thread"), "thread"))])
    items = [sql.feed_from(row) for row in rows]
    more = len(items) > PAGE
    return Page(items[:PAGE], str(items[PAGE - 1].sequence) if more else None)


@dataclass(frozen=True)
class MessageView:
    message: sql.MessageRow
    #: the body's text as written, its options, its source (None when it has none)
    text: str
    options: list[str]
    source_uri: str | None
    #: the metadata as labelled fields: each key with its value (JSON text unless a string)
    metadata: list[tuple[str, str]] | None
    recipients: list[str]
    attachments: list[sql.AttachmentRow]
    #: each receipt's versions in order, by consumer
    receipts: dict[str, list[sql.ReceiptStep]]
    #: the history had more than :data:`MAX_RECEIPT_STEPS` versions: only the first are shown
    receipts_cut: bool = False


async def message(ctx: Context, space_id: str, message_id: str) -> MessageView:
    """A message with its body (verified against its stored facts), recipients, attachments
    and the history of every receipt about it."""
    mid = values.object_id(message_id, "message_id")
    found, recipients, attachments = await ctx.driver.read([
        sql.message(space_id, mid), sql.recipients(space_id, mid),
        sql.attachments(space_id, mid)])
    if not found:
        raise not_found("message")
    row = sql.message_from(found[0])
    (steps,) = await ctx.driver.read([sql.receipt_history(space_id, row.item_id,
                                                          MAX_RECEIPT_STEPS + 1)])
    receipts: dict[str, list[sql.ReceiptStep]] = {}
    for step in map(sql.step_from, steps[:MAX_RECEIPT_STEPS]):
        receipts.setdefault(step.receipt_id, []).append(step)
    body = json.loads(verified_body(row))
    metadata = None if row.metadata_json is None else _fields(json.loads(row.metadata_json))
    return MessageView(row, str(body["text"]), [str(o) for o in body.get("options") or []],
                       body.get("source_uri"), metadata, texts(recipients),
                       [sql.AttachmentRow(*a) for a in attachments], receipts,
                       receipts_cut=len(steps) > MAX_RECEIPT_STEPS)


def _fields(metadata: dict[str, Any]) -> list[tuple[str, str]]:
    """Metadata as labelled fields, by key: a string as written, anything else as JSON."""
    return [(key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            for key, value in sorted(metadata.items())]


def behind_text(behind: int) -> str:
    """A counted lag as shown: ``12``, ``1,234``, or ``10,000+`` past :data:`MAX_BEHIND`."""
    return f"{MAX_BEHIND:,}+" if behind > MAX_BEHIND else f"{behind:,}"


@dataclass(frozen=True)
class Progress:
    head: int
    checkpoints: list[sql.CheckpointRow]


async def progress(ctx: Context, space_id: str) -> Progress:
    """Each consumer's checkpoints and how far behind the space's head they are (``behind``
    counted up to ``MAX_BEHIND + 1``: a larger number means "more than ``MAX_BEHIND``")."""
    head, rows = await ctx.driver.read([
        sql.head(space_id), sql.checkpoints(space_id, MAX_CHECKPOINT_ROWS, MAX_BEHIND + 1)])
    return Progress(int(head[0][0]) if head else 0, [sql.checkpoint_from(row) for row in rows])


async def items_per_hour(ctx: Context, space_id: str) -> list[tuple[int, int]]:
    """``(hour, items)`` for each of the last 24 hours, oldest first (empty hours as 0)."""
    now_hour = ctx.clock.now_ms() // 3_600_000
    first = now_hour - HOURS + 1
    (rows,) = await ctx.driver.read([sql.items_per_hour(space_id, first * 3_600_000)])
    counts = {int(hour): int(items) for hour, items in rows}
    return [(hour, counts.get(hour, 0)) for hour in range(first, now_hour + 1)]


async def collection(ctx: Context, space_id: str, collection_id: str,
                     before: str | None) -> tuple[Any, Page]:
    """A collection with a page of its revisions, newest first."""
    cid = values.object_id(collection_id, "collection_id")
    start = int(_position(before, "before", str(2**53)))
    found, rows = await ctx.driver.read([collection_statement(space_id, cid),
                                         sql.revisions(space_id, cid, start, PAGE + 1)])
    if not found:
        raise not_found("collection")
    revisions = [sql.revision_from(row) for row in rows]
    more = len(revisions) > PAGE
    return (collection_from(found[0]),
            Page(revisions[:PAGE], str(revisions[PAGE - 1].revision) if more else None))


def _revision(value: str, field: str) -> int:
    return int(_position(value, field, "0"))


def _head(found: Sequence[Any]) -> int:
    """The head revision of the collection read (``404`` if there is none)."""
    if not found:
        raise not_found("collection")
    return int(collection_from(found[0]).current_revision)


def _published(revision: int, head: int) -> int:
    """A revision the collection has (0, the empty state, up to its head), else ``404``."""
    if revision > head:
        raise not_found("revision")
    return revision


async def entries(ctx: Context, space_id: str, collection_id: str, revision: str,
                  after: str | None) -> Page:
    """A page of a fixed revision's entries (tombstones included), by item id; a collection or
    revision that does not exist is ``404``."""
    cid = values.object_id(collection_id, "collection_id")
    number = _revision(revision, "revision")
    found, rows = await ctx.driver.read([
        collection_statement(space_id, cid),
        sql.entries(space_id, cid, number, after or "", PAGE + 1)])
    _published(number, _head(found))
    entries_found = [sql.entry_from(row) for row in rows]
    more = len(entries_found) > PAGE
    return Page(entries_found[:PAGE], entries_found[PAGE - 1].item_id if more else None)


async def diff(ctx: Context, space_id: str, collection_id: str, query: dict[str, str]) -> Page:
    """A page of the entries that differ between revisions ``from`` and ``to``; a collection
    or either revision that does not exist is ``404``."""
    cid = values.object_id(collection_id, "collection_id")
    a, b = _revision(query.get("from", ""), "from"), _revision(query.get("to", ""), "to")
    found, rows = await ctx.driver.read([
        collection_statement(space_id, cid),
        sql.diff(space_id, cid, a, b, query.get("after", ""), PAGE + 1)])
    head = _head(found)
    _published(a, head)
    _published(b, head)
    changed = [sql.diff_from(row) for row in rows]
    more = len(changed) > PAGE
    return Page(changed[:PAGE], changed[PAGE - 1].item_id if more else None)


async def uploads(ctx: Context, space_id: str, after: str | None) -> Page:
    """A page of the space's uploads with their state and their blobs' seal times."""
    (rows,) = await ctx.driver.read([sql.uploads(space_id, after or "", PAGE + 1)])
    found = [sql.upload_from(row) for row in rows]
    more = len(found) > PAGE
    return Page(found[:PAGE], found[PAGE - 1].upload_id if more else None)


async def actor(ctx: Context, space_id: str, actor_id: str) -> listings.ActorRow:
    """An actor of ``space_id``; one of another space, or none, is not found."""
    (rows,) = await ctx.driver.read([listings.actor(
        values.object_id(space_id, "space_id"), values.object_id(actor_id, "actor_id"))])
    if not rows:
        raise not_found("actor")
    return listings.actor_from(rows[0])


async def token_grants(ctx: Context, space_id: str, token_id: str) -> sql.TokenGrants:
    """A token of ``space_id`` with its grants; a token of another space is not found."""
    (rows,) = await ctx.driver.read([sql.token_grants(
        values.object_id(space_id, "space_id"), values.object_id(token_id, "token_id"))])
    if not rows:
        raise not_found("token")
    return sql.grants_from(rows[0])
