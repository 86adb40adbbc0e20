"""The server's share of the contract's constants, read from ``waypost/contract.json`` (package
data of the root package, which the conformance kit reads with a loader of its own): the
status of each error code (protocol.md §7) and the fault points and actions (§14) with the
exit status of ``--crash-mode exit``. The reference consumer reads its own part of the same
file (``waypost.reference.consumer.faults``).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def _load() -> dict[str, Any]:
    data = json.loads(resources.files("waypost").joinpath("contract.json").read_text("utf-8"))
    if not isinstance(data, dict) or data.get("format") != "waypost-contract-constants/1":
        raise RuntimeError("waypost/contract.json is not waypost-contract-constants/1")
    return data


_DATA = _load()

#: The HTTP status each error code fixes, ``INTERNAL`` included.
STATUS: dict[str, int] = {e["code"]: int(e["status"]) for e in _DATA["errors"]}
#: Every fault point the server offers, in the order ``GET /_test/faults`` lists them.
FAULT_POINTS: tuple[str, ...] = tuple(str(p["point"]) for p in _DATA["server_faults"]["points"])
FAULT_ACTIONS: tuple[str, ...] = tuple(_DATA["server_faults"]["actions"])
CRASH_EXIT: int = int(_DATA["crash_exit"])
