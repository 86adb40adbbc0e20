"""Principals whose token passed a full check, for the operations that need no second one.

An operation whose commit plan re-checks the token inside its transaction (the guard's
``NOT_LIVE`` and ``LACKS_SCOPE``, storage/authority.py) may start from a principal checked
before. A principal's facts other than liveness never change for a token (its space, actor,
consumer, scopes, recipient grants: tokens are immutable but for revocation), and liveness
(revoked, expired, a disabled actor or consumer) is what the guard decides. Such an operation
then reads nothing before its plan: on D1, one round trip instead of two (docs/d1.md).
"""

from __future__ import annotations

from collections import OrderedDict

from waypost.reference.domain.principal import Principal


class RememberedPrincipals:
    """Principals by the SHA-256 digest of the token presented (never the token itself), at
    most ``size`` of them, the least recently used forgotten first (used on the event loop
    only)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._known: OrderedDict[bytes, Principal] = OrderedDict()

    def get(self, presented: bytes) -> Principal | None:
        """The principal last checked for this digest, if it is still remembered."""
        principal = self._known.get(presented)
        if principal is not None:
            self._known.move_to_end(presented)
        return principal

    def put(self, presented: bytes, principal: Principal) -> None:
        """Remember a principal whose token has just passed a full check."""
        self._known[presented] = principal
        self._known.move_to_end(presented)
        if len(self._known) > self._size:
            self._known.popitem(last=False)

    def forget(self, presented: bytes) -> None:
        """Forget a digest whose token a plan refused."""
        self._known.pop(presented, None)
