"""Which blobs a principal may reference (P16), as SQL shared by the guards and the reads.

A blob may be referenced (attached, named by a memory entry or a manifest) when it is a sealed
blob of the space that the producer owns, or one its token holds a ``blob.reference`` grant for.
Statements using these pieces bind ``:space_id`` and ``:token_id``.
"""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.domain.principal import Principal
from waypost.reference.storage.plan import Row, Statement, json_list, stmt
from waypost.reference.storage.rows import texts


def reference_grant(blob_id: str) -> str:
    """SQL: the token ``:token_id`` holds a ``blob.reference`` grant for ``blob_id`` (an SQL
    expression, e.g. ``j.value``)."""
    return (f"EXISTS (SELECT 1 FROM token_blob_reference_grants g WHERE g.token_id = :token_id"
            f" AND g.blob_id = {blob_id})")


def referenceable(blob_id: str, owner: str) -> str:
    """SQL: ``blob_id`` is a sealed blob of ``:space_id`` that ``owner`` (an SQL expression, e.g.
    ``:producer_id``) owns or the token may reference."""
    return (f"EXISTS (SELECT 1 FROM blobs b WHERE b.space_id = :space_id AND b.blob_id = {blob_id}"
            f" AND (b.owner_id = {owner} OR {reference_grant(blob_id)}))")


def referenceable_statement(principal: Principal, blob_ids: Sequence[str]) -> Statement:
    """Which of ``blob_ids`` the principal may reference (one ``blob_id`` per row, see
    :func:`referenceable_ids`)."""
    return stmt(f"""SELECT j.value AS blob_id FROM json_each(:ids) j
                    WHERE {referenceable('j.value', ':actor_id')}""",
                {"space_id": principal.space_id, "actor_id": principal.actor_id,
                 "token_id": principal.token_id, "ids": json_list(blob_ids)})


def referenceable_ids(rows: Sequence[Row]) -> set[str]:
    """The blob ids :func:`referenceable_statement` found."""
    return set(texts(rows))
