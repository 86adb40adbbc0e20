"""Principals whose token passed a full check, for operations that check the token themselves.

An operation that checks, in the same transaction or snapshot as its work, everything of its
principal that can change may start from a principal checked before, reading nothing first:
the token's liveness (not revoked, not expired, its actor and consumer not disabled — the
actor's ``authority_version`` moves only when it is disabled) and, for a read through the
consumer's view, that view's revision (a new view or filter gives a new revision). The rest of
a principal never changes for a token: its space, actor, consumer, scopes and grants. A send's,
an ACK's, a prepare's and a commit's plan check the token first in their guard
(``storage/rules.py``, ``authority_rules``); a feed read checks token and view in the page's
snapshot (``storage/feed.py``, ``current_statement``); a PUT and a publish read the token's
liveness in the batch of their first reads (``storage/authority.py``, ``live_statement``). On
D1 each saves the round trip of the token's read (docs/d1.md).
"""

from __future__ import annotations

from collections import OrderedDict

from waypost.reference.domain.principal import Principal


class RememberedPrincipals:
    """Principals by the SHA-256 digest of the token presented (never the token itself), at
    most ``size`` of them, the least recently used forgotten first (used on the event loop
    only). Each is remembered with the feed signal's count of touches noted before its check
    (``service/wakeups.py``): where no control-plane write has been touched since and the token
    has not expired, the principal is still live without another read."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._known: OrderedDict[bytes, tuple[Principal, int]] = OrderedDict()

    def get(self, presented: bytes) -> tuple[Principal, int] | None:
        """The principal last checked for this digest and the touches noted before its check,
        if it is still remembered."""
        known = self._known.get(presented)
        if known is not None:
            self._known.move_to_end(presented)
        return known

    def put(self, presented: bytes, principal: Principal, checked_at: int) -> None:
        """Remember a principal whose token has just passed a full check (``checked_at``: the
        touches noted before it read the token)."""
        self._known[presented] = (principal, checked_at)
        self._known.move_to_end(presented)
        if len(self._known) > self._size:
            self._known.popitem(last=False)

    def forget(self, presented: bytes) -> None:
        """Forget a digest whose token a plan refused."""
        self._known.pop(presented, None)


class StalePrincipal(Exception):
    """Raised by an operation that started from a remembered principal and found it no longer
    current (a consumer's new view) before it did or waited for anything: run it again from a
    full check."""
