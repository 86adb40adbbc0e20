"""Feed reads: a consumer's visible items (protocol.md §8), computed in SQL, never by the client.

Visibility for a consumer of actor A through a token with grants G:
message and receipt items need ``message.read`` and, in an inbox, A among the item's recipients,
in a space log ``space.observe``; memory_revision items need ``memory.read`` and a read grant on
the collection, and so do receipts about them (they name the collection). Then every non-empty
filter dimension must match.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import NOT_LIVE, authority_params
from waypost.reference.storage.plan import SEQUENCE, Row, SqlValue, Statement, json_list, stmt
from waypost.reference.storage.rows import decode, only, select_list


@dataclass(frozen=True)
class FeedRow:
    """A feed item with what its type carries: the message's subject and kind, the receipt
    update, or the revision (the columns of the other types are ``None``)."""

    sequence: int
    item_id: str
    item_type: str
    producer_id: str
    thread_id: str | None
    resource_id: str
    collection_id: str | None
    committed_at: int
    recipient_ids: tuple[str, ...]
    subject: str | None
    kind: str | None
    receipt_id: str | None
    receipt_version: int | None
    subject_item_id: str | None
    subject_resource_id: str | None
    consumer_id: str | None
    actor_id: str | None
    stage: str | None
    updated_at: int | None
    revision: int | None
    parent_revision: int | None
    manifest_blob_id: str | None


_RECIPIENTS = """(SELECT json_group_array(actor_id) FROM (SELECT r.actor_id FROM feed_recipients r
        WHERE r.space_id = f.space_id AND r.item_id = f.item_id ORDER BY r.actor_id))"""

FEED_COLUMNS = select_list(
    FeedRow, "f.", sequence=SEQUENCE, recipient_ids=_RECIPIENTS,
    **{name: f"m.{name}" for name in ("subject", "kind")},
    **{name: f"u.{name}" for name in ("receipt_id", "receipt_version", "subject_item_id",
                                      "subject_resource_id", "consumer_id", "actor_id", "stage",
                                      "updated_at")},
    **{name: f"v.{name}" for name in ("revision", "parent_revision", "manifest_blob_id")})


def feed_row_from(row: Row) -> FeedRow:
    """Decode :data:`FEED_COLUMNS` (the sequence arrives as decimal text, the recipients as a
    JSON list)."""
    return decode(FeedRow, row, sequence=int,
                  recipient_ids=lambda text: tuple(json.loads(text)))

_JOINS = """LEFT JOIN messages m ON f.item_type = 'message' AND m.space_id = f.space_id
        AND m.message_id = f.resource_id
    LEFT JOIN feed_receipt_updates u ON f.item_type = 'receipt' AND u.space_id = f.space_id
        AND u.item_id = f.item_id
    LEFT JOIN memory_revisions v ON f.item_type = 'memory_revision' AND v.space_id = f.space_id
        AND v.feed_item_id = f.item_id"""

VISIBLE = """(
    (f.item_type IN ('message', 'receipt') AND (:all_messages = 1 OR (:inbox_messages = 1
        AND EXISTS (SELECT 1 FROM feed_recipients r WHERE r.space_id = f.space_id
            AND r.item_id = f.item_id AND r.actor_id = :actor_id)))
        AND (f.item_type = 'message' OR NOT EXISTS (SELECT 1 FROM feed_receipt_updates ru
            JOIN feed_items s ON s.space_id = ru.space_id AND s.item_id = ru.subject_item_id
            WHERE ru.space_id = f.space_id AND ru.item_id = f.item_id
              AND s.item_type = 'memory_revision' AND NOT (:memory_read = 1 AND EXISTS (
                SELECT 1 FROM token_collection_grants g WHERE g.token_id = :token_id
                AND g.collection_id = s.collection_id AND g.action = 'read')))))
    OR (f.item_type = 'memory_revision' AND :memory_read = 1
        AND EXISTS (SELECT 1 FROM token_collection_grants g WHERE g.token_id = :token_id
            AND g.collection_id = f.collection_id AND g.action = 'read')))"""


def _dimension(name: str, column: str) -> str:
    """An empty or absent dimension matches everything; else the column must be listed (a NULL
    column matches nothing)."""
    return (f"(COALESCE(json_array_length(:filter, '$.{name}'), 0) = 0"
            f" OR {column} IN (SELECT value FROM json_each(:filter, '$.{name}')))")


#: The consumer filter, taken from the principal (one consistent view with its cursor binding).
FILTERED = " AND ".join([
    _dimension("producer_ids", "f.producer_id"),
    _dimension("thread_ids", "f.thread_id"),
    _dimension("item_types", "f.item_type"),
    _dimension("collection_ids", "f.collection_id"),
])


def visibility_params(principal: Principal) -> dict[str, SqlValue]:
    """The token's effective grants and the consumer's view, as the visibility predicate's
    parameters."""
    reads = principal.has("message.read")
    view = principal.consumer.view
    return {
        "space_id": principal.space_id, "actor_id": principal.actor_id,
        "consumer_id": principal.consumer.consumer_id, "token_id": principal.token_id,
        "all_messages": int(reads and view == "space_log" and principal.has("space.observe")),
        "inbox_messages": int(reads and view == "inbox"),
        "memory_read": int(principal.has("memory.read")),
        "filter": json.dumps({dim: list(vals) for dim, vals in principal.consumer.filter.items()}),
    }


#: The consumer's saved checkpoint for its view and grants (0 without one), in SQL.
SAVED_POSITION = """COALESCE((SELECT sequence FROM consumer_checkpoints
            WHERE space_id = :space_id AND consumer_id = :consumer_id
            AND view_revision = :view_revision AND grant_fingerprint = :grant_fingerprint), 0)"""


@functools.lru_cache(maxsize=16)
def _page_sql(bound: str, columns: str, joins: str, visible: str, filtered: str) -> str:
    """A page's SQL, composed once per set of parts (a herd of long polls composes thousands
    of pages at once; the parts are passed, not read here, so that a test deployment that
    swaps one gets its own text)."""
    return f"""
        SELECT {columns}
        FROM feed_items f
        {joins}
        WHERE f.space_id = :space_id AND f.sequence > {bound}
          AND {visible}
          AND {filtered}
        ORDER BY f.sequence
        LIMIT :limit"""


_AFTER = "CAST(:after AS INTEGER)"


def page_statement(principal: Principal, after: int | None, limit: int) -> Statement:
    """Up to ``limit`` visible items after position ``after`` (None: after the consumer's saved
    checkpoint, read in the same snapshot), in sequence order."""
    params = visibility_params(principal)
    params["limit"] = limit
    if after is None:
        params["view_revision"] = principal.consumer.view_revision
        params["grant_fingerprint"] = principal.grant_fingerprint
        return stmt(_page_sql(SAVED_POSITION, FEED_COLUMNS, _JOINS, VISIBLE, FILTERED), params)
    params["after"] = after
    return stmt(_page_sql(_AFTER, FEED_COLUMNS, _JOINS, VISIBLE, FILTERED), params)


@dataclass(frozen=True)
class VisibleItem:
    item_id: str
    item_type: str


def visible_items_statement(principal: Principal, item_ids: Sequence[str]) -> Statement:
    """Which of ``item_ids`` the consumer sees, with their type (decoded by
    :func:`visible_types`)."""
    return stmt(f"""
        SELECT {select_list(VisibleItem, "f.")}
        FROM feed_items f
        WHERE f.space_id = :space_id AND f.item_id IN (SELECT value FROM json_each(:ids))
          AND {VISIBLE}
          AND {FILTERED}""", {**visibility_params(principal), "ids": json_list(item_ids)})


def visible_types(rows: Sequence[Row]) -> dict[str, str]:
    """The rows of :func:`visible_items_statement` as ``{item_id: item_type}``."""
    return {item.item_id: item.item_type for item in (decode(VisibleItem, row) for row in rows)}


def checkpoint_from(rows: Sequence[Row]) -> int:
    """The position of a ``consumer_checkpoints`` row read as ``CAST(sequence AS TEXT)``
    (decimal text); no row means 0."""
    return int(only(rows)[0]) if rows else 0


@functools.lru_cache(maxsize=16)
def _current_sql(not_live: str, saved: str | None) -> str:
    """The verdict of the token and the view, and the saved checkpoint where ``saved``."""
    verdict = f"""CASE WHEN {not_live} THEN 'UNAUTHENTICATED'
            WHEN NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id
                AND consumer_id = :consumer_id AND view_revision = :view_revision)
            THEN 'CURSOR_STALE' ELSE 'ok' END AS verdict"""
    return f"SELECT {verdict}" + ("" if saved is None else f", CAST({saved} AS TEXT) AS sequence")


def current_statement(principal: Principal, now: int) -> Statement:
    """Read in the same snapshot as a page: is the token still live and the view unchanged?
    (``verdict``: ``ok``, ``UNAUTHENTICATED`` or ``CURSOR_STALE``, see :func:`current_from`)"""
    return stmt(_current_sql(NOT_LIVE, None), _current_params(principal, now))


def current_and_saved_statement(principal: Principal, now: int) -> Statement:
    """:func:`current_statement` and the consumer's saved checkpoint (0 without one) in one
    row, for a first page read from the checkpoint: see :func:`current_from` and
    :func:`saved_from`."""
    return stmt(_current_sql(NOT_LIVE, SAVED_POSITION), {
        **_current_params(principal, now), "view_revision": principal.consumer.view_revision,
        "grant_fingerprint": principal.grant_fingerprint})


def _current_params(principal: Principal, now: int) -> dict[str, SqlValue]:
    return {**authority_params(principal, now, ""), "space_id": principal.space_id,
            "consumer_id": principal.consumer.consumer_id,
            "view_revision": principal.consumer.view_revision}


def current_from(rows: Sequence[Row]) -> str:
    """The verdict of :func:`current_statement` (or :func:`current_and_saved_statement`)."""
    return str(only(rows)[0])


def saved_from(rows: Sequence[Row]) -> int:
    """The saved checkpoint of :func:`current_and_saved_statement` (decimal text)."""
    return int(only(rows)[1])


def routes_statement(space_id: str, item_ids: Sequence[str]) -> Statement:
    """Of the feed items ``item_ids`` that exist: type, producer, thread, collection and
    recipients (a JSON list), what a long poll's wake-up is decided by."""
    return stmt(f"""SELECT f.item_type, f.producer_id, f.thread_id, f.collection_id,
            {_RECIPIENTS} FROM feed_items f
        WHERE f.space_id = :space_id AND f.item_id IN (SELECT value FROM json_each(:ids))""",
                {"space_id": space_id, "ids": json_list(item_ids)})


def routes_from(rows: Sequence[Row]) -> list[tuple[str, str, str | None, str | None,
                                                    tuple[str, ...]]]:
    """Decode :func:`routes_statement`'s rows."""
    return [(str(row[0]), str(row[1]), None if row[2] is None else str(row[2]),
             None if row[3] is None else str(row[3]), tuple(json.loads(str(row[4]))))
            for row in rows]
