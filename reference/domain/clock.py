"""The server clock: publication times, expiry and cursors all read it, never the wall directly."""

from __future__ import annotations

import time

#: The most one test-hook advance of the clock may move it, in milliseconds.
MAX_ADVANCE_MS = 10**12


class SystemClock:
    """The machine's clock, plus an offset that test hooks may advance (never on by default)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    def advance(self, ms: int) -> None:
        """Move the clock forward; it never goes back."""
        self.offset_ms += max(ms, 0)
