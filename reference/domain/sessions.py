"""The dashboard's session rules: how long a signed-in browser stays signed in, and how many
failed sign-ins an address may make before it has to wait."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

#: Failed sign-ins an address may make within :attr:`SignInLimiter.window_ms`.
FAILURES_ALLOWED = 5
#: Session uses closer together than this are not recorded again (fewer writes per page),
#: unless the idle expiry is shorter than twice this (see :func:`touch_every_ms`).
TOUCH_EVERY_MS = 60_000
#: Addresses remembered by the limiter at most (the oldest is forgotten first).
MAX_ADDRESSES = 10_000


def touch_every_ms(idle_ms: int) -> int:
    """How old a session's last recorded use may get before a use is recorded again: a minute,
    or half the idle expiry when that is shorter, so that a session in use never idles out."""
    return max(1, min(TOUCH_EVERY_MS, idle_ms // 2))


@dataclass(frozen=True)
class SessionPolicy:
    """Idle expiry (since the last use) and absolute expiry (since sign-in), in milliseconds."""

    idle_ms: int = 30 * 60 * 1000
    absolute_ms: int = 12 * 60 * 60 * 1000


@dataclass
class SignInLimiter:
    """In-memory sliding window of failed sign-ins per client address (per server process)."""

    window_ms: int = 60_000
    allowed: int = FAILURES_ALLOWED
    _failures: dict[str, deque[int]] = field(default_factory=dict)

    def _recent(self, address: str, now: int) -> deque[int]:
        times = self._failures.get(address, deque())
        while times and times[0] <= now - self.window_ms:
            times.popleft()
        return times

    def retry_after_ms(self, address: str, now: int) -> int:
        """0 when ``address`` may try now; otherwise how long until it may."""
        times = self._recent(address, now)
        if len(times) < self.allowed:
            return 0
        return times[0] + self.window_ms - now

    def failed(self, address: str, now: int) -> None:
        times = self._recent(address, now)
        times.append(now)
        self._failures.pop(address, None)
        if len(self._failures) >= MAX_ADDRESSES:
            self._failures.pop(next(iter(self._failures)))
        self._failures[address] = times
