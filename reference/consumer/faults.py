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

The points, the variable and the exit status come from the contract's data file
(``waypost/contract.json``, package data of the root package), which the conformance kit reads
too; the consumer reads it here, importing nothing of the server or the kit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from importlib import resources
from typing import Any


def _contract() -> dict[str, Any]:
    data = json.loads(resources.files("waypost").joinpath("contract.json").read_text("utf-8"))
    if not isinstance(data, dict) or data.get("format") != "waypost-contract-constants/1":
        raise RuntimeError("waypost/contract.json is not waypost-contract-constants/1")
    return data


_CONTRACT = _contract()
POINTS: tuple[str, ...] = tuple(str(p["point"]) for p in _CONTRACT["consumer_faults"]["points"])
ENVIRONMENT: str = str(_CONTRACT["consumer_faults"]["environment"])
#: Set (to anything), the local file is opened through the power-cut simulator: a crash at an
#: armed point then also loses what was written but not synced (``waypost/power_cut.py``).
POWER_CUTS_ENVIRONMENT: str = str(_CONTRACT["consumer_faults"]["power_cuts_environment"])
#: The exit status of a consumer ended at an armed point (the server's crash status too).
CRASH_EXIT: int = int(_CONTRACT["crash_exit"])

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
