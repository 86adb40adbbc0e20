"""How the kit reports a broken property: a P-number, what differed, and the evidence."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class PropertyViolation(AssertionError):
    """A response contradicted the contract; ``pid`` names the property it breaks."""

    def __init__(self, pid: str, message: str, evidence: dict[str, Any] | None = None) -> None:
        super().__init__(f"{pid}: {message}")
        self.pid = pid
        self.message = message
        self.evidence = evidence or {}
        self.commands: list[dict[str, Any]] = []  # the example's commands, set when raised
        self.exchanges: list[dict[str, Any]] = []


#: One subclass per property: Hypothesis tells bugs apart by exception type and origin, so a
#: P03 failure does not hide a P07 one raised from the same line.
KINDS: dict[str, type[PropertyViolation]] = {
    f"P{n:02d}": type(f"P{n:02d}Violation", (PropertyViolation,), {}) for n in range(1, 19)}


class Ledger:
    """What one run (or replay) has checked: counts per property and per check of the kit (the
    name requirement coverage tags, ``properties/requirements.py``), the checks that failed
    with their property, and the violations that were only recorded because their property is
    not enforced (not selected, or an expected failure)."""

    def __init__(self, enforced: set[str] | None = None) -> None:
        self.checks: Counter[str] = Counter()
        self.by_check: Counter[str] = Counter()
        self.failed_checks: dict[str, str] = {}  # check name → the property it failed
        self.current = "unnamed"  # the check being made (:meth:`checking`)
        self.enforced = enforced  # None: every property raises
        self.recorded: dict[str, PropertyViolation] = {}
        self.failures = 0  # every failed check, raised or recorded

    @contextmanager
    def checking(self, name: str) -> Iterator[None]:
        """Count the checks made inside under the check ``name`` (e.g. ``command send``)."""
        outer, self.current = self.current, name
        try:
            yield
        finally:
            self.current = outer

    def check(self, pid: str, ok: bool, message: str, **evidence: Any) -> bool:
        """Count one check of ``pid``. A failure raises :class:`PropertyViolation` when ``pid``
        is enforced, else it is recorded once and False is returned (the caller stops that
        command)."""
        self.checks[pid] += 1
        self.by_check[self.current] += 1
        if ok:
            return True
        self.failures += 1
        self.failed_checks.setdefault(self.current, pid)
        violation = KINDS.get(pid, PropertyViolation)(pid, message, evidence)
        if self.enforced is None or pid in self.enforced:
            raise violation
        self.recorded.setdefault(pid, violation)
        return False
