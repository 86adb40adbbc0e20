"""Dashboard sign-in, session checks, sign-out and CSRF tokens (docs/dashboard.md).

The browser holds a random session id; the database holds only an HMAC of it (the sessions'
key) with the session's times. A CSRF token is an HMAC of the session id under the CSRF key, so
it needs no storage and dies with its session. Both keys are derived from the server's secret
with HKDF, each for its purpose (``domain/keys.py``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from waypost.reference.domain.errors import ResourceLimit, Unauthenticated
from waypost.reference.domain.sessions import touch_every_ms
from waypost.reference.service.auth import token_digest
from waypost.reference.service.context import Context
from waypost.reference.storage import admin_sessions as sql


class SignInRefused(Unauthenticated):
    """The admin token presented on the sign-in form is not the operator's."""


def session_digest(ctx: Context, session_id: str) -> bytes:
    """What a session is stored under: an HMAC of its id with the sessions' key, so that the
    stored digests alone open nothing."""
    return hmac.new(ctx.session_key, session_id.encode(), hashlib.sha256).digest()


async def sign_in(ctx: Context, presented: str, address: str) -> str:
    """A new session id for the operator's admin token; wrong tokens count against ``address``
    (``RESOURCE_LIMIT`` with ``retry_after_ms`` once too many failed recently)."""
    now = ctx.clock.now_ms()
    wait = ctx.sign_ins.retry_after_ms(address, now)
    if wait:
        raise ResourceLimit("too many failed sign-ins; wait before trying again",
                            limit="sign_in_failures", retry_after_ms=wait)
    expected = ctx.admin_digest or secrets.token_bytes(32)  # no admin token: nothing matches
    if not (presented and hmac.compare_digest(expected, token_digest(presented))):
        ctx.sign_ins.failed(address, now)
        raise SignInRefused("that is not the admin token")
    session_id = secrets.token_urlsafe(32)
    policy = ctx.sessions
    outcome = sql.outcome_from(await ctx.driver.run(sql.create(
        session_digest(ctx, session_id), now, policy.idle_ms, now + policy.absolute_ms)))
    if outcome.verdict != "ok" or not outcome.live:
        raise RuntimeError(f"a new admin session was not created: {outcome.verdict}")
    return session_id


async def is_live(ctx: Context, session_id: str | None) -> bool:
    """Whether the cookie's session is live now; a use is recorded (restarting the idle
    expiry) when the last one is older than a minute (or half the idle expiry, if shorter),
    so most page views write nothing."""
    if not session_id:
        return False
    digest = session_digest(ctx, session_id)
    (rows,) = await ctx.driver.read([sql.read(digest)])
    if not rows:
        return False
    row = sql.session_from(rows[0])
    now = ctx.clock.now_ms()
    if row.revoked_at is not None or now >= row.expires_at or now >= row.last_seen_at + row.idle_ms:
        return False
    if now - row.last_seen_at < touch_every_ms(row.idle_ms):
        return True
    return bool(sql.outcome_from(await ctx.driver.run(sql.touch(digest, now))).live)


async def sign_out(ctx: Context, session_id: str) -> None:
    """Revoke the session (an unknown or already revoked one stays as it is)."""
    await ctx.driver.run(sql.revoke(session_digest(ctx, session_id), ctx.clock.now_ms()))


def csrf_token(ctx: Context, session_id: str) -> str:
    """The CSRF token every state-changing form of this session carries."""
    return hmac.new(ctx.csrf_key, session_id.encode(), hashlib.sha256).hexdigest()


def csrf_valid(ctx: Context, session_id: str, presented: str | None) -> bool:
    """Whether ``presented`` is the session's CSRF token (any text, non-ASCII too: compared as
    UTF-8 bytes, since ``compare_digest`` refuses non-ASCII ``str``)."""
    if not presented:
        return False
    return hmac.compare_digest(csrf_token(ctx, session_id).encode(),
                               presented.encode("utf-8", "surrogatepass"))
