"""Upload and blob plans (protocol.md §10, P15): prepare a slot, record stored content, seal
it into a blob, or claim it for cleanup — seal and cleanup race through the upload's state, so
exactly one wins."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.authority import TOKEN_DEAD, authority_params, lacks_scope
from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    Row,
    SqlValue,
    Statement,
    Verdict,
    guard,
    guard_sql,
    guarded,
    guarded_sql,
    new_plan_id,
    outcome_sql,
    plan,
    stmt,
    verdict_read,
)
from waypost.reference.storage.references import reference_grant
from waypost.reference.storage.rows import decode, names, only, select_list
from waypost.reference.storage.rules import KEY_HELD, Rule, details_of
from waypost.reference.storage.submissions import (
    BY_KEY,
    OUTCOME_COLUMNS,
    Decided,
    decided_from,
    key_params,
)


@dataclass(frozen=True)
class UploadRow:
    upload_id: str
    blob_id: str
    owner_id: str
    expected_size: int
    expected_sha256: bytes
    content_type: str
    filename: str | None
    object_ref: str
    expires_at: int
    state: str


UPLOAD_COLUMNS = select_list(UploadRow, "u.")


def upload_from(row: Row) -> UploadRow:
    """Decode :data:`UPLOAD_COLUMNS`."""
    return decode(UploadRow, row)


@dataclass(frozen=True)
class Slot:
    """What ``blob.prepare`` fixes: ids, object reference, expected facts, expiry."""

    submission_id: str
    upload_id: str
    blob_id: str
    object_ref: str
    size: int
    sha256: bytes
    content_type: str
    filename: str | None
    expires_at: int


#: The token, then the key. A scope refused here answers in the words of a generic refusal
#: ("forbidden: upload"): the service checks the scope before the plan, in its own words.
PREPARE_RULES = (TOKEN_DEAD, lacks_scope("forbidden: upload"), KEY_HELD)


def prepare(principal: Principal, now: int, request_id: str, fingerprint: bytes,
            slot: Slot) -> CommitPlan:
    """``blob.prepare`` as one plan: claim the key with its stable result and write the upload
    row. A key another attempt holds (a prepare is one plan, so its holder is final) refuses
    with ``KEY_TAKEN``; the outcome read gives the key's submission and its upload (decoded by
    :func:`prepared_from`)."""
    p: dict[str, SqlValue] = {
        "plan": new_plan_id(), **authority_params(principal, now, "blob.write"),
        **key_params(principal, "blob.prepare", request_id), "fingerprint": fingerprint,
        "owner_id": principal.actor_id, "submission_id": slot.submission_id,
        "upload_id": slot.upload_id, "blob_id": slot.blob_id, "object_ref": slot.object_ref,
        "size": slot.size, "sha256": slot.sha256, "content_type": slot.content_type,
        "filename": slot.filename, "expires_at": slot.expires_at}
    writes, outcome = _prepare_sql()
    return plan("prepare_upload", str(p["plan"]), [stmt(sql, p) for sql in writes],
                stmt(outcome, p), PREPARE_RULES)


@functools.cache
def _prepare_sql() -> tuple[tuple[str, ...], str]:
    writes = tuple(guarded_sql(sql) for sql in (
        f"""INSERT INTO submissions (submission_id, space_id, producer_id, operation,
                request_id, fingerprint, state, reserved_at, resource_id, object_ref, blob_id,
                result_status, committed_at)
            SELECT :submission_id, :space_id, :producer_id, :operation, :request_id,
                :fingerprint, 'committed', :now, :upload_id, :object_ref, :blob_id, 201, :now
            WHERE {GUARD_OK}""",
        f"""INSERT INTO uploads (space_id, upload_id, blob_id, owner_id, submission_id,
                expected_size, expected_sha256, content_type, filename, object_ref,
                expires_at, created_at)
            SELECT :space_id, :upload_id, :blob_id, :owner_id, :submission_id, :size,
                :sha256, :content_type, :filename, :object_ref, :expires_at, :now
            WHERE {GUARD_OK}"""))
    return (guard_sql(PREPARE_RULES), *writes), outcome_sql(
        f"{OUTCOME_COLUMNS.format(details=details_of(PREPARE_RULES))}, {_aliased(UploadRow, 'u')}",
        f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id"
        "\n    LEFT JOIN uploads u ON u.submission_id = s.submission_id")


def _aliased(shape: type[Any], table: str) -> str:
    """The columns of ``shape`` from ``table``, each named ``<table>_<column>``: after a
    submission's columns in one outcome read, a name in both would collapse in D1's rows."""
    return ", ".join(f"{table}.{name} AS {table}_{name}" for name in names(shape))


def prepared_from(rows: Sequence[Row]) -> tuple[Decided, UploadRow | None]:
    """Decode the outcome read of :func:`prepare`: the decision, and the key's upload."""
    decided = decided_from(rows, extra=len(names(UploadRow)))
    upload = None if decided.extra[0] is None else upload_from(decided.extra)
    return decided, upload


def upload_statement(space_id: str, upload_id: str) -> Statement:
    return stmt(f"SELECT {UPLOAD_COLUMNS} FROM uploads u WHERE u.space_id = :space_id"
                " AND u.upload_id = :upload_id", {"space_id": space_id, "upload_id": upload_id})


def upload_by_submission(submission_id: str) -> Statement:
    return stmt(f"SELECT {UPLOAD_COLUMNS} FROM uploads u WHERE u.submission_id = :sid",
                {"sid": submission_id})


_HERE = "space_id = :space_id AND upload_id = :upload_id"
#: The upload expired (stored or not: an expired upload can no longer be sealed) or is being
#: cleaned.
MARK_STORED_RULES = (Rule(
    "UPLOAD_EXPIRED", f"EXISTS (SELECT 1 FROM uploads WHERE {_HERE} AND (state IN ('cleaning',"
    " 'cleaned') OR (state IN ('awaiting', 'stored') AND expires_at <= :now)))", None,
    "UPLOAD_EXPIRED", "upload_id", "the upload expired"),)


def mark_stored(space_id: str, upload_id: str, now: int) -> CommitPlan:
    """The verified content is in place: awaiting → stored, unless :data:`MARK_STORED_RULES`
    refuse."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {"space_id": space_id, "upload_id": upload_id, "now": now}
    writes = [guard(plan_id, MARK_STORED_RULES, p), guarded(plan_id, f"""
        UPDATE uploads SET state = 'stored', stored_at = :now
        WHERE {_HERE} AND state = 'awaiting' AND {GUARD_OK}""", p)]
    return plan("mark_stored", plan_id, writes, _upload_state_read(plan_id, p), MARK_STORED_RULES)


def _upload_state_read(plan_id: str, params: dict[str, SqlValue]) -> Statement:
    """The verdict and the state of upload ``:upload_id`` after the plan (a :class:`Verdict`)."""
    return verdict_read(plan_id, Verdict, "JOIN uploads u ON u.space_id = :space_id"
                        " AND u.upload_id = :upload_id", params, state="u.state")


def seal(principal: Principal, now: int, request_id: str, fingerprint: bytes,
         submission_id: str, upload_id: str) -> CommitPlan:
    """``blob.commit`` as one plan: claim the key and seal the caller's stored upload into a
    blob. An expired or cleaned upload is the key's recorded ``UPLOAD_EXPIRED``; sealing a
    sealed upload again answers the same blob; a key another attempt holds refuses with
    ``KEY_TAKEN``. The outcome read gives the key's submission and its blob (decoded by
    :func:`sealed_from`)."""
    p: dict[str, SqlValue] = {
        "plan": new_plan_id(), **authority_params(principal, now, "blob.write"),
        **key_params(principal, "blob.commit", request_id), "fingerprint": fingerprint,
        "owner_id": principal.actor_id, "submission_id": submission_id, "upload_id": upload_id}
    writes, outcome = _seal_sql()
    return plan("seal_upload", str(p["plan"]), [stmt(sql, p) for sql in writes],
                stmt(outcome, p), SEAL_RULES)


_MINE = ("FROM uploads WHERE space_id = :space_id AND upload_id = :upload_id"
         " AND owner_id = :owner_id")
#: Verdicts of :func:`seal` besides ``ok`` and ``KEY_TAKEN``.
UPLOAD_NOT_FOUND, EXPIRED, NOT_READY = "UPLOAD_NOT_FOUND", "UPLOAD_EXPIRED", "NOT_READY"
SEAL_RULES = (
    *PREPARE_RULES,
    Rule(UPLOAD_NOT_FOUND, f"NOT EXISTS (SELECT 1 {_MINE})", None, "NOT_FOUND", "",
         "upload not found"),
    Rule(EXPIRED, f"EXISTS (SELECT 1 {_MINE} AND (state IN ('cleaning', 'cleaned') OR"
         " (state <> 'sealed' AND expires_at <= :now)))", None, "", "",
         "the key's stable result: the upload expired"),
    Rule(NOT_READY, f"EXISTS (SELECT 1 {_MINE} AND state = 'awaiting')", None, "NOT_READY",
         "upload_id", "the upload has no verified content yet"),
)


@functools.cache
def _seal_sql() -> tuple[tuple[str, ...], str]:
    settled = f"g.verdict IN ('ok', '{EXPIRED}')"
    key = f"""INSERT INTO submissions (submission_id, space_id, producer_id, operation,
            request_id, fingerprint, state, reserved_at, resource_id, blob_id, result_status,
            committed_at, error_code)
        SELECT :submission_id, :space_id, :producer_id, :operation, :request_id, :fingerprint,
            CASE g.verdict WHEN 'ok' THEN 'committed' ELSE 'failed' END, :now, :upload_id,
            CASE g.verdict WHEN 'ok' THEN (SELECT blob_id {_MINE}) END,
            CASE g.verdict WHEN 'ok' THEN 200 ELSE 410 END, :now,
            CASE g.verdict WHEN 'ok' THEN NULL ELSE '{EXPIRED}' END
        FROM commit_guards g WHERE g.plan_id = :plan AND {settled}"""
    writes = (key, *(guarded_sql(sql) for sql in (
        f"""INSERT INTO blobs (space_id, blob_id, owner_id, object_ref, size, sha256,
                content_type, filename, sealed_at)
            SELECT space_id, blob_id, owner_id, object_ref, expected_size, expected_sha256,
                content_type, filename, :now {_MINE} AND state = 'stored' AND {GUARD_OK}""",
        f"""UPDATE uploads SET state = 'sealed' WHERE space_id = :space_id
            AND upload_id = :upload_id AND state = 'stored' AND {GUARD_OK}""")))
    return (guard_sql(SEAL_RULES), *writes), outcome_sql(
        f"{OUTCOME_COLUMNS.format(details='NULL AS details')}, {_aliased(BlobRow, 'b')}",
        f"{BY_KEY}\n    LEFT JOIN feed_items f ON f.item_id = s.feed_item_id"
        "\n    LEFT JOIN blobs b ON b.blob_id = s.blob_id")


def sealed_from(rows: Sequence[Row]) -> tuple[Decided, BlobRow | None]:
    """Decode the outcome read of :func:`seal`: the decision, and the key's blob if sealed."""
    decided = decided_from(rows, extra=len(names(BlobRow)))
    blob = None if decided.extra[0] is None else blob_from(decided.extra)
    return decided, blob


@dataclass(frozen=True)
class BlobRow:
    """A sealed blob: its immutable verified facts."""

    blob_id: str
    owner_id: str
    object_ref: str
    size: int
    sha256: bytes
    content_type: str
    filename: str | None
    sealed_at: int


BLOB_COLUMNS = select_list(BlobRow)


def blob_from(row: Row) -> BlobRow:
    """Decode :data:`BLOB_COLUMNS`."""
    return decode(BlobRow, row)


def blob_statement(space_id: str, blob_id: str) -> Statement:
    """A blob of the space, decoded by :func:`blob_from`."""
    return stmt(f"SELECT {BLOB_COLUMNS} FROM blobs WHERE space_id = :space_id AND blob_id = :blob_id",
                {"space_id": space_id, "blob_id": blob_id})


def blob_by_id(blob_id: str) -> Statement:
    """A blob by its (globally unique, server-generated) id, for rebuilding stable results."""
    return stmt(f"SELECT {BLOB_COLUMNS} FROM blobs WHERE blob_id = :blob_id",
                {"blob_id": blob_id})


def blob_readers_statement(principal: Principal, blob_id: str) -> Statement:
    """1 if the principal may read the blob (P16): owner, a reader of a message attaching it,
    a reader of a revision referencing it (entry or manifest), or a ``blob.reference`` grant
    (see :func:`readable_from`)."""
    return stmt(f"""
        SELECT EXISTS (SELECT 1 FROM blobs b WHERE b.space_id = :space_id
                AND b.blob_id = :blob_id AND b.owner_id = :actor_id)
            OR {reference_grant(":blob_id")}
            OR EXISTS (SELECT 1 FROM message_attachments a JOIN messages m
                ON m.space_id = a.space_id AND m.message_id = a.message_id
                WHERE a.space_id = :space_id AND a.blob_id = :blob_id AND :reads = 1 AND (
                    m.producer_id = :actor_id OR :observes = 1 OR EXISTS (
                        SELECT 1 FROM message_recipients r WHERE r.space_id = m.space_id
                        AND r.message_id = m.message_id AND r.actor_id = :actor_id)))
            OR (:memory_reads = 1 AND (
                EXISTS (SELECT 1 FROM memory_entries e WHERE e.space_id = :space_id
                    AND e.blob_id = :blob_id AND {_READ_GRANT.format(c="e")})
                OR EXISTS (SELECT 1 FROM memory_revisions v WHERE v.space_id = :space_id
                    AND v.manifest_blob_id = :blob_id AND {_READ_GRANT.format(c="v")})))
            AS readable""",
        {"space_id": principal.space_id, "blob_id": blob_id, "actor_id": principal.actor_id,
         "token_id": principal.token_id, "reads": int(principal.has("message.read")),
         "observes": int(principal.has("space.observe")),
         "memory_reads": int(principal.has("memory.read"))})


def readable_from(rows: Sequence[Row]) -> bool:
    """The answer of :func:`blob_readers_statement`."""
    return bool(only(rows)[0])


_READ_GRANT = ("EXISTS (SELECT 1 FROM token_collection_grants g WHERE g.token_id = :token_id"
               " AND g.collection_id = {c}.collection_id AND g.action = 'read')")


def claim_expired(now: int) -> CommitPlan:
    """Expired, unsealed uploads → cleaning (the claim that races with sealing)."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {"now": now}
    writes = [guard(plan_id, [], p), guarded(plan_id, f"""
        UPDATE uploads SET state = 'cleaning'
        WHERE state IN ('awaiting', 'stored') AND expires_at <= :now AND {GUARD_OK}""", p)]
    pairs = ", ".join(f"'{name}', {name}" for name in names(Claimed))
    outcome = stmt(f"""SELECT json_group_array(json_object({pairs})) AS claimed
                       FROM uploads WHERE state = 'cleaning'""")
    return plan("claim_expired", plan_id, writes, outcome)


@dataclass(frozen=True)
class Claimed:
    """An upload claimed for cleanup: where it is and whose bytes to remove."""

    space_id: str
    upload_id: str
    object_ref: str


def claimed_from(rows: Sequence[Row]) -> list[Claimed]:
    """The uploads in ``cleaning`` that :func:`claim_expired`'s outcome lists."""
    return [Claimed(**claimed) for claimed in json.loads(only(rows)[0])]


def mark_cleaned(space_id: str, upload_id: str) -> CommitPlan:
    """A claimed upload whose bytes are gone is ``cleaned``; the outcome reads its state."""
    plan_id = new_plan_id()
    p: dict[str, SqlValue] = {"space_id": space_id, "upload_id": upload_id}
    writes = [guard(plan_id, [], p), guarded(plan_id, f"""
        UPDATE uploads SET state = 'cleaned' WHERE space_id = :space_id
        AND upload_id = :upload_id AND state = 'cleaning' AND {GUARD_OK}""", p)]
    return plan("mark_cleaned", plan_id, writes, _upload_state_read(plan_id, p))
