"""Token look-ups: one consistent read of a token, its actor, consumer, scopes and grants."""

from __future__ import annotations

import json
from dataclasses import dataclass

from waypost.reference.domain.grants import Grants
from waypost.reference.domain.principal import ConsumerView, Principal
from waypost.reference.storage.driver import Driver
from waypost.reference.storage.plan import stmt


@dataclass(frozen=True)
class TokenState:
    """A token as stored, with what decides whether it is live."""

    digest: bytes
    revoked: bool
    expires_at: int | None
    actor_disabled: bool
    consumer_disabled: bool
    principal: Principal


async def load_token(driver: Driver, token_id: str) -> TokenState | None:
    """Everything needed to authenticate ``token_id``, or None if there is no such token."""
    (rows,) = await driver.read([stmt("""
        SELECT t.token_digest, t.revoked_at, t.expires_at, t.space_id, t.actor_id,
            t.consumer_id, t.recipients_mode, t.grant_fingerprint,
            a.disabled AS actor_disabled, a.authority_version, c.disabled AS consumer_disabled, c.view,
            c.view_revision,
            (SELECT json_group_array(scope) FROM token_scopes WHERE token_id = t.token_id),
            (SELECT json_group_array(recipient_actor_id) FROM token_recipient_grants
                WHERE token_id = t.token_id),
            (SELECT json_group_array(json_array(collection_id, action))
                FROM token_collection_grants WHERE token_id = t.token_id),
            (SELECT json_group_array(blob_id) FROM token_blob_reference_grants
                WHERE token_id = t.token_id),
            (SELECT json_group_array(json_array(dimension, value)) FROM consumer_filters f
                WHERE f.space_id = t.space_id AND f.consumer_id = t.consumer_id)
        FROM tokens t
        JOIN actors a ON a.space_id = t.space_id AND a.actor_id = t.actor_id
        JOIN consumers c ON c.space_id = t.space_id AND c.consumer_id = t.consumer_id
        WHERE t.token_id = :token_id""", {"token_id": token_id})])
    if not rows:
        return None
    (digest, revoked_at, expires_at, space_id, actor_id, consumer_id, mode, grant_fp,
     actor_disabled, authority_version, consumer_disabled, view, view_revision,
     scopes, recipients, collections, blobs, filters) = rows[0]
    filter_: dict[str, list[str]] = {}
    for dimension, value in sorted(json.loads(filters)):
        filter_.setdefault(str(dimension), []).append(str(value))
    grants = Grants(
        frozenset(json.loads(scopes)), mode == "any", frozenset(json.loads(recipients)),
        frozenset((str(cid), str(action)) for cid, action in json.loads(collections)),
        frozenset(json.loads(blobs)))
    consumer = ConsumerView(str(consumer_id), str(view), int(view_revision),
                            {dim: tuple(vals) for dim, vals in filter_.items()})
    principal = Principal(token_id, str(space_id), str(actor_id), int(authority_version),
                          consumer, grants, bytes(grant_fp),
                          expires_at if isinstance(expires_at, int) else None)
    return TokenState(bytes(digest), revoked_at is not None,
                      principal.expires_at, bool(actor_disabled), bool(consumer_disabled),
                      principal)
