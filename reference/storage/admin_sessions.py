"""Commit plans and reads of the dashboard's admin sessions (``admin_sessions``), shared by the
SQLite and D1 drivers. Sessions are keyed by the SHA-256 digest of their random id."""

from __future__ import annotations

from dataclasses import dataclass

from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    Statement,
    guard,
    guarded,
    new_plan_id,
    plan,
    stmt,
    verdict_read,
)
from waypost.reference.storage.rows import decode, only, select_list
from waypost.reference.storage.rules import Rule

#: The session row's condition of being usable at ``:now``.
LIVE = ("s.revoked_at IS NULL AND :now < s.expires_at AND :now < s.last_seen_at + s.idle_ms")
_MISSING = "NOT EXISTS (SELECT 1 FROM admin_sessions s WHERE s.session_digest = :digest)"
_NOT_LIVE = (f"NOT EXISTS (SELECT 1 FROM admin_sessions s WHERE s.session_digest = :digest"
             f" AND {LIVE})")

#: The rules of the session plans; none is a client's error: the dashboard answers each verdict.
CREATE_RULES = (Rule("EXISTS", f"NOT ({_MISSING})", None, "", "", "a new session's digest is taken"),)
TOUCH_RULES = (Rule("NOT_LIVE", _NOT_LIVE, None, "", "", "the session is not live: sign in again"),)
REVOKE_RULES = (Rule("NOT_FOUND", _MISSING, None, "", "", "no such session: nothing to revoke"),)


@dataclass(frozen=True)
class SessionOutcome:
    """What a session plan decided (``ok``, ``EXISTS``, ``NOT_LIVE``, ``NOT_FOUND``) and whether
    the row, as read back inside the commit, is live."""

    verdict: str
    live: bool | None


@dataclass(frozen=True)
class SessionRow:
    created_at: int
    last_seen_at: int
    idle_ms: int
    expires_at: int
    revoked_at: int | None


def _outcome(plan_id: str, params: dict[str, int | bytes]) -> Statement:
    return verdict_read(plan_id, SessionOutcome,
                        "LEFT JOIN admin_sessions s ON s.session_digest = :digest", params,
                        live=f"CASE WHEN s.session_digest IS NULL THEN NULL ELSE ({LIVE}) END")


def create(digest: bytes, now: int, idle_ms: int, expires_at: int) -> CommitPlan:
    """A new session, first used now."""
    plan_id = new_plan_id()
    params: dict[str, int | bytes] = {"digest": digest, "now": now, "idle_ms": idle_ms,
                                      "expires_at": expires_at}
    return plan("create_admin_session", plan_id, [
        guard(plan_id, CREATE_RULES, params),
        guarded(plan_id, f"""
            INSERT INTO admin_sessions
                (session_digest, created_at, last_seen_at, idle_ms, expires_at)
            SELECT :digest, :now, :now, :idle_ms, :expires_at WHERE {GUARD_OK}""", params),
    ], _outcome(plan_id, params), CREATE_RULES)


def touch(digest: bytes, now: int) -> CommitPlan:
    """Record a use of a live session (its idle expiry starts again from now)."""
    plan_id = new_plan_id()
    params: dict[str, int | bytes] = {"digest": digest, "now": now}
    return plan("touch_admin_session", plan_id, [
        guard(plan_id, TOUCH_RULES, params),
        guarded(plan_id, f"""
            UPDATE admin_sessions SET last_seen_at = max(last_seen_at, :now)
            WHERE session_digest = :digest AND {GUARD_OK}""", params),
    ], _outcome(plan_id, params), TOUCH_RULES)


def revoke(digest: bytes, now: int) -> CommitPlan:
    """Sign out: the session is revoked (once; revoking again changes nothing)."""
    plan_id = new_plan_id()
    params: dict[str, int | bytes] = {"digest": digest, "now": now}
    return plan("revoke_admin_session", plan_id, [
        guard(plan_id, REVOKE_RULES, params),
        guarded(plan_id, f"""
            UPDATE admin_sessions SET revoked_at = :now
            WHERE session_digest = :digest AND revoked_at IS NULL AND {GUARD_OK}""", params),
    ], _outcome(plan_id, params), REVOKE_RULES)


def outcome_from(rows: list[tuple[object, ...]]) -> SessionOutcome:
    return decode(SessionOutcome, only(rows), live=bool)


_COLUMNS = select_list(SessionRow)


def read(digest: bytes) -> Statement:
    """The session row of a digest (no row when unknown)."""
    return stmt(f"SELECT {_COLUMNS} FROM admin_sessions WHERE session_digest = :digest",
                {"digest": digest})


def session_from(row: tuple[object, ...]) -> SessionRow:
    return decode(SessionRow, row)
