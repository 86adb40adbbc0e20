"""Every stored object the database vouches for, with the size and SHA-256 it was sealed with
(``waypost verify``): sealed blobs, and the revision manifests of committed publishes, a page
at a time in the order of their object references (each read is one range of a unique
index)."""

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


#: The kinds of stored objects, each a keyset read ordered by its object reference.
_PAGES = {
    # a revision's manifest is a blob too: it is named by its revision, which a user knows
    "blobs": """SELECT b.object_ref, b.size, b.sha256, COALESCE(
            (SELECT 'manifest of revision ' || r.revision || ' of collection '
                    || r.space_id || '/' || r.collection_id || ' (blob ' || b.blob_id || ')'
             FROM memory_revisions r
             WHERE r.space_id = b.space_id AND r.manifest_blob_id = b.blob_id),
            'blob ' || b.space_id || '/' || b.blob_id) AS what
        FROM blobs b WHERE b.object_ref > :after ORDER BY b.object_ref LIMIT :limit""",
    "manifests": """SELECT object_ref, object_size AS size, object_sha256 AS sha256,
            'manifest of ' || submission_id AS what
        FROM submissions WHERE object_ref IS NOT NULL AND object_ref > :after
          AND state = 'committed' AND object_sha256 IS NOT NULL AND object_size IS NOT NULL
        ORDER BY object_ref LIMIT :limit""",
}
KINDS = tuple(_PAGES)


def page_statement(kind: str, after: str, limit: int) -> Statement:
    """Up to ``limit`` objects of ``kind`` (:data:`KINDS`) after the reference ``after``."""
    return stmt(_PAGES[kind], {"after": after, "limit": limit})


def objects_from(rows: Sequence[Row]) -> list[StoredObject]:
    """The rows of :func:`page_statement`."""
    return [decode(StoredObject, row) for row in rows]
