"""Guard rules that re-check a principal's authority inside a commit plan, and the read of a
token's liveness beside an operation's own reads (P02)."""

from __future__ import annotations

from collections.abc import Sequence

from waypost.reference.domain.errors import credential_refused
from waypost.reference.domain.principal import Principal
from waypost.reference.storage.plan import Row, SqlValue, Statement, stmt
from waypost.reference.storage.rules import Rule

#: True when the token, its actor and its consumer are no longer live at ``:now``.
NOT_LIVE = """NOT EXISTS (
        SELECT 1 FROM tokens t
        JOIN actors a ON a.space_id = t.space_id AND a.actor_id = t.actor_id
        JOIN consumers c ON c.space_id = t.space_id AND c.consumer_id = t.consumer_id
        WHERE t.token_id = :token_id AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > :now)
          AND a.disabled = 0 AND a.authority_version = :actor_version AND c.disabled = 0)"""

#: True when the token lacks the scope ``:scope``.
LACKS_SCOPE = """NOT EXISTS (
        SELECT 1 FROM token_scopes WHERE token_id = :token_id AND scope = :scope)"""


def authority_params(principal: Principal, now: int, scope: str) -> dict[str, SqlValue]:
    """The parameters :data:`NOT_LIVE` and :data:`LACKS_SCOPE` use."""
    return {"token_id": principal.token_id, "now": now,
            "actor_version": principal.actor_authority_version, "scope": scope}


#: The token no longer authenticates: the one answer for any credential refused (P02).
TOKEN_DEAD = Rule("UNAUTHENTICATED", NOT_LIVE, None, "UNAUTHENTICATED", "",
                  credential_refused().message)


def lacks_scope(message: str, field: str = "") -> Rule:
    """The token lacks ``:scope``, answered ``403 FORBIDDEN`` with ``message``."""
    return Rule("FORBIDDEN", LACKS_SCOPE, None, "FORBIDDEN", field, message)


def authority_rules(scope: str) -> list[Rule]:
    """The token first (live, then holding ``scope``): an operation may start from a principal
    checked before (``domain/remembered.py``), and its token then answers 401 here, replay or
    not, as a check before the plan would have."""
    return [TOKEN_DEAD, lacks_scope(f"the token lacks the {scope} scope", "scope")]


def live_statement(principal: Principal, now: int) -> Statement:
    """A read of whether the token is still live at ``now`` (1 or 0, see :func:`live_from`), to
    travel in the same batch as the reads of an operation that starts from a principal checked
    before and writes only after them."""
    return stmt(f"SELECT NOT {NOT_LIVE} AS live", authority_params(principal, now, ""))


def live_from(rows: Sequence[Row]) -> bool:
    """The answer of :func:`live_statement`."""
    return bool(rows[0][0])
