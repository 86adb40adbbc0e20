"""The dashboard inspector's reads (docs/dashboard.md): every one a bounded page or a single
resource, in one consistent snapshot; none of them writes. Sequences cross as decimal text."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.reference.storage.memory import ENTRY_COLUMNS, EntryRow, at_revision
from waypost.reference.storage.plan import SEQUENCE, Row, SqlValue, Statement, stmt
from waypost.reference.storage.rows import decode, select_list

#: A sequence above every real one: the first page of a newest-first listing.
TOP = "9223372036854775807"
#: Items counted by the items-per-hour chart at most (the newest ones).
CHART_WINDOW = 10_000


@dataclass(frozen=True)
class FeedRow:
    sequence: int
    item_id: str
    item_type: str
    producer_id: str
    thread_id: str | None
    resource_id: str
    collection_id: str | None
    committed_at: int
    subject: str | None
    #: a receipt item's subject (the message or the collection of the item it is about, and that
    #: item's type), the consumer and the stage it reports
    receipt_of: str | None = None
    receipt_of_type: str | None = None
    receipt_consumer: str | None = None
    receipt_stage: str | None = None


#: The feed filters the page may set, each an equality on one column of ``feed_items`` with an
#: index ``(space_id, column, sequence)``, most selective first: of the filters set, the first
#: one's index is read; the others are checked on its rows (a unary ``+`` keeps SQLite from
#: choosing the item type's index, which matches about a third of the feed).
FEED_FILTER_COLUMNS = ("thread_id", "producer_id", "item_type")


def feed_page(space_id: str, before: str, limit: int, item_type: str | None,
              producer_id: str | None, thread_id: str | None) -> Statement:
    """Up to ``limit`` items before ``before``, newest first, filtered where a filter is set.
    Only the filters set are in the ``WHERE`` (an ``:x IS NULL OR`` form would keep SQLite
    from using the index of the filtered column)."""
    columns = select_list(FeedRow, "f.", sequence=SEQUENCE, subject="m.subject",
                          receipt_of="ru.subject_resource_id",
                          receipt_of_type="(SELECT s.item_type FROM feed_items s"
                                          " WHERE s.item_id = ru.subject_item_id)",
                          receipt_consumer="ru.consumer_id",
                          receipt_stage="ru.stage")
    params: dict[str, SqlValue] = {"space_id": space_id, "before": before, "limit": limit}
    conditions = ["f.space_id = :space_id", "f.sequence < CAST(:before AS INTEGER)"]
    indexed = False
    for column, value in zip(FEED_FILTER_COLUMNS, (thread_id, producer_id, item_type),
                             strict=True):
        if value is not None:
            conditions.append(f"{'+' if indexed else ''}f.{column} = :{column}")
            params[column] = value
            indexed = True
    return stmt(f"""
        SELECT {columns}
        FROM feed_items f
        LEFT JOIN messages m ON f.item_type = 'message' AND m.space_id = f.space_id
            AND m.message_id = f.resource_id
        LEFT JOIN feed_receipt_updates ru ON f.item_type = 'receipt'
            AND ru.space_id = f.space_id AND ru.item_id = f.item_id
        WHERE {" AND ".join(conditions)}
        ORDER BY f.sequence DESC LIMIT :limit""", params)


def feed_from(row: Row) -> FeedRow:
    return decode(FeedRow, row, sequence=int)


@dataclass(frozen=True)
class MessageRow:
    message_id: str
    producer_id: str
    thread_id: str
    in_reply_to: str | None
    kind: str
    subject: str
    body: str
    body_size: int
    body_sha256: bytes
    metadata_json: str | None
    committed_at: int
    item_id: str
    sequence: int


def message(space_id: str, message_id: str) -> Statement:
    columns = select_list(MessageRow, "m.", item_id="f.item_id", sequence=SEQUENCE)
    return stmt(f"""
        SELECT {columns}
        FROM messages m JOIN feed_items f ON f.space_id = m.space_id
            AND f.item_type = 'message' AND f.resource_id = m.message_id
        WHERE m.space_id = :space_id AND m.message_id = :message_id""",
        {"space_id": space_id, "message_id": message_id})


def message_from(row: Row) -> MessageRow:
    return decode(MessageRow, row, sequence=int)


def recipients(space_id: str, message_id: str) -> Statement:
    return stmt("""SELECT actor_id FROM message_recipients
                   WHERE space_id = :space_id AND message_id = :message_id ORDER BY actor_id""",
                {"space_id": space_id, "message_id": message_id})


@dataclass(frozen=True)
class AttachmentRow:
    position: int
    blob_id: str
    content_type: str | None
    size: int | None
    filename: str | None


def attachments(space_id: str, message_id: str) -> Statement:
    columns = select_list(AttachmentRow, "b.", position="a.position", blob_id="a.blob_id")
    return stmt(f"""
        SELECT {columns}
        FROM message_attachments a
        LEFT JOIN blobs b ON b.space_id = a.space_id AND b.blob_id = a.blob_id
        WHERE a.space_id = :space_id AND a.message_id = :message_id ORDER BY a.position""",
        {"space_id": space_id, "message_id": message_id})


@dataclass(frozen=True)
class ReceiptStep:
    """One version of a receipt, from the receipt history (each step is its own feed item)."""

    receipt_id: str
    consumer_id: str
    actor_id: str
    receipt_version: int
    stage: str
    updated_at: int
    item_id: str


def receipt_history(space_id: str, subject_item_id: str, limit: int) -> Statement:
    """Every version of every receipt about one feed item, by consumer then version."""
    return stmt(f"""
        SELECT {select_list(ReceiptStep)} FROM feed_receipt_updates
        WHERE space_id = :space_id AND subject_item_id = :subject
        ORDER BY consumer_id, receipt_id, receipt_version LIMIT :limit""",
        {"space_id": space_id, "subject": subject_item_id, "limit": limit})


def step_from(row: Row) -> ReceiptStep:
    return decode(ReceiptStep, row)


@dataclass(frozen=True)
class CheckpointRow:
    consumer_id: str
    actor_id: str
    view: str
    view_revision: int
    disabled: bool
    checkpoint_view_revision: int | None
    grant_fingerprint: bytes | None
    sequence: int | None
    updated_at: int | None
    behind: int


def checkpoints(space_id: str, limit: int, count_cap: int) -> Statement:
    """Each consumer with its checkpoint per (view revision, grants) and how many items of its
    view come after it (the whole space for ``space_log``, the actor's inbox for ``inbox``),
    counted up to ``count_cap`` (so a far-behind consumer costs at most that many index steps)."""
    columns = select_list(
        CheckpointRow, "c.", checkpoint_view_revision="k.view_revision",
        grant_fingerprint="k.grant_fingerprint", sequence="CAST(k.sequence AS TEXT)",
        updated_at="k.updated_at", behind="""CASE c.view
            WHEN 'space_log' THEN (SELECT count(*) FROM (SELECT 1 FROM feed_items f
                WHERE f.space_id = c.space_id AND f.sequence > coalesce(k.sequence, 0)
                LIMIT :cap))
            ELSE (SELECT count(*) FROM (SELECT 1 FROM feed_recipients r
                WHERE r.space_id = c.space_id AND r.actor_id = c.actor_id
                AND r.sequence > coalesce(k.sequence, 0) LIMIT :cap)) END""")
    return stmt(f"""
        SELECT {columns}
        FROM consumers c
        LEFT JOIN consumer_checkpoints k ON k.space_id = c.space_id
            AND k.consumer_id = c.consumer_id
        WHERE c.space_id = :space_id
        ORDER BY c.consumer_id, k.view_revision DESC, k.grant_fingerprint LIMIT :limit""",
        {"space_id": space_id, "limit": limit, "cap": count_cap})


def checkpoint_from(row: Row) -> CheckpointRow:
    return decode(CheckpointRow, row, disabled=bool, sequence=int)


def head(space_id: str) -> Statement:
    """The space's newest sequence (as text; none when the feed is empty)."""
    return stmt(f"""SELECT {SEQUENCE} FROM feed_items f WHERE f.space_id = :space_id
                    ORDER BY f.sequence DESC LIMIT 1""", {"space_id": space_id})


def items_per_hour(space_id: str, since: int) -> Statement:
    """``(hour, count)`` of the space's newest :data:`CHART_WINDOW` items committed since
    ``since`` (hours are UTC milliseconds divided by 3,600,000)."""
    return stmt("""
        SELECT committed_at / 3600000 AS hour, count(*) AS items FROM (
            SELECT committed_at FROM feed_items WHERE space_id = :space_id
            ORDER BY sequence DESC LIMIT :window)
        WHERE committed_at >= :since GROUP BY hour ORDER BY hour""",
        {"space_id": space_id, "since": since, "window": CHART_WINDOW})


@dataclass(frozen=True)
class RevisionSummary:
    revision: int
    parent_revision: int
    manifest_blob_id: str
    state_fingerprint: bytes
    committed_at: int
    active: int


def revisions(space_id: str, collection_id: str, before: int, limit: int) -> Statement:
    columns = select_list(RevisionSummary, "r.", active=f"""(SELECT count(*)
        FROM memory_entries i WHERE i.space_id = r.space_id
        AND i.collection_id = r.collection_id AND {at_revision("i.", "r.revision")}
        AND i.entry_kind = 'active')""")
    return stmt(f"""
        SELECT {columns} FROM memory_revisions r
        WHERE r.space_id = :space_id AND r.collection_id = :cid AND r.revision < :before
        ORDER BY r.revision DESC LIMIT :limit""",
        {"space_id": space_id, "cid": collection_id, "before": before, "limit": limit})


def revision_from(row: Row) -> RevisionSummary:
    return decode(RevisionSummary, row)


def entries(space_id: str, collection_id: str, revision: int, after: str,
            limit: int) -> Statement:
    """A fixed revision's entries after ``after`` in item-id order."""
    return stmt(f"""
        SELECT {ENTRY_COLUMNS} FROM memory_entries
        WHERE space_id = :space_id AND collection_id = :cid AND item_id > :after
            AND {at_revision()}
        ORDER BY item_id LIMIT :limit""",
        {"space_id": space_id, "cid": collection_id, "revision": revision, "after": after,
         "limit": limit})


def entry_from(row: Row) -> EntryRow:
    return decode(EntryRow, row)


@dataclass(frozen=True)
class DiffRow:
    """An entry that differs between revision ``a`` and revision ``b`` (``None``: absent)."""

    item_id: str
    a_kind: str | None
    a_path: str | None
    a_blob_id: str | None
    a_metadata: str | None
    b_kind: str | None
    b_path: str | None
    b_blob_id: str | None
    b_metadata: str | None


def diff(space_id: str, collection_id: str, a: int, b: int, after: str, limit: int) -> Statement:
    """Entries after ``after`` (item-id order) whose kind, path, blob or metadata differ."""
    params: dict[str, SqlValue] = {"space_id": space_id, "cid": collection_id, "a": a, "b": b,
                                   "after": after, "limit": limit}
    same = "i.space_id = :space_id AND i.collection_id = :cid AND i.item_id > :after"
    side = ("LEFT JOIN memory_entries {x} ON {x}.space_id = :space_id"
            " AND {x}.collection_id = :cid AND {x}.item_id = ids.item_id AND {at}")
    # an item differs only where one of its rows starts or ends between the two revisions
    between = ("(i.from_revision > min(:a, :b) AND i.from_revision <= max(:a, :b))"
               " OR (i.until_revision > min(:a, :b) AND i.until_revision <= max(:a, :b))")
    return stmt(f"""
        SELECT * FROM (
            SELECT ids.item_id AS item_id,
                a.entry_kind AS a_kind, a.path AS a_path, a.blob_id AS a_blob_id,
                a.metadata_json AS a_metadata,
                b.entry_kind AS b_kind, b.path AS b_path, b.blob_id AS b_blob_id,
                b.metadata_json AS b_metadata
            FROM (SELECT DISTINCT i.item_id FROM memory_entries i WHERE {same} AND ({between}))
                ids
            {side.format(x="a", at=at_revision("a.", ":a"))}
            {side.format(x="b", at=at_revision("b.", ":b"))})
        WHERE a_kind IS NOT b_kind OR a_path IS NOT b_path OR a_blob_id IS NOT b_blob_id
            OR a_metadata IS NOT b_metadata
        ORDER BY item_id LIMIT :limit""", params)


def diff_from(row: Row) -> DiffRow:
    return decode(DiffRow, row)


@dataclass(frozen=True)
class UploadView:
    """An upload as the inspector lists it, with its blob's seal time."""

    upload_id: str
    blob_id: str
    owner_id: str
    expected_size: int
    content_type: str
    filename: str | None
    state: str
    created_at: int
    expires_at: int
    sealed_at: int | None


def uploads(space_id: str, after: str, limit: int) -> Statement:
    """The space's uploads after ``after`` (upload-id order) with their blobs' seal times."""
    columns = select_list(UploadView, "u.", sealed_at="b.sealed_at")
    return stmt(f"""
        SELECT {columns} FROM uploads u
        LEFT JOIN blobs b ON b.space_id = u.space_id AND b.blob_id = u.blob_id
        WHERE u.space_id = :space_id AND u.upload_id > :after
        ORDER BY u.upload_id LIMIT :limit""",
        {"space_id": space_id, "after": after, "limit": limit})


def upload_from(row: Row) -> UploadView:
    return decode(UploadView, row)


@dataclass(frozen=True)
class TokenGrants:
    """What a token was issued with, to issue its replacement (never its digest)."""

    token_id: str
    space_id: str
    actor_id: str
    consumer_id: str
    recipients_mode: str
    expires_at: int | None
    revoked_at: int | None
    scopes: str
    recipient_ids: str
    collections: str
    blob_references: str


def token_grants(space_id: str, token_id: str) -> Statement:
    columns = select_list(
        TokenGrants, "t.",
        scopes="""(SELECT json_group_array(scope) FROM (SELECT scope FROM token_scopes
            WHERE token_id = t.token_id ORDER BY scope))""",
        recipient_ids="""(SELECT json_group_array(recipient_actor_id) FROM (SELECT
            recipient_actor_id FROM token_recipient_grants WHERE token_id = t.token_id
            ORDER BY recipient_actor_id))""",
        collections="""(SELECT json_group_array(json_array(collection_id, action)) FROM (SELECT
            collection_id, action FROM token_collection_grants WHERE token_id = t.token_id
            ORDER BY collection_id, action))""",
        blob_references="""(SELECT json_group_array(blob_id) FROM (SELECT blob_id
            FROM token_blob_reference_grants WHERE token_id = t.token_id ORDER BY blob_id))""")
    return stmt(f"SELECT {columns} FROM tokens t"
                " WHERE t.token_id = :token_id AND t.space_id = :space_id",
                {"token_id": token_id, "space_id": space_id})


def grants_from(row: Row) -> TokenGrants:
    return decode(TokenGrants, row)
