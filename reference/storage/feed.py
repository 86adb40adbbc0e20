"""Feed reads: a consumer's visible items (protocol.md §8), computed in SQL, never by the client.

Visibility for a consumer of actor A through a token with grants G:
message and receipt items need ``message.read`` and, in an inbox, A among the item's recipients,
in a space log ``space.observe``; memory_revision items need ``memory.read`` and a read grant on
the collection, and so do receipts about them (they name the collection). Then every non-empty
filter dimension must match.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import NOT_LIVE, authority_params
from waypost.reference.storage.control import json_list
from waypost.reference.storage.plan import SEQUENCE, SqlValue, Statement, stmt

FEED_COLUMNS = f"""{SEQUENCE}, f.item_id, f.item_type, f.producer_id, f.thread_id,
    f.resource_id, f.collection_id, f.committed_at,
    (SELECT json_group_array(actor_id) FROM (SELECT r.actor_id FROM feed_recipients r
        WHERE r.space_id = f.space_id AND r.item_id = f.item_id ORDER BY r.actor_id)),
    m.subject, m.kind,
    u.receipt_id, u.receipt_version, u.subject_item_id, u.subject_resource_id, u.consumer_id,
    u.actor_id, u.stage, u.updated_at, v.revision, v.parent_revision, v.manifest_blob_id"""

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


def page_statement(principal: Principal, after: int, limit: int) -> Statement:
    """Up to ``limit`` visible items after position ``after``, in sequence order."""
    return stmt(f"""
        SELECT {FEED_COLUMNS}
        FROM feed_items f
        {_JOINS}
        WHERE f.space_id = :space_id AND f.sequence > CAST(:after AS INTEGER)
          AND {VISIBLE}
          AND {FILTERED}
        ORDER BY f.sequence
        LIMIT :limit""", {**visibility_params(principal), "after": after, "limit": limit})


def visible_items_statement(principal: Principal, item_ids: Sequence[str]) -> Statement:
    """Which of ``item_ids`` the consumer sees, with their type and resource."""
    return stmt(f"""
        SELECT f.item_id, f.item_type
        FROM feed_items f
        WHERE f.space_id = :space_id AND f.item_id IN (SELECT value FROM json_each(:ids))
          AND {VISIBLE}
          AND {FILTERED}""", {**visibility_params(principal), "ids": json_list(item_ids)})


def checkpoint_statement(principal: Principal) -> Statement:
    """The saved checkpoint for (consumer, view revision, grant fingerprint); none means 0."""
    return stmt("""SELECT CAST(sequence AS TEXT) FROM consumer_checkpoints WHERE space_id = :space_id
                   AND consumer_id = :consumer_id AND view_revision = :view_revision
                   AND grant_fingerprint = :grant_fingerprint""",
                {"space_id": principal.space_id, "consumer_id": principal.consumer.consumer_id,
                 "view_revision": principal.consumer.view_revision,
                 "grant_fingerprint": principal.grant_fingerprint})


def current_statement(principal: Principal, now: int) -> Statement:
    """Read in the same snapshot as a page: is the token still live and the view unchanged?"""
    return stmt(f"""
        SELECT CASE WHEN {NOT_LIVE} THEN 'UNAUTHENTICATED'
            WHEN NOT EXISTS (SELECT 1 FROM consumers WHERE space_id = :space_id
                AND consumer_id = :consumer_id AND view_revision = :view_revision)
            THEN 'CURSOR_STALE' ELSE 'ok' END""",
        {**authority_params(principal, now, ""), "space_id": principal.space_id,
         "consumer_id": principal.consumer.consumer_id,
         "view_revision": principal.consumer.view_revision})
