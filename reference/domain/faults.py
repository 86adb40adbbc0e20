"""Named fault points (protocol.md §14; optional for a server, armed
through ``/_test/faults`` when serving with ``--test-hooks``).

Each point is a place between durable steps where a real process could die or a store could
fail. An armed point fires ``times`` times with its action:

- ``crash``: the request is abandoned right there, as if the process died: no later step runs and
  no HTTP response is sent (the connection closes). With ``--crash-mode exit`` the process really
  ends (``os._exit``), for runs that restart it.
- ``lose_response``: the work completes, the reply is dropped (the connection closes).
- ``unavailable``: a temporary storage error at that point (``503 UNAVAILABLE``).
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from dataclasses import dataclass, field

from waypost.reference.domain import contract
from waypost.reference.domain.errors import StorageUnavailable

#: The points and actions of the contract's data file (``waypost/contract.json``, which the kit
#: reads too): §14's points and ``commit.durable``, in the order ``GET /_test/faults`` lists them.
POINTS = contract.FAULT_POINTS
ACTIONS = contract.FAULT_ACTIONS
#: The exit status of a process a ``crash`` point ended in ``--crash-mode exit``.
CRASH_EXIT = contract.CRASH_EXIT

#: Set while a request's reply is to be dropped (``lose_response`` fired during its work).
_lose_response: ContextVar[bool] = ContextVar("waypost_lose_response", default=False)


class Abandoned(BaseException):
    """The request ends without an HTTP response. A BaseException, so no error handler turns it
    into an answer; the outermost ASGI wrapper closes the connection instead."""


@dataclass
class Faults:
    """The armed points of one server process: point → [action, times left]."""

    exit_on_crash: bool = False
    armed: dict[str, list[str | int]] = field(default_factory=dict)
    fired: list[tuple[str, str]] = field(default_factory=list)

    def arm(self, point: str, action: str, times: int) -> None:
        self.armed[point] = [action, times]

    def clear(self) -> None:
        self.armed.clear()

    def hit(self, point: str) -> None:
        """Pass a fault point: nothing happens unless it is armed."""
        entry = self.armed.get(point)
        if entry is None:
            return
        action, times = str(entry[0]), int(entry[1])
        if times <= 1:
            del self.armed[point]
        else:
            entry[1] = times - 1
        self.fired.append((point, action))
        if action == "unavailable":
            raise StorageUnavailable(f"fault point {point}: storage unavailable")
        if action == "lose_response":
            _lose_response.set(True)
            return
        if self.exit_on_crash:
            os._exit(CRASH_EXIT)  # a real crash: no cleanup, no flush, no response
        raise Abandoned(point)


def begin_request() -> None:
    """Each request starts with its reply wanted."""
    _lose_response.set(False)


def reply_lost() -> bool:
    """Whether a ``lose_response`` fault fired during this request's work."""
    return _lose_response.get()
