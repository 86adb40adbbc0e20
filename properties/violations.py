"""How the kit reports a broken property: a P-number, what differed, and the evidence."""

from __future__ import annotations

from collections import Counter
from typing import Any


class PropertyViolation(AssertionError):
    """A response contradicted the contract; ``pid`` names the property it breaks."""

    def __init__(self, pid: str, message: str, evidence: dict[str, Any] | None = None) -> None:
        super().__init__(f"{pid}: {message}")
        self.pid = pid
        self.message = message
        self.evidence = evidence or {}


#: Checks performed per property in this process (the runner reads and resets it).
CHECKS: Counter[str] = Counter()


def check(pid: str, ok: bool, message: str, **evidence: Any) -> None:
    """Count one check of ``pid``; raise :class:`PropertyViolation` when it fails."""
    CHECKS[pid] += 1
    if not ok:
        raise PropertyViolation(pid, message, evidence)
