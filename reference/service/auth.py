"""Bearer authentication for the data plane and the control plane (protocol.md §4, P02).

Tokens look like ``tok_…​.<secret>``; only SHA-256 digests are stored and they are compared in
constant time. Unknown, malformed, revoked and expired tokens, and tokens of a disabled actor or
consumer, all answer the same ``401 UNAUTHENTICATED``.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from waypost.reference.domain.errors import Unauthenticated, credential_refused
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.values import new_id
from waypost.reference.service.context import Context
from waypost.reference.storage.tokens import load_token

#: The scheme name in any letter case (RFC 9110 §11.1, protocol.md WP-AUTH-5).
_BEARER = re.compile(r"(?i:bearer) ([A-Za-z0-9_-]{1,96})\.([A-Za-z0-9_-]{16,128})")


def token_digest(token: str) -> bytes:
    """The stored form of a secret: SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(token.encode()).digest()


def new_token() -> tuple[str, str]:
    """A fresh ``(token_id, token)`` pair; the token embeds its id to find the digest."""
    token_id = new_id("tok")
    return token_id, f"{token_id}.{secrets.token_urlsafe(32)}"


def presented_digest(authorization: str | None) -> bytes | None:
    """The digest of a well-formed bearer token, or None."""
    match = _BEARER.fullmatch(authorization or "")
    return None if match is None else token_digest(f"{match.group(1)}.{match.group(2)}")


async def authenticate(ctx: Context, authorization: str | None) -> Principal:
    """The principal behind an ``Authorization: Bearer`` header, if it is live now."""
    match = _BEARER.fullmatch(authorization or "")
    if match is None:
        raise credential_refused()
    checked_at = ctx.signal.touches  # noted before the read: a later revoke touches after it
    state = await load_token(ctx.driver, match.group(1))
    presented = token_digest(f"{match.group(1)}.{match.group(2)}")
    if state is None:
        hmac.compare_digest(presented, presented)  # same work whether or not the id exists
        raise credential_refused()
    if not hmac.compare_digest(state.digest, presented):
        raise credential_refused()
    now = ctx.clock.now_ms()
    if (state.revoked or state.actor_disabled or state.consumer_disabled
            or (state.expires_at is not None and state.expires_at <= now)):
        raise credential_refused()
    ctx.remembered.put(presented, state.principal, checked_at)
    return state.principal


def still_live(ctx: Context, principal: Principal, checked_at: int) -> bool:
    """Whether a principal whose token passed a full check after ``checked_at`` touches is
    live now without another read: no control-plane write since (this process being the
    database's only server), and the token unexpired."""
    return (ctx.sole_server and not ctx.signal.authority_since(checked_at)
            and unexpired(ctx, principal))


def unexpired(ctx: Context, principal: Principal) -> bool:
    """Whether the principal's token has not expired on the server clock."""
    return principal.expires_at is None or principal.expires_at > ctx.clock.now_ms()


def check_admin(ctx: Context, authorization: str | None) -> None:
    """The control plane's bearer must be the operator's admin token (compared as digests)."""
    presented = authorization or ""
    token = presented[7:] if presented[:7].lower() == "bearer " else ""
    if ctx.admin_digest is None or not token:
        raise Unauthenticated("control plane needs the admin token (WAYPOST_ADMIN_TOKEN)")
    if not hmac.compare_digest(ctx.admin_digest, token_digest(token)):
        raise Unauthenticated("control plane needs the admin token (WAYPOST_ADMIN_TOKEN)")
