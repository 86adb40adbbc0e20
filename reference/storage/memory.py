"""Memory plans and reads (protocol.md §9, P11–P14): stage a publish's inputs, commit a revision
(CAS on the head, no-op by state fingerprint, conflict recorded), read fixed revisions.

Entry rows are valid over a range of revisions (``memory_entries``, migration 0003): the commit
closes the rows a publish replaces and opens their successors, from the staged inputs, in three
statements, so what it writes is what changed. A revision's page is one range of the primary key;
the head's pages (a manifest being built) are one range of the open rows' index.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from waypost.reference.domain.memory_change import Open, Totals
from waypost.reference.domain.memory_state import Entry
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.values import MAX_REVISION
from waypost.reference.storage.authority import authority_params
from waypost.reference.storage.plan import (
    GUARD_OK,
    SEQUENCE,
    CommitPlan,
    Row,
    SqlValue,
    Statement,
    guard,
    guarded,
    new_plan_id,
    plan,
    stmt,
)
from waypost.reference.storage.publish_rules import (
    COLLECTION,
    COMMIT_RULES,
    CONFLICT,
    HEAD,
    STAGE_RULES,
    STAGED,
    UNCHANGED,
)
from waypost.reference.storage.rows import decode, select_list
from waypost.reference.storage.submissions import record_read, settle_on_verdict, state_read

#: Staged inputs per INSERT statement, one JSON parameter each: at most this many inputs and
#: this many bytes of JSON (D1 takes values up to 2,000,000 bytes), so any publish is a few
#: statements.
STAGE_CHUNK = 500
STAGE_CHUNK_BYTES = 1_900_000

@dataclass(frozen=True)
class StagedInput:
    """One upsert (path, blob, canonical metadata JSON) or delete (all three ``None``)."""

    item_id: str
    path: str | None = None
    blob_id: str | None = None
    metadata_json: str | None = None


@dataclass(frozen=True)
class CollectionRow:
    """A collection with its head revision."""

    collection_id: str
    source_actor_id: str
    scope: str
    current_revision: int
    created_at: int


COLLECTION_COLUMNS = select_list(CollectionRow)


def collection_from(row: Row) -> CollectionRow:
    """Decode :data:`COLLECTION_COLUMNS`."""
    return decode(CollectionRow, row)


def collection_statement(space_id: str, collection_id: str) -> Statement:
    """One collection of the space, decoded by :func:`collection_from`."""
    return stmt(f"""SELECT {COLLECTION_COLUMNS}
                   FROM collections WHERE space_id = :space_id AND collection_id = :cid""",
                {"space_id": space_id, "cid": collection_id})


@dataclass(frozen=True)
class RevisionRow:
    """A published revision's metadata with the sequence of its feed item."""

    revision: int
    parent_revision: int
    manifest_blob_id: str
    state_fingerprint: bytes
    committed_at: int
    feed_item_id: str
    sequence: int


def revision_from(row: Row) -> RevisionRow:
    """Decode a row of :func:`revision_statement` (the sequence arrives as decimal text)."""
    return decode(RevisionRow, row, sequence=int)


def revision_statement(space_id: str, collection_id: str, revision: int) -> Statement:
    """A published revision's metadata with the sequence of its feed item."""
    return stmt(f"""SELECT {select_list(RevisionRow, "r.", sequence=SEQUENCE)}
                   FROM memory_revisions r JOIN feed_items f ON f.item_id = r.feed_item_id
                   WHERE r.space_id = :space_id AND r.collection_id = :cid
                     AND r.revision = :revision""",
                {"space_id": space_id, "cid": collection_id, "revision": revision})


#: An entry as manifests and item pages show it, as SQL over the columns of a row (``{x}``: its
#: prefix): the canonical JSON of an active entry, of a tombstone deleted in ``{rev}``. Composed
#: without json_quote(), whose escapes differ between SQLite builds (D1's among them): ids are
#: ``[A-Za-z0-9_-]`` and a path holds no control character and no backslash (protocol.md §3),
#: so RFC 8785 escapes only a path's quotes (migration 0003 checks ``entry_bytes`` the same way).
ACTIVE_JSON = """'{{"blob_id":"' || {x}blob_id || '","item_id":"' || {x}item_id
        || '","metadata":' || {x}metadata_json || ',"path":"'
        || replace({x}path, '"', '\\"') || '","state":"active"}}'"""
TOMBSTONE_JSON = """'{{"deleted_in_revision":' || {rev} || ',"item_id":"' || {x}item_id
        || '","state":"tombstone"}}'"""


#: The revision being published, as text the way SQLite writes an INTEGER column: D1 binds every
#: number as a REAL, which || would write as "2.0".
_NEW_REVISION = "CAST(:new_revision AS INTEGER)"


def entry_json(prefix: str = "") -> str:
    """SQL: the canonical JSON of the entry a row holds (the table's CHECK computes
    ``entry_bytes`` from the same text)."""
    return (f"CASE {prefix}entry_kind WHEN 'active' THEN {ACTIVE_JSON.format(x=prefix)}"
            f" ELSE {TOMBSTONE_JSON.format(x=prefix, rev=prefix + 'from_revision')} END")


def at_revision(prefix: str = "", revision: str = ":revision") -> str:
    """SQL: the row is an entry of revision ``revision`` (valid over ``[from, until)``)."""
    return (f"{prefix}from_revision <= {revision} AND ({prefix}until_revision IS NULL"
            f" OR {prefix}until_revision > {revision})")


@dataclass(frozen=True)
class EntryRow:
    """An entry of one revision as stored: active, or a tombstone (path, blob and metadata
    ``NULL``; deleted in the revision its row starts)."""

    item_id: str
    entry_kind: str
    path: str | None
    blob_id: str | None
    metadata_json: str | None
    deleted_in_revision: int | None


ENTRY_COLUMNS = select_list(EntryRow, deleted_in_revision=(
    "CASE entry_kind WHEN 'tombstone' THEN from_revision END"))


def entry_from(row: Row) -> Entry:
    """Decode :data:`ENTRY_COLUMNS` into the domain's entry."""
    entry = decode(EntryRow, row)
    if entry.entry_kind == "active":
        return Entry(entry.item_id, str(entry.path), str(entry.blob_id),
                     json.loads(str(entry.metadata_json)))
    assert entry.deleted_in_revision is not None
    return Entry(entry.item_id, deleted_in_revision=entry.deleted_in_revision)


def _here(space_id: str, collection_id: str, **more: SqlValue) -> dict[str, SqlValue]:
    return {"space_id": space_id, "cid": collection_id, **more}


def entries_statement(space_id: str, collection_id: str, revision: int) -> Statement:
    """Every entry of one revision (active and tombstones), ordered by ``item_id``."""
    return stmt(f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
                    WHERE space_id = :space_id AND collection_id = :cid AND {at_revision()}
                    ORDER BY item_id""", _here(space_id, collection_id, revision=revision))


def page_statement(space_id: str, collection_id: str, revision: int, after: str,
                   include_tombstones: bool, limit: int) -> Statement:
    """Up to ``limit`` entries of ``revision`` after ``item_id`` ``after``: one range of the
    primary key (``item_id`` order), each item's rows filtered to the one valid then."""
    return stmt(f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
                    WHERE space_id = :space_id AND collection_id = :cid AND item_id > :after
                      AND {at_revision()} AND (:tombstones = 1 OR entry_kind = 'active')
                    ORDER BY item_id LIMIT :limit""",
                _here(space_id, collection_id, revision=revision, after=after,
                      tombstones=int(include_tombstones), limit=limit))


def manifest_page_statement(space_id: str, collection_id: str, head: int, after: str,
                            limit: int) -> Statement:
    """Up to ``limit`` entries of the head revision ``head`` after ``after`` as ``(item_id,
    entry_kind, entry_json)``: the canonical JSON a manifest holds, composed by the database.
    The head's entries are the open rows, one range of their index whatever the history; were
    the head to move meanwhile, the publish reading them conflicts and never commits them."""
    return stmt(f"""SELECT item_id, entry_kind, {entry_json()} AS entry_json
                    FROM memory_entries
                    WHERE space_id = :space_id AND collection_id = :cid AND item_id > :after
                      AND until_revision IS NULL AND from_revision <= :revision
                    ORDER BY item_id LIMIT :limit""",
                _here(space_id, collection_id, revision=head, after=after, limit=limit))


def json_arrays(encoded: Iterable[str], most: int | None = None) -> list[str]:
    """JSON values (each already encoded) as JSON arrays of at most ``most`` values and about
    :data:`STAGE_CHUNK_BYTES` bytes each (a value bound to D1 may be 2,000,000 bytes at most);
    a value is never split; none for no values."""
    chunks: list[str] = []
    pending: list[str] = []
    size = 0
    for value in encoded:
        length = len(value.encode()) + 1
        if pending and (len(pending) == most or size + length > STAGE_CHUNK_BYTES):
            chunks.append("[" + ",".join(pending) + "]")
            pending, size = [], 0
        pending.append(value)
        size += length
    if pending:
        chunks.append("[" + ",".join(pending) + "]")
    return chunks


def json_chunks(values: Sequence[str]) -> list[str]:
    """``values`` (texts) as :func:`json_arrays`."""
    return json_arrays(json.dumps(value, ensure_ascii=False) for value in values)


_OPEN_COLUMNS = select_list(Open, active="entry_kind = 'active'")


def outlook_statements(space_id: str, collection_id: str, item_ids: Sequence[str],
                       paths: Sequence[str]) -> list[Statement]:
    """What a publish naming ``item_ids`` and ``paths`` decides from, bounded by its input and
    read in one snapshot: the collection (:func:`collection_from`), the head's totals
    (:class:`~waypost.reference.domain.memory_change.Totals`), then the open rows of those items
    and the open active rows on those paths (:class:`~waypost.reference.domain.memory_change.Open`),
    in as many statements as their JSON needs."""
    p = _here(space_id, collection_id)
    open_here = "space_id = :space_id AND collection_id = :cid AND until_revision IS NULL"
    active = "entry_kind = 'active'"
    return [
        collection_statement(space_id, collection_id),
        stmt(f"""SELECT count(*) AS entries, coalesce(sum(entry_bytes), 0) AS entry_bytes,
                     coalesce(sum({active}), 0) AS active,
                     coalesce(sum(CASE WHEN {active} THEN entry_bytes END), 0) AS active_bytes,
                     coalesce(sum(CASE WHEN {active} THEN length(item_id) END), 0)
                         AS active_id_bytes
                 FROM memory_entries WHERE {open_here}""", p),
        *(stmt(f"""SELECT {_OPEN_COLUMNS} FROM memory_entries
                   WHERE {open_here} AND item_id IN (SELECT value FROM json_each(:ids))""",
               {**p, "ids": chunk}) for chunk in json_chunks(item_ids)),
        *(stmt(f"""SELECT {_OPEN_COLUMNS} FROM memory_entries
                   WHERE {open_here} AND {active}
                     AND path IN (SELECT value FROM json_each(:paths))""",
               {**p, "paths": chunk}) for chunk in json_chunks(paths)),
    ]


def totals_from(rows: Sequence[Row]) -> Totals:
    """Decode the totals of :func:`outlook_statements`."""
    return decode(Totals, rows[0])


def open_from(row: Row) -> Open:
    """Decode an open row of :func:`outlook_statements` (``active`` arrives as 0 or 1)."""
    return decode(Open, row, active=bool)


def stage(principal: Principal, now: int, submission_id: str, inputs: Sequence[StagedInput],
          sha256: bytes, size: int) -> CommitPlan:
    """Stage the inputs and record the manifest object's facts (``reserved`` → ``prepared``)
    in one plan; a submission no longer reserved is left alone (the outcome reads its state)."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {**authority_params(principal, now, ""),
                              "submission_id": submission_id, "sha256": sha256, "size": size}
    writes = [guard(plan_id, STAGE_RULES, p)]
    for chunk in stage_chunks(inputs):
        writes.append(guarded(plan_id, f"""
            INSERT INTO memory_publish_inputs (submission_id, item_id, action, path, blob_id,
                metadata_json)
            SELECT :submission_id, value ->> 0,
                CASE WHEN value ->> 1 IS NULL THEN 'delete' ELSE 'upsert' END,
                value ->> 1, value ->> 2, value ->> 3
            FROM json_each(:chunk) WHERE {GUARD_OK}""", {**p, "chunk": chunk}))
    writes.append(guarded(plan_id, f"""
        UPDATE submissions SET state = 'prepared', object_sha256 = :sha256, object_size = :size,
            prepared_at = :now
        WHERE submission_id = :submission_id AND state = 'reserved' AND {GUARD_OK}""", p))
    return plan("stage_publish", plan_id, writes, state_read(plan_id, p), STAGE_RULES)


def stage_chunks(inputs: Sequence[StagedInput]) -> list[str]:
    """The inputs as JSON arrays of at most :data:`STAGE_CHUNK` items and about
    :data:`STAGE_CHUNK_BYTES` bytes each (an input is never split)."""
    return json_arrays((json.dumps([i.item_id, i.path, i.blob_id, i.metadata_json],
                                   ensure_ascii=False) for i in inputs), STAGE_CHUNK)


@dataclass(frozen=True)
class RevisionCommit:
    """What the commit needs beyond the submission row (which holds the reserved manifest blob
    id, its object reference and facts, and the feed item id)."""

    submission_id: str
    collection_id: str
    expected_revision: int
    mode: str
    #: the fingerprint of the state this publish produces on the expected revision; ``None``
    #: when the caller did not compute it (the head had moved: the guard records a conflict)
    state_fingerprint: bytes | None
    empty_fingerprint: bytes
    upload_id: str


def _entry_writes(mode: str, staged: str) -> list[str]:
    """The new revision's rows, written as what changed: the open rows it replaces are closed
    (``until_revision``), then deleted or unlisted active entries become tombstones and changed
    upserts open new rows. An upsert equal to its open active row leaves that row open."""
    open_here = "space_id = :space_id AND collection_id = :cid AND until_revision IS NULL"
    upsert_of = f"SELECT 1 FROM {staged} AND i.item_id = {{x}}item_id AND i.action = 'upsert'"
    same = ("{x}entry_kind = 'active' AND i.path IS {x}path AND i.blob_id IS {x}blob_id"
            " AND i.metadata_json IS {x}metadata_json")
    named = f"item_id IN (SELECT i.item_id FROM {staged})"
    goes = ("entry_kind = 'active' AND " + ("TRUE" if mode == "snapshot" else
            f"EXISTS (SELECT 1 FROM {staged} AND i.item_id = memory_entries.item_id"
            " AND i.action = 'delete')"))
    columns = """INSERT INTO memory_entries (space_id, collection_id, item_id, from_revision,
                until_revision, entry_kind, entry_bytes, blob_id, path, metadata_json)"""
    x = "memory_entries."
    return [
        f"""UPDATE memory_entries SET until_revision = :new_revision
            WHERE {open_here} {"" if mode == "snapshot" else f"AND {named}"} AND {GUARD_OK}
              AND (EXISTS ({upsert_of.format(x=x)} AND NOT ({same.format(x=x)}))
                   OR (NOT EXISTS ({upsert_of.format(x=x)}) AND {goes}))""",
        f"""{columns}
            SELECT :space_id, :cid, e.item_id, :new_revision, NULL, 'tombstone',
                length(CAST({TOMBSTONE_JSON.format(x="e.", rev=_NEW_REVISION)} AS BLOB)),
                NULL, NULL, NULL
            FROM memory_entries e
            WHERE e.space_id = :space_id AND e.collection_id = :cid
              AND e.until_revision = :new_revision AND e.entry_kind = 'active'
              AND NOT EXISTS ({upsert_of.format(x="e.")}) AND {GUARD_OK}""",
        f"""{columns}
            SELECT :space_id, :cid, i.item_id, :new_revision, NULL, 'active',
                length(CAST({ACTIVE_JSON.format(x="i.")} AS BLOB)),
                i.blob_id, i.path, i.metadata_json
            FROM {staged} AND i.action = 'upsert'
              AND NOT EXISTS (SELECT 1 FROM memory_entries e WHERE e.space_id = :space_id
                  AND e.collection_id = :cid AND e.item_id = i.item_id
                  AND e.until_revision IS NULL)
              AND {GUARD_OK}""",
    ]


def commit_revision(principal: Principal, now: int, commit: RevisionCommit) -> CommitPlan:
    """CAS on the head: publish the revision with its rows, manifest blob, head move and feed
    item; or record ``REVISION_CONFLICT`` / unchanged as the key's stable result."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {
        **authority_params(principal, now, "memory.write"),
        "space_id": principal.space_id, "producer_id": principal.actor_id,
        "submission_id": commit.submission_id, "cid": commit.collection_id,
        "expected": commit.expected_revision, "new_revision": commit.expected_revision + 1,
        "new_fp": commit.state_fingerprint,
        "empty_fp": commit.empty_fingerprint, "upload_id": commit.upload_id,
        "max_revision": MAX_REVISION, "plan": plan_id}
    writes: list[Statement] = [guard(plan_id, COMMIT_RULES, p)]
    submission = "FROM submissions s WHERE s.submission_id = :submission_id"
    writes += [guarded(plan_id, sql, p) for sql in (
        # The manifest object becomes a sealed blob of the publisher (upload → stored → sealed).
        f"""INSERT INTO uploads (space_id, upload_id, blob_id, owner_id, submission_id,
                expected_size, expected_sha256, content_type, filename, object_ref, expires_at,
                state, created_at, stored_at)
            SELECT :space_id, :upload_id, s.blob_id, :producer_id, s.submission_id,
                s.object_size, s.object_sha256, 'application/json', NULL, s.object_ref, :now,
                'stored', :now, :now
            {submission} AND {GUARD_OK}""",
        f"""INSERT INTO blobs (space_id, blob_id, owner_id, object_ref, size, sha256,
                content_type, filename, sealed_at)
            SELECT :space_id, s.blob_id, :producer_id, s.object_ref, s.object_size,
                s.object_sha256, 'application/json', NULL, :now
            {submission} AND {GUARD_OK}""",
        f"""UPDATE uploads SET state = 'sealed' WHERE space_id = :space_id
            AND upload_id = :upload_id AND {GUARD_OK}""",
        f"""INSERT INTO feed_items (item_id, space_id, item_type, producer_id, thread_id,
                resource_id, collection_id, committed_at)
            SELECT s.feed_item_id, :space_id, 'memory_revision', :producer_id, NULL, :cid, :cid,
                :now
            {submission} AND {GUARD_OK}""",
        f"""INSERT INTO memory_revisions (space_id, collection_id, revision, parent_revision,
                submission_id, manifest_blob_id, state_fingerprint, feed_item_id, committed_at)
            SELECT :space_id, :cid, :new_revision, :expected, s.submission_id, s.blob_id,
                :new_fp, s.feed_item_id, :now
            {submission} AND {GUARD_OK}""",
        *_entry_writes(commit.mode, STAGED),
        f"""UPDATE collections SET current_revision = :new_revision
            WHERE {COLLECTION} AND {GUARD_OK}""",
        f"""UPDATE submissions SET state = 'committed', result_status = 201,
                revision = :new_revision, committed_at = :now
            WHERE submission_id = :submission_id AND {GUARD_OK}""",
    )]

    writes += [
        settle_on_verdict(plan_id, CONFLICT, "state = 'failed', result_status = 409, error_code = "
                          f"'{CONFLICT}', error_detail = json_object('current_revision', {HEAD})", p),
        settle_on_verdict(plan_id, UNCHANGED, "state = 'committed', result_status = 200, "
                          "revision = :expected", p),
        # Staged inputs are dropped once the submission is final.
        stmt("""DELETE FROM memory_publish_inputs WHERE submission_id = :submission_id
                AND EXISTS (SELECT 1 FROM submissions WHERE submission_id = :submission_id
                    AND state IN ('committed', 'failed'))""", p),
    ]
    return plan("commit_revision", plan_id, writes, record_read(plan_id, p), COMMIT_RULES)

