"""Token look-ups: one consistent read of a token, its actor, consumer, scopes and grants."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.adapters.sql.driver import Driver
from waypost.adapters.sql.plan import stmt
from waypost.reference.grants import Grants
from waypost.reference.principal import ConsumerView, Principal


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
    by_token = {"token_id": token_id}
    rows, scopes, recipients, collections, blobs, filters = await driver.read([
        stmt("""SELECT t.token_digest, t.revoked_at, t.expires_at, t.space_id, t.actor_id,
                    t.consumer_id, t.recipients_mode, t.grant_fingerprint,
                    a.disabled, a.authority_version, c.disabled, c.view, c.view_revision
                FROM tokens t
                JOIN actors a ON a.space_id = t.space_id AND a.actor_id = t.actor_id
                JOIN consumers c ON c.space_id = t.space_id AND c.consumer_id = t.consumer_id
                WHERE t.token_id = :token_id""", by_token),
        stmt("SELECT scope FROM token_scopes WHERE token_id = :token_id", by_token),
        stmt("SELECT recipient_actor_id FROM token_recipient_grants WHERE token_id = :token_id",
             by_token),
        stmt("SELECT collection_id, action FROM token_collection_grants"
             " WHERE token_id = :token_id", by_token),
        stmt("SELECT blob_id FROM token_blob_reference_grants WHERE token_id = :token_id",
             by_token),
        stmt("""SELECT f.dimension, f.value FROM consumer_filters f JOIN tokens t
                ON f.space_id = t.space_id AND f.consumer_id = t.consumer_id
                WHERE t.token_id = :token_id ORDER BY f.dimension, f.value""", by_token),
    ])
    if not rows:
        return None
    (digest, revoked_at, expires_at, space_id, actor_id, consumer_id, mode, grant_fp,
     actor_disabled, authority_version, consumer_disabled, view, view_revision) = rows[0]
    filter_: dict[str, list[str]] = {}
    for dimension, value in filters:
        filter_.setdefault(str(dimension), []).append(str(value))
    grants = Grants(
        frozenset(str(row[0]) for row in scopes), mode == "any",
        frozenset(str(row[0]) for row in recipients),
        frozenset((str(row[0]), str(row[1])) for row in collections),
        frozenset(str(row[0]) for row in blobs))
    consumer = ConsumerView(str(consumer_id), str(view), int(view_revision),
                            {dim: tuple(vals) for dim, vals in filter_.items()})
    principal = Principal(token_id, str(space_id), str(actor_id), int(authority_version),
                          consumer, grants, bytes(grant_fp),
                          expires_at if isinstance(expires_at, int) else None)
    return TokenState(bytes(digest), revoked_at is not None,
                      principal.expires_at, bool(actor_disabled), bool(consumer_disabled),
                      principal)
