"""P17: the reference consumer under a crash matrix of its own, against any target.

For every consumer fault point × flow (``sync``, ``done``, ``outbound``) the kit provisions a
fresh space (alice, bob, and a space-log reader ``watch`` that never acknowledges), runs the
consumer as a real process (``python -m waypost.cli consumer …``, or any command that speaks
the same CLI and keeps the same local tables) with the point armed through
``WAYPOST_CONSUMER_FAULT``, so the process ends there for real; checks the server's receipts
against the local file in that crashed state; restarts the consumer (``sync``); and checks from
both sides that no item was lost, no completed work is handed out again, and every outbound
write exists once with its original request_id (``properties/contract/consumer.py``). The points,
the variable and the exit status come from the contract's data file, which the consumer reads
too (``properties/protocol/constants.py``).

The kit never imports the consumer: it starts it, reads its local file read-only, and asks the
server over HTTP, within the kit's bounds (``properties/wire/bounds.py``): an answer past them, a
feed that does not move on or an id that is no id is a failed check of the property the server
breaks (the cell cannot go on, and says so), never a hang or a crash of the run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from waypost.conformance.consumer_space import Space, Untrusted
from waypost.properties.contract.consumer import (
    OUTBOUND_ONCE,
    PID,
    LocalView,
    nothing_lost,
    outbound_once,
    receipts_not_ahead,
    work_kept,
)
from waypost.properties.protocol.constants import (
    CONSUMER_FAULT_ENVIRONMENT,
    CONSUMER_POINTS,
    CONSUMER_POWER_CUTS_ENVIRONMENT,
    CRASH_EXIT,
)
from waypost.properties.verdicts.owners import table as owners
from waypost.properties.verdicts.violations import Ledger, PropertyViolation
from waypost.properties.wire.bounds import Bounds, bounded_client
from waypost.properties.wire.untrusted import visible

#: Every fault point of the reference consumer, from the contract's data file (docs/consumer.md).
POINTS = CONSUMER_POINTS
FLOWS = ("sync", "done", "outbound")
CHECK = "consumer matrix"  # its name in requirement coverage (properties/coverage/registered.py)
#: ``waypost consumer`` without loading the rest of the CLI (the kit starts it many times).
DEFAULT_COMMAND = (sys.executable, "-m", "waypost.consumer_command")


def consumer_seconds(bounds: Bounds) -> float:
    """How long one consumer command may run: a few of the kit's calls, at least 30 s."""
    return max(30.0, 5 * bounds.seconds)


@dataclass
class Cell:
    flow: str
    point: str
    outcome: str = ""
    ok: bool = False
    note: str = ""
    checks: int = 0
    requirements: dict[str, int] = field(default_factory=dict)  # id → checks naming it
    failed: dict[str, int] = field(default_factory=dict)  # id → of them, failed
    server: list[dict[str, Any]] = field(default_factory=list)  # {ids, message} it broke


@dataclass
class ConsumerMatrix:
    cells: list[Cell] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return all(cell.ok for cell in self.cells)

    @property
    def checks(self) -> int:
        return sum(cell.checks for cell in self.cells)

    def table(self) -> str:
        """Flows down, fault points across; each cell ``not reached``, ``recovered`` or
        ``FAIL``; the failures' reasons below."""
        width = max(len(p) for p in POINTS) + 2
        lines = ["P17:".ljust(10) + "".join(p.ljust(width) for p in POINTS)]
        for flow in FLOWS:
            row = [c for c in self.cells if c.flow == flow]
            if row:
                lines.append(flow.ljust(10) + "".join(
                    (c.outcome if c.ok else f"FAIL {c.outcome}").ljust(width) for c in row))
        failures = [f"  {c.flow} × {c.point}: {c.note}" for c in self.cells if not c.ok]
        return "\n".join(visible(line) for line in
                         lines + (["failures:", *failures] if failures else []))

    def verdict(self) -> str:
        failed = sum(not cell.ok for cell in self.cells)
        return (f"consumer matrix: {len(self.cells)} cells, {self.checks} checks, "
                + (f"{failed} failed" if failed else f"{len(self.cells)} green"))


class Consumer:
    """One consumer process command line on one local file, as an actor of a space."""

    def __init__(self, command: Sequence[str], db: Path, space: Space, actor: str,
                 seconds: float = 300.0, power_loss: bool = False) -> None:
        self.command, self.db, self.space, self.actor = list(command), db, space, actor
        self.seconds = seconds  # one command's time to end
        self.power_loss = power_loss  # its file behind the power-cut simulator
        self.runs: list[str] = []

    def run(self, *arguments: str, fault: str | None = None) -> int:
        """Run one consumer command to its end; its exit status (:data:`CRASH_EXIT` if it
        crashed at the armed point). Output is kept for the cell's note."""
        env = {**os.environ, "WAYPOST_TOKEN": self.space.tokens[self.actor]}
        env.pop(CONSUMER_FAULT_ENVIRONMENT, None)
        env.pop(CONSUMER_POWER_CUTS_ENVIRONMENT, None)
        if fault:
            env[CONSUMER_FAULT_ENVIRONMENT] = fault
        if self.power_loss:
            env[CONSUMER_POWER_CUTS_ENVIRONMENT] = "1"
        try:
            done = subprocess.run([*self.command, *arguments, "--db", str(self.db)], env=env,
                                  capture_output=True, text=True, errors="replace",
                                  timeout=self.seconds)
        except subprocess.TimeoutExpired:  # run() has killed it
            self.runs.append(f"{' '.join(arguments)}: did not end within {self.seconds:g} s")
            raise RuntimeError(f"consumer {' '.join(arguments)} did not end within "
                               f"{self.seconds:g} s") from None
        self.runs.append(f"{' '.join(arguments)} → {done.returncode}: "
                         f"{(done.stderr or '').strip()[-300:]}")
        return done.returncode

    def must(self, *arguments: str) -> None:
        if self.run(*arguments) != 0:
            raise RuntimeError(f"consumer {' '.join(arguments)} failed: {self.runs[-1]}")

    def local(self) -> LocalView:
        return LocalView.read(self.db)

    def work_items(self) -> list[str]:
        local = self.local()
        return sorted((i for i in local.work), key=lambda i: list(local.items).index(i))


def _first_run(cell: Cell, consumer: Consumer, point: str, *arguments: str) -> bool:
    """The armed run: it crashes at the point (:data:`CRASH_EXIT`) or never reaches it (0)."""
    code = consumer.run(*arguments, fault=point)
    if code not in (0, CRASH_EXIT):
        cell.outcome, cell.note = "error", consumer.runs[-1]
        return False
    cell.outcome = "recovered" if code == CRASH_EXIT else "not reached"
    return True


def _restart(cell: Cell, consumer: Consumer) -> None:
    """After a crash, the consumer's next run (a sync) must finish what was left."""
    if cell.outcome == "recovered":
        consumer.must("sync")


def _flow_sync(cell: Cell, ledger: Ledger, consumer: Consumer) -> None:
    space = consumer.space
    for n in range(3):
        space.send("alice", "bob", f"{cell.point} sync {n}")
    consumer.must("init", "--server", space.url)
    if not _first_run(cell, consumer, cell.point, "sync", "--limit", "2"):
        return
    receipts_not_ahead(ledger, consumer.local(), space.observe(), "bob-c", "after the crash")
    _restart(cell, consumer)
    local, server = consumer.local(), space.observe()
    receipts_not_ahead(ledger, local, server, "bob-c", "after the restart")
    nothing_lost(ledger, local, server, "bob", "bob-c")
    outbound_once(ledger, local, local, space.lookups("bob", local), {})


def _flow_done(cell: Cell, ledger: Ledger, consumer: Consumer) -> None:
    space = consumer.space
    for n in range(2):
        space.send("alice", "bob", f"{cell.point} done {n}")
    consumer.must("init", "--server", space.url)
    consumer.must("sync")
    first = consumer.work_items()[0]
    if not _first_run(cell, consumer, cell.point, "done", first):
        return
    crashed = consumer.local()
    receipts_not_ahead(ledger, crashed, space.observe(), "bob-c", "after the crash")
    _restart(cell, consumer)
    local, server = consumer.local(), space.observe()
    receipts_not_ahead(ledger, local, server, "bob-c", "after the restart")
    nothing_lost(ledger, local, server, "bob", "bob-c")
    work_kept(ledger, local, server, [i for i, s in crashed.work.items() if s == "done"], "bob-c")
    outbound_once(ledger, crashed, local, space.lookups("bob", local), {})


def _flow_outbound(cell: Cell, ledger: Ledger, consumer: Consumer) -> None:
    space = consumer.space
    subject = f"{cell.point} outbound"
    consumer.must("init", "--server", space.url)
    if not _first_run(cell, consumer, cell.point, "send", "--to", "alice", "--subject", subject,
                      "--text", "once"):
        return
    crashed = consumer.local()
    ledger.check(OUTBOUND_ONCE, len(crashed.outbound) == 1,
                 "the send was not written to the outbox before it was submitted",
                 outbound=crashed.outbound)
    _restart(cell, consumer)
    local, server = consumer.local(), space.observe()
    published = {subject: sum(m["subject"] == subject for m in server.messages)}
    outbound_once(ledger, crashed, local, space.lookups("bob", local), published)
    ledger.check(OUTBOUND_ONCE, sum(r["operation"] == "message.send" for r in local.outbound) == 1,
                 "the send was queued more than once", outbound=local.outbound)


FLOW_RUNNERS = {"sync": _flow_sync, "done": _flow_done, "outbound": _flow_outbound}


def run_cell(url: str, admin_token: str, flow: str, point: str, command: Sequence[str],
             work: Path, bounds: Bounds | None = None, power_loss: bool = False) -> Cell:
    """One cell: a fresh space and local file, the armed run, the restart, the checks. A
    server answer the cell cannot go on from ends the cell as an error and is kept in
    ``cell.server`` (:func:`for_run` fails it in the run's ledger)."""
    cell, ledger, bounds = Cell(flow, point), Ledger(enforced=set()), bounds or Bounds()
    consumer: Consumer | None = None
    try:
        consumer = Consumer(command, work / f"{flow}-{point}.sqlite3",
                            Space(url, admin_token, bounds), "bob", consumer_seconds(bounds),
                            power_loss)
        FLOW_RUNNERS[flow](cell, ledger, consumer)
    except Untrusted as lie:  # the run's ledger fails it (:func:`for_run`)
        cell.server.append({"ids": list(lie.ids), "message": f"P17 matrix: {lie}"})
        cell.outcome, cell.note = "error", f"the server's answers: {lie}"
    except (RuntimeError, httpx.HTTPError) as error:
        cell.outcome, cell.note = "error", str(error)
    except (sqlite3.Error, LookupError, TypeError, ValueError) as error:
        cell.outcome, cell.note = "error", f"{type(error).__name__}: {error}"[:500]
    finally:
        if consumer is not None:
            consumer.space.close()
    _count(cell, ledger, consumer)
    return cell


def _count(cell: Cell, ledger: Ledger, consumer: Consumer | None) -> None:
    """The cell's checks and failures from its ledger; its verdict (a cell that could not go
    on counts as one failed check)."""
    cell.checks = ledger.checks[PID] + (cell.outcome == "error")
    cell.requirements = {rid: sum(by.values()) for rid, by in ledger.by_requirement.items()}
    cell.failed = {rid: sum(by.values()) for rid, by in ledger.failed_requirements.items()}
    violation = ledger.recorded.get(PID)
    if violation is not None:
        runs = " | ".join(consumer.runs) if consumer is not None else ""
        cell.note = f"{violation.message} (runs: {runs})"
    cell.ok = violation is None and cell.outcome != "error"


#: Told after each cell: cells done, cells in all, the cell.
OnCell = Callable[[int, int, "Cell"], None]


def consumer_matrix(url: str, admin_token: str, *, command: Sequence[str] = DEFAULT_COMMAND,
                    flows: Sequence[str] = FLOWS, points: Sequence[str] = POINTS,
                    on_cell: OnCell | None = None, bounds: Bounds | None = None,
                    power_loss: bool = False, workers: int = 1) -> ConsumerMatrix:
    """Every fault point × flow against the server at ``url`` (its admin token provisions a
    fresh space per cell, so ``workers`` cells run at once), every answer read within
    ``bounds``; ``power_loss``: each crash of the consumer also loses what it wrote but did
    not sync (the power-cut simulator). The cells are in flow × point order. Its
    consumers have clients of their own (never the kit's fault proxy)."""
    matrix = ConsumerMatrix()
    pairs = [(flow, point) for flow in flows for point in points]
    done: list[Cell] = []
    lock = threading.Lock()

    def one(pair: tuple[str, str], work: Path) -> Cell:
        cell = run_cell(url, admin_token, *pair, command, work, bounds, power_loss)
        with lock:
            done.append(cell)
            if on_cell is not None:
                on_cell(len(done), len(pairs), cell)
        return cell

    with tempfile.TemporaryDirectory(prefix="waypost-p17-") as work, \
            ThreadPoolExecutor(max(1, workers), thread_name_prefix="waypost-p17") as pool:
        matrix.cells = list(pool.map(lambda pair: one(pair, Path(work)), pairs))
    return matrix


def reachable(url: str, bounds: Bounds | None = None) -> bool:
    """Whether a consumer process could reach the target (an in-process client cannot)."""
    try:
        with bounded_client(url, bounds or Bounds(seconds=10)) as client:
            return client.get("/v1/describe").status_code == 200
    except httpx.TransportError:  # also an answer past the kit's bounds
        return False


def for_run(client: httpx.Client, admin_token: str, ledger: Ledger, wanted: set[str] | None,
            replay_dir: Path, run_id: str, *, command: Sequence[str] = DEFAULT_COMMAND,
            flows: Sequence[str] = FLOWS, points: Sequence[str] = POINTS,
            on_cell: OnCell | None = None,
            bounds: Bounds | None = None, workers: int = 1,
            ) -> dict[str, tuple[PropertyViolation, PropertyViolation, Path]]:
    """P17 in a kit run: the matrix against the run's target, its checks counted in the run's
    ledger; a failing matrix is the run's P17 failure, and a server answer a cell could not go
    on from fails the server's own property (P06 for a feed that does not end, …); the cells
    are written to ``<replay_dir>/<run_id>-P17.json``. Nothing runs (P17 not run) when P17 is
    not selected or the target is not reachable over the network."""
    url = str(client.base_url).rstrip("/")
    if (wanted is not None and PID not in wanted) or not reachable(url, bounds):
        return {}
    matrix = consumer_matrix(url, admin_token, command=command, flows=flows, points=points,
                             on_cell=on_cell, bounds=bounds, workers=workers)
    found = _server_failures(matrix, ledger)
    mine = _matrix_failure(matrix, ledger)
    if mine is not None:
        found[PID] = mine
    if not found:
        return {}
    replay_dir.mkdir(parents=True, exist_ok=True)
    path = replay_dir / f"{run_id}-{PID}.json"
    path.write_text(json.dumps({"format": "waypost-consumer-matrix/1", "property": PID,
                                "table": matrix.table(),
                                "cells": [c.__dict__ for c in matrix.cells]}, indent=2) + "\n")
    return {pid: (violation, violation, path) for pid, violation in found.items()}


def _server_failures(matrix: ConsumerMatrix, ledger: Ledger) -> dict[str, PropertyViolation]:
    """Each server answer a cell could not go on from, as a failed check of the run: the
    violations of enforced properties, by property (the others are recorded)."""
    found: dict[str, PropertyViolation] = {}
    with ledger.checking(CHECK):
        for lie in (lie for cell in matrix.cells for lie in cell.server):
            try:
                ledger.check(tuple(lie["ids"]), False, lie["message"])
            except PropertyViolation as violation:
                found.setdefault(violation.pid, violation)
    return found


def _matrix_failure(matrix: ConsumerMatrix, ledger: Ledger) -> PropertyViolation | None:
    """The matrix's checks into the run's ledger; P17's violation if a cell failed and P17
    is enforced (else it is recorded)."""
    failed = [cell for cell in matrix.cells if not cell.ok]
    with ledger.locked():  # the exploration may be checking meanwhile
        ledger.checks[PID] += matrix.checks
        ledger.by_check[CHECK] += matrix.checks
        for cell in matrix.cells:  # each check named its ids (WP-CONS-…) in the cell's ledger
            for rid, count in cell.requirements.items():
                ledger.by_requirement.setdefault(rid, Counter())[CHECK] += count
            for rid, count in cell.failed.items():
                ledger.failed_requirements.setdefault(rid, Counter())[
                    owners().get(rid) or PID] += count
        if not failed:
            return None
        ledger.failed[PID] += sum(sum(cell.failed.values()) for cell in failed) or len(failed)
        ledger.failed_checks.setdefault(CHECK, PID)
    violation = PropertyViolation(PID, f"{failed[0].flow} × {failed[0].point}: {failed[0].note}",
                                  {"failed_cells": [c.__dict__ for c in failed]})
    if ledger.enforced is not None and PID not in ledger.enforced:
        ledger.recorded.setdefault(PID, violation)
        return None
    return violation
