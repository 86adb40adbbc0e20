"""How the kit reports a broken property: a P-number, what differed, and the evidence."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from waypost.properties.verdicts.owners import Ids, as_tuple, property_of


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


#: The named check being made (``command send``, ``limit ack_items``), per thread and context.
CURRENT: ContextVar[str] = ContextVar("waypost_named_check", default="unnamed")


class Ledger:
    """What one run (or replay) has checked, counted where each check is made: per property,
    per requirement id (and which named check of the kit cited it: ``command send``,
    ``limit ack_items``, …), the checks that failed, and the violations that were only
    recorded because their property is not enforced (not selected, or an expected failure).
    The workers of a run share one ledger: its counts are kept under a lock, and the named check
    being made is each thread's own."""

    def __init__(self, enforced: set[str] | None = None) -> None:
        self.checks: Counter[str] = Counter()  # property → checks made
        self.failed: Counter[str] = Counter()  # property → checks failed
        self.by_check: Counter[str] = Counter()  # named check → checks made
        self.by_requirement: dict[str, Counter[str]] = {}  # id → named check → checks made
        self.failed_requirements: dict[str, Counter[str]] = {}  # id → property → checks failed
        self.failed_checks: dict[str, str] = {}  # named check → the property it failed
        self._lock = threading.Lock()
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

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """A copy of the checks made and failed, by property (safe while others check)."""
        with self._lock:
            return dict(self.checks), dict(self.failed)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the ledger's lock: to add counts made elsewhere (P17's matrix) at once."""
        with self._lock:
            yield

    @property
    def current(self) -> str:
        """The named check being made in this context ("unnamed" outside any): each worker's
        own; a command's helper threads carry it (``properties/commands/world.py``,
        :func:`~waypost.properties.commands.world.carrying`)."""
        return CURRENT.get()

    @current.setter
    def current(self, name: str) -> None:
        CURRENT.set(name)

    def check(self, ids: Ids, ok: bool, message: str, **evidence: Any) -> bool:
        """One check of the requirement ids ``ids`` (docs/protocol.md), counted under the
        property of the first (:func:`~waypost.properties.verdicts.owners.property_of`). A failure
        raises :class:`PropertyViolation` when that property is enforced, else it is recorded
        once and False is returned (the caller stops that command)."""
        pid = property_of(ids)
        rids = as_tuple(ids)
        current = self.current
        with self._lock:
            self.checks[pid] += 1
            self.by_check[current] += 1
            for rid in rids:
                self.by_requirement.setdefault(rid, Counter())[current] += 1
            if ok:
                return True
            self.failures += 1
            self.failed[pid] += 1
            for rid in rids:
                self.failed_requirements.setdefault(rid, Counter())[pid] += 1
            self.failed_checks.setdefault(current, pid)
        violation = KINDS.get(pid, PropertyViolation)(pid, f"{message} [{', '.join(rids)}]",
                                                      {"requirements": list(rids), **evidence})
        if self.enforced is None or pid in self.enforced:
            raise violation
        self.recorded.setdefault(pid, violation)
        return False
