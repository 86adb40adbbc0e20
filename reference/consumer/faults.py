"""The consumer's fault points: places between its durable steps where a real process could
die. A point armed (``WAYPOST_CONSUMER_FAULT=point[,point…]`` or ``--fault POINT``) ends the
process there with :data:`CRASH_EXIT` through ``os._exit``: no cleanup, no flush, as SIGKILL.
The conformance kit arms each in turn, then restarts the consumer and checks nothing was lost.

- ``sync.after_fetch``: a page, its message bodies and memory revisions are read; nothing stored.
- ``sync.after_commit``: the page, its work records and the local checkpoint are committed; the
  ``received`` ACK is not sent yet.
- ``ack.before_submit`` / ``ack.after_submit``: around submitting a queued ACK (the answer, if
  any, not yet recorded locally).
- ``done.after_commit``: the work is marked done locally with its ``processed`` ACK queued.
- ``outbound.before_submit`` / ``outbound.after_submit``: around submitting a queued send,
  reply or publish.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

POINTS = ("sync.after_fetch", "sync.after_commit", "ack.before_submit", "ack.after_submit",
          "done.after_commit", "outbound.before_submit", "outbound.after_submit")
ENVIRONMENT = "WAYPOST_CONSUMER_FAULT"
#: The exit status of a consumer ended at an armed point (the server's crash status too).
CRASH_EXIT = 86

_armed: set[str] = set()


def arm(points: Iterable[str]) -> None:
    """Arm these points for this process; an unknown name raises ValueError."""
    wanted = {p.strip() for p in points if p.strip()}
    unknown = sorted(wanted - set(POINTS))
    if unknown:
        raise ValueError(f"unknown fault points {', '.join(unknown)} (known: {', '.join(POINTS)})")
    _armed.update(wanted)


def arm_from_environment() -> None:
    """Arm the points named by ``WAYPOST_CONSUMER_FAULT`` (comma-separated)."""
    arm(os.environ.get(ENVIRONMENT, "").split(","))


def hit(point: str) -> None:
    """Pass a fault point: the process ends here if it is armed."""
    if point in _armed:
        os._exit(CRASH_EXIT)
