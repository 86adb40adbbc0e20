"""Token look-ups: one consistent read of a token, its actor, consumer, scopes and grants."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from waypost.reference.domain.grants import Grants
from waypost.reference.domain.principal import ConsumerView, Principal
from waypost.reference.storage.driver import Driver
from waypost.reference.storage.plan import Row, Statement, stmt
from waypost.reference.storage.rows import decode, select_list


@dataclass(frozen=True)
class TokenState:
    """A token as stored, with what decides whether it is live."""

    digest: bytes
    revoked: bool
    expires_at: int | None
    actor_disabled: bool
    consumer_disabled: bool
    principal: Principal


@dataclass(frozen=True)
class TokenRecord:
    """A token's row with its actor's and consumer's, its scopes, grants and filter (the lists
    as JSON text)."""

    token_digest: bytes
    revoked_at: int | None
    expires_at: int | None
    space_id: str
    actor_id: str
    consumer_id: str
    recipients_mode: str
    grant_fingerprint: bytes
    actor_disabled: int
    authority_version: int
    consumer_disabled: int
    view: str
    view_revision: int
    scopes: str
    recipients: str
    collections: str
    blob_references: str
    filters: str


_TOKEN_COLUMNS = select_list(
    TokenRecord, "t.", actor_disabled="a.disabled", authority_version="a.authority_version",
    consumer_disabled="c.disabled", view="c.view", view_revision="c.view_revision",
    scopes="(SELECT json_group_array(scope) FROM token_scopes WHERE token_id = t.token_id)",
    recipients="""(SELECT json_group_array(recipient_actor_id) FROM token_recipient_grants
        WHERE token_id = t.token_id)""",
    collections="""(SELECT json_group_array(json_array(collection_id, action))
        FROM token_collection_grants WHERE token_id = t.token_id)""",
    blob_references="""(SELECT json_group_array(blob_id) FROM token_blob_reference_grants
        WHERE token_id = t.token_id)""",
    filters="""(SELECT json_group_array(json_array(dimension, value)) FROM consumer_filters f
        WHERE f.space_id = t.space_id AND f.consumer_id = t.consumer_id)""")


def token_statement(token_id: str) -> Statement:
    """The token ``token_id`` with all it decides, decoded by :func:`token_from`."""
    return stmt(f"""
        SELECT {_TOKEN_COLUMNS}
        FROM tokens t
        JOIN actors a ON a.space_id = t.space_id AND a.actor_id = t.actor_id
        JOIN consumers c ON c.space_id = t.space_id AND c.consumer_id = t.consumer_id
        WHERE t.token_id = :token_id""", {"token_id": token_id})


def token_from(token_id: str, row: Row) -> TokenState:
    """Decode :func:`token_statement`'s row into the token's state and principal."""
    return _decoded(token_id, tuple(row))


@functools.lru_cache(maxsize=1024)
def _decoded(token_id: str, row: Row) -> TokenState:
    """The decoding is a function of the row alone, so a token used again with an unchanged
    row (the common case: every request reads it) reuses its immutable decoded state; any
    change to the token, its grants, actor or consumer changes the row and decodes anew."""
    record = decode(TokenRecord, row)
    filter_: dict[str, list[str]] = {}
    for dimension, value in sorted(json.loads(record.filters)):
        filter_.setdefault(str(dimension), []).append(str(value))
    grants = Grants(
        frozenset(json.loads(record.scopes)), record.recipients_mode == "any",
        frozenset(json.loads(record.recipients)),
        frozenset((str(cid), str(action)) for cid, action in json.loads(record.collections)),
        frozenset(json.loads(record.blob_references)))
    consumer = ConsumerView(record.consumer_id, record.view, int(record.view_revision),
                            {dim: tuple(vals) for dim, vals in filter_.items()})
    expires_at = record.expires_at if isinstance(record.expires_at, int) else None
    principal = Principal(token_id, record.space_id, record.actor_id,
                          int(record.authority_version), consumer, grants,
                          bytes(record.grant_fingerprint), expires_at)
    return TokenState(bytes(record.token_digest), record.revoked_at is not None,
                      principal.expires_at, bool(record.actor_disabled),
                      bool(record.consumer_disabled), principal)


async def load_token(driver: Driver, token_id: str) -> TokenState | None:
    """Everything needed to authenticate ``token_id``, or None if there is no such token."""
    (rows,) = await driver.read([token_statement(token_id)])
    return token_from(token_id, rows[0]) if rows else None
