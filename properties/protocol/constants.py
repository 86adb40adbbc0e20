"""The constants the kit shares with the server and the consumer it checks, read from the one
data file of the contract (``waypost/contract.json``, package data of the root package): the
error codes of protocol.md §7 with their statuses and required details, the server's fault
points and actions of §14, the reference consumer's fault points and the exit status of a
process a crash point ends. The reference reads the same file with a loader of its own: the
halves share data, never code (``tests/project/test_shared_constants.py`` holds the file to the docs
and to both halves).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from typing import Any


def _load() -> dict[str, Any]:
    data = json.loads(resources.files("waypost").joinpath("contract.json").read_text("utf-8"))
    if not isinstance(data, dict) or data.get("format") != "waypost-contract-constants/1":
        raise RuntimeError("waypost/contract.json is not waypost-contract-constants/1")
    return data


def _names(entries: Any) -> tuple[str, ...]:
    return tuple(str(entry["point"]) for entry in entries)


_DATA = _load()

#: Every error code with the HTTP status it fixes (§7; ``INTERNAL``: WP-ERR-6).
STATUS: dict[str, int] = {e["code"]: int(e["status"]) for e in _DATA["errors"]}
#: The members of ``details`` a code requires (WP-ERR-3); codes that require none are absent.
REQUIRED_DETAILS: dict[str, tuple[str, ...]] = {
    e["code"]: tuple(e["required_details"]) for e in _DATA["errors"] if e["required_details"]}
#: Members of ``details`` that come together or not at all (``RESOURCE_LIMIT``: ``limit`` and
#: ``max`` for a published limit, neither for a counter at its maximum).
PAIRED_DETAILS: dict[str, tuple[str, ...]] = {
    e["code"]: tuple(e["paired_details"]) for e in _DATA["errors"] if e.get("paired_details")}

#: Every fault point a server may offer (§14), in the contract's order.
FAULT_POINTS: tuple[str, ...] = _names(_DATA["server_faults"]["points"])
#: The points a server that offers fault points must offer (WP-HOOK-7).
REQUIRED_FAULT_POINTS: tuple[str, ...] = _names(
    p for p in _DATA["server_faults"]["points"] if p["required"])
#: The fault actions (WP-HOOK-6).
FAULT_ACTIONS: tuple[str, ...] = tuple(_DATA["server_faults"]["actions"])

#: The reference consumer's fault points (docs/consumer.md) and the variable that arms them.
CONSUMER_POINTS: tuple[str, ...] = _names(_DATA["consumer_faults"]["points"])
CONSUMER_FAULT_ENVIRONMENT: str = str(_DATA["consumer_faults"]["environment"])
CONSUMER_POWER_CUTS_ENVIRONMENT: str = str(_DATA["consumer_faults"]["power_cuts_environment"])

#: The exit status of a process a crash point ended (the server's ``--crash-mode exit``, the
#: consumer's armed point).
CRASH_EXIT: int = int(_DATA["crash_exit"])

#: What a fault point's name may be when a server lists it: dotted lower-case words, short.
_POINT_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}(?:\.[a-z][a-z0-9_]{0,31}){1,3}")
MAX_LISTED_POINTS = 64


def listed_fault_points(body: Any) -> tuple[str, ...]:
    """The ``points`` of a server's ``GET /_test/faults`` answer (WP-HOOK-4), validated as
    hostile input: a list of at most :data:`MAX_LISTED_POINTS` distinct names like
    ``commit.after``. Raises ValueError naming what is wrong."""
    points = body.get("points") if isinstance(body, dict) else None
    if not isinstance(points, list) or not 0 < len(points) <= MAX_LISTED_POINTS:
        raise ValueError(f"GET /_test/faults must list 1 to {MAX_LISTED_POINTS} points")
    bad = [p for p in points if not (isinstance(p, str) and _POINT_NAME.fullmatch(p))]
    if bad:
        raise ValueError(f"GET /_test/faults lists a point that is not a point name: "
                         f"{str(bad[0])[:80]!r}")
    if len(set(points)) != len(points):
        raise ValueError("GET /_test/faults lists a point twice")
    return tuple(points)
