"""Every stored object the database vouches for, with the size and SHA-256 it was sealed with
(``waypost verify``): the sealed blobs, a revision's manifest among them (it is a blob too,
named here by its revision), a page at a time in the order of their object references (each
read one range of the blobs' unique index)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from waypost.reference.storage.plan import Row, Statement, stmt
from waypost.reference.storage.rows import decode


@dataclass(frozen=True)
class StoredObject:
    """An object reference, the facts it was sealed with, and what it is (for the report)."""

    object_ref: str
    size: int
    sha256: bytes
    what: str


_PAGE = """SELECT b.object_ref, b.size, b.sha256, COALESCE(
        (SELECT 'manifest of revision ' || r.revision || ' of collection '
                || r.space_id || '/' || r.collection_id || ' (blob ' || b.blob_id || ')'
         FROM memory_revisions r
         WHERE r.space_id = b.space_id AND r.manifest_blob_id = b.blob_id),
        'blob ' || b.space_id || '/' || b.blob_id) AS what
    FROM blobs b WHERE b.object_ref > :after ORDER BY b.object_ref LIMIT :limit"""


def page_statement(after: str, limit: int) -> Statement:
    """Up to ``limit`` stored objects after the reference ``after``."""
    return stmt(_PAGE, {"after": after, "limit": limit})


def objects_from(rows: Sequence[Row]) -> list[StoredObject]:
    """The rows of :func:`page_statement`."""
    return [decode(StoredObject, row) for row in rows]
