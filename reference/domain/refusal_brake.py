"""A brake on refused credentials: a client whose credential is refused again and again (`401`,
or `403` for a missing scope) gets each refusal past a burst later, at a steady rate, so that it
cannot keep the event loop busy with connections that are answered and closed at once
(WP-LOAD-7 closes every connection refused before its body) while the others wait.

Only refusals are held, never an answer a credential earns; a held refusal costs a timer. The
rate is kept per token for a missing scope (the SHA-256 digest of the token: tokens are issued
by the operator) and per client address for a refused credential (one can be made up anew for
each request), with the generic cell rate algorithm: each key remembers one time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

#: Refusals a key may have at once before the brake holds them.
BURST = 100
#: Refusals a second a key gets past the burst.
RATE = 10.0
#: The longest a refusal is held (seconds): beyond it, the brake answers anyway.
LONGEST_HOLD = 2.0
#: Keys remembered at most (the least recently refused forgotten first).
KEYS = 10_000


@dataclass
class RefusalBrake:
    """How long to hold each refusal of a key (used on the event loop only)."""

    rate: float = RATE
    burst: int = BURST
    longest_hold: float = LONGEST_HOLD
    keys: int = KEYS
    #: each key's theoretical arrival time: when its next refusal is due at the steady rate
    _due: OrderedDict[bytes | str, float] = field(default_factory=OrderedDict)

    def hold(self, key: bytes | str, now: float) -> float:
        """Seconds to hold the refusal of ``key`` that happens at ``now`` (monotonic
        seconds); 0 within its burst."""
        interval = 1.0 / self.rate
        due = max(self._due.pop(key, now), now)
        held = min(max(0.0, due - (self.burst - 1) * interval - now), self.longest_hold)
        # at most one longest hold past the burst: a client that stops is forgiven in time
        self._due[key] = min(due, now + (self.burst - 1) * interval + self.longest_hold) + interval
        if len(self._due) > self.keys:
            self._due.popitem(last=False)
        return held
