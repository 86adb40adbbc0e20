"""What the workers of one run share: the target's state that belongs to no space.

Each worker of a run (``--workers``) explores its own spaces, so its commands need no one else's
leave, except where they move the whole server through its test hooks: the clock (WP-HOOK-3),
an armed fault and the request it is armed for (WP-HOOK-4), a restart (WP-HOOK-5), the fault
proxy's next request. Every command holds the gate (shared) while it runs, and those moments
hold it :meth:`ServerWide.alone`: they begin once no other command of any worker is in flight,
and no command begins until they end. The server clock as last read through the hook is shared
too, so an upload of one worker expires in its model once another worker moved the clock past
it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ServerWide:
    """The gate every command of a run's workers passes, and the server clock they share."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0  # commands in flight
        self._alone = False  # a server-wide command is in flight
        self._waiting_alone = 0  # server-wide commands waiting (they go first)
        self._held = threading.local()
        self.now_ms = 0  # the server clock as last read through the hook (any worker)
        self.moves: list[tuple[int, object]] = []  # each move of the clock: ms, by which world

    @contextmanager
    def command(self) -> Iterator[None]:
        """Hold the gate, shared, for one command (a command performed inside another, on the
        same thread, passes through)."""
        if getattr(self._held, "shared", False) or getattr(self._held, "alone", False):
            yield
            return
        self._enter(alone=False)
        self._held.shared = True
        try:
            yield
        finally:
            self._held.shared = False
            self._leave(alone=False)

    @contextmanager
    def alone(self) -> Iterator[None]:
        """Within a command: hold the gate alone for the block (this command's shared hold is
        given up meanwhile, so two workers asking at once wait for each other in turn). Within
        an alone block, another passes through."""
        if getattr(self._held, "alone", False):
            yield
            return
        shared = getattr(self._held, "shared", False)
        if shared:
            self._leave(alone=False)
        self._enter(alone=True)
        self._held.alone = True
        try:
            yield
        finally:
            self._held.alone = False
            self._leave(alone=True)
            if shared:
                self._enter(alone=False)

    def _enter(self, alone: bool) -> None:
        with self._changed:
            if alone:
                self._waiting_alone += 1
                self._changed.wait_for(lambda: not self._running and not self._alone)
                self._waiting_alone -= 1
                self._alone = True
            else:
                self._changed.wait_for(lambda: not self._alone and not self._waiting_alone)
                self._running += 1

    def _leave(self, alone: bool) -> None:
        with self._changed:
            if alone:
                self._alone = False
            else:
                self._running -= 1
            self._changed.notify_all()

    def clock_read(self, now_ms: int) -> None:
        """The server clock was read through the hook: it says ``now_ms``."""
        with self._changed:
            self.now_ms = max(self.now_ms, now_ms)

    def clock_moved(self, now_ms: int, ms: int, by: object) -> None:
        """The world ``by`` moved the clock ``ms`` forward; it now says ``now_ms``. The other
        worlds write the move into their commands (:meth:`moves_since`), so a replay of one of
        their examples moves the clock at the same place."""
        with self._changed:
            self.now_ms = max(self.now_ms, now_ms)
            self.moves.append((ms, by))

    def moves_since(self, seen: int, world: object) -> tuple[int, list[int]]:
        """The clock moves of other worlds after the first ``seen``: how many there are now,
        and those others made."""
        with self._changed:
            return len(self.moves), [ms for ms, by in self.moves[seen:] if by is not world]
