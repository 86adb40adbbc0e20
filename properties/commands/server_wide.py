"""What the workers of one run share: the target's state that belongs to no space.

Each worker of a run (``--workers``) explores its own spaces, so its commands need no one else's
leave, except the few that move the whole server through its test hooks: the clock
(WP-HOOK-3), armed faults (WP-HOOK-4), a restart (WP-HOOK-5), and the fault proxy's next
request. Those commands are marked :func:`server_wide`; one runs only while no other command of
any worker is in flight, and no command starts until it is done. The server clock as last read
through the hook is shared too, so an upload of one worker expires in its model when another
worker moved the clock past it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

F = TypeVar("F", bound=Callable[..., None])


def server_wide(command: F) -> F:
    """Mark ``command`` as one that moves the whole server (clock, faults, restart, the fault
    proxy): it runs alone among the workers of a run."""
    command.server_wide = True  # type: ignore[attr-defined]  # read by World.perform
    return command


def is_server_wide(command: Callable[..., None]) -> bool:
    return bool(getattr(command, "server_wide", False))


class ServerWide:
    """The gate every command of a run's workers passes, and the server clock they share."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0  # commands in flight
        self._alone = False  # a server-wide command is in flight
        self._waiting_alone = 0  # server-wide commands waiting (they go first)
        self._held = threading.local()
        self.now_ms = 0  # the server clock as last read through the hook (any worker)

    @contextmanager
    def command(self, alone: bool) -> Iterator[None]:
        """Hold the gate for one command: shared, or ``alone``. A command performed inside
        another (on the same thread) passes through."""
        if getattr(self._held, "depth", 0):
            self._held.depth += 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        with self._changed:
            if alone:
                self._waiting_alone += 1
                self._changed.wait_for(lambda: not self._running and not self._alone)
                self._waiting_alone -= 1
                self._alone = True
            else:
                self._changed.wait_for(lambda: not self._alone and not self._waiting_alone)
                self._running += 1
        self._held.depth = 1
        try:
            yield
        finally:
            self._held.depth = 0
            with self._changed:
                if alone:
                    self._alone = False
                else:
                    self._running -= 1
                self._changed.notify_all()

    def clock_read(self, now_ms: int) -> None:
        """The server clock was read (or moved) through the hook: it says ``now_ms``."""
        with self._changed:
            self.now_ms = max(self.now_ms, now_ms)
