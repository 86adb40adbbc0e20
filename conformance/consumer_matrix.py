"""P17: the reference consumer under a crash matrix of its own, against any target.

For every consumer fault point × flow (``sync``, ``done``, ``outbound``) the kit provisions a
fresh space (alice, bob, and a space-log reader ``watch`` that never acknowledges), runs the
consumer as a real process (``python -m waypost.cli consumer …``, or any command that speaks
the same CLI and keeps the same local tables) with the point armed through
``WAYPOST_CONSUMER_FAULT``, so the process ends there for real; checks the server's receipts
against the local file in that crashed state; restarts the consumer (``sync``); and checks from
both sides that no item was lost, no completed work is handed out again, and every outbound
write exists once with its original request_id (``properties/consumer_checks.py``). The points,
the variable and the exit status come from the contract's data file, which the consumer reads
too (``properties/contract_constants.py``).

The kit never imports the consumer: it starts it, reads its local file read-only, and asks the
server over HTTP."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from waypost.properties.consumer_checks import (
    OUTBOUND_ONCE,
    PID,
    LocalView,
    ServerView,
    nothing_lost,
    outbound_once,
    receipts_not_ahead,
    work_kept,
)
from waypost.properties.contract_constants import (
    CONSUMER_FAULT_ENVIRONMENT,
    CONSUMER_POINTS,
    CRASH_EXIT,
)
from waypost.properties.violations import Ledger, PropertyViolation

#: Every fault point of the reference consumer, from the contract's data file (docs/consumer.md).
POINTS = CONSUMER_POINTS
FLOWS = ("sync", "done", "outbound")
CHECK = "consumer matrix"  # its name in requirement coverage (properties/requirements.py)
#: ``waypost consumer`` without loading the rest of the CLI (the kit starts it many times).
DEFAULT_COMMAND = (sys.executable, "-m", "waypost.consumer_cli")
SCOPES = ["message.send", "message.read", "receipt.write", "event.subscribe"]


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
        return "\n".join(lines + (["failures:", *failures] if failures else []))

    def verdict(self) -> str:
        failed = sum(not cell.ok for cell in self.cells)
        return (f"consumer matrix: {len(self.cells)} cells, {self.checks} checks, "
                + (f"{failed} failed" if failed else f"{len(self.cells)} green"))


class Space:
    """A fresh space on the target: alice (default actor) and bob with inbox consumers, and
    ``watch`` reading the space log from position 0 (it never acknowledges)."""

    def __init__(self, url: str, admin_token: str) -> None:
        self.url, self.id = url, f"p17-{secrets.token_hex(5)}"
        self.tokens: dict[str, str] = {}
        with httpx.Client(base_url=url, timeout=60,
                          headers={"Authorization": f"Bearer {admin_token}"}) as admin:
            self._admin(admin, "/admin/v1/spaces", {
                "space_id": self.id, "display_name": self.id,
                "source_uri": f"waypost://kit/{self.id}",
                "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "a"}})
            for actor, view, scopes in (("alice", "inbox", SCOPES), ("bob", "inbox", SCOPES),
                                        ("watch", "space_log", ["message.read", "space.observe"])):
                base = f"/admin/v1/spaces/{self.id}"
                if actor != "alice":
                    self._admin(admin, f"{base}/actors", {"actor_id": actor, "kind": "service",
                                                          "display_name": actor})
                self._admin(admin, f"{base}/consumers", {"consumer_id": f"{actor}-c",
                                                         "actor_id": actor, "view": view})
                self.tokens[actor] = self._admin(admin, f"{base}/tokens", {
                    "actor_id": actor, "consumer_id": f"{actor}-c", "scopes": scopes,
                    "recipients": {"mode": "any"}, "collections": [],
                    "blob_references": []})["token"]

    @staticmethod
    def _admin(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = client.post(path, json={"request_id": secrets.token_hex(8), **body})
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"provisioning POST {path} answered {answer.status_code}: "
                               f"{answer.text[:300]}")
        data: dict[str, Any] = answer.json()
        return data

    def call(self, actor: str, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        with httpx.Client(base_url=self.url, timeout=60) as client:
            answer = client.request(method, path, **kwargs,
                                    headers={"Authorization": f"Bearer {self.tokens[actor]}"})
        if answer.status_code >= 300:
            raise RuntimeError(f"{method} {path} answered {answer.status_code}: "
                               f"{answer.text[:300]}")
        data: dict[str, Any] = answer.json()
        return data

    def send(self, sender: str, to: str, subject: str) -> None:
        self.call(sender, "POST", "/v1/messages", json={
            "request_id": secrets.token_hex(8), "recipient_ids": [to], "thread": {"new": True},
            "kind": "info", "subject": subject, "body": {"text": f"body of {subject}"}})

    def observe(self) -> ServerView:
        """Every message (with its body) and receipt advance, through ``watch``."""
        view, cursor = ServerView(), None
        while True:
            page = self.call("watch", "GET", "/v1/feed",
                             params={"limit": 100, **({"cursor": cursor} if cursor else {})})
            for item in page["items"]:
                if item["type"] == "message":
                    view.messages.append({**item, **self.call(
                        "watch", "GET", f"/v1/messages/{item['message']['message_id']}")})
                elif item["type"] == "receipt":
                    view.receipts.append(item["receipt"])
            cursor = page["next_cursor"]
            if not page["has_more"]:
                return view

    def lookups(self, actor: str, local: LocalView) -> dict[str, dict[str, Any]]:
        found = {}
        for row in local.outbound:
            with httpx.Client(base_url=self.url, timeout=60) as client:
                answer = client.get(f"/v1/submissions/{row['operation']}/{row['request_id']}",
                                    headers={"Authorization": f"Bearer {self.tokens[actor]}"})
            found[row["request_id"]] = answer.json() if answer.status_code == 200 else {}
        return found


class Consumer:
    """One consumer process command line on one local file, as an actor of a space."""

    def __init__(self, command: Sequence[str], db: Path, space: Space, actor: str) -> None:
        self.command, self.db, self.space, self.actor = list(command), db, space, actor
        self.runs: list[str] = []

    def run(self, *arguments: str, fault: str | None = None) -> int:
        """Run one consumer command to its end; its exit status (:data:`CRASH_EXIT` if it
        crashed at the armed point). Output is kept for the cell's note."""
        env = {**os.environ, "WAYPOST_TOKEN": self.space.tokens[self.actor]}
        env.pop(CONSUMER_FAULT_ENVIRONMENT, None)
        if fault:
            env[CONSUMER_FAULT_ENVIRONMENT] = fault
        done = subprocess.run([*self.command, *arguments, "--db", str(self.db)], env=env,
                              capture_output=True, text=True, timeout=300)
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
             work: Path) -> Cell:
    """One cell: a fresh space and local file, the armed run, the restart, the checks."""
    cell, ledger = Cell(flow, point), Ledger(enforced=set())
    consumer = Consumer(command, work / f"{flow}-{point}.sqlite3", Space(url, admin_token), "bob")
    try:
        FLOW_RUNNERS[flow](cell, ledger, consumer)
    except RuntimeError as error:
        cell.outcome, cell.note = "error", str(error)
    cell.checks = ledger.checks[PID]
    cell.requirements = {rid: sum(by.values()) for rid, by in ledger.by_requirement.items()}
    cell.failed = {rid: sum(by.values()) for rid, by in ledger.failed_requirements.items()}
    violation = ledger.recorded.get(PID)
    if violation is not None:
        cell.note = f"{violation.message} (runs: {' | '.join(consumer.runs)})"
    cell.ok = violation is None and cell.outcome != "error"
    return cell


#: Told after each cell: cells done, cells in all, the cell.
OnCell = Callable[[int, int, "Cell"], None]


def consumer_matrix(url: str, admin_token: str, *, command: Sequence[str] = DEFAULT_COMMAND,
                    flows: Sequence[str] = FLOWS, points: Sequence[str] = POINTS,
                    on_cell: OnCell | None = None) -> ConsumerMatrix:
    """Every fault point × flow against the server at ``url`` (its admin token provisions a
    fresh space per cell)."""
    matrix = ConsumerMatrix()
    total = len(flows) * len(points)
    with tempfile.TemporaryDirectory(prefix="waypost-p17-") as work:
        for flow in flows:
            for point in points:
                matrix.cells.append(run_cell(url, admin_token, flow, point, command, Path(work)))
                if on_cell is not None:
                    on_cell(len(matrix.cells), total, matrix.cells[-1])
    return matrix


def reachable(url: str) -> bool:
    """Whether a consumer process could reach the target (an in-process client cannot)."""
    try:
        return httpx.get(f"{url}/v1/describe", timeout=10).status_code == 200
    except httpx.TransportError:
        return False


def for_run(client: httpx.Client, admin_token: str, ledger: Ledger, wanted: set[str] | None,
            replay_dir: Path, run_id: str, *, command: Sequence[str] = DEFAULT_COMMAND,
            flows: Sequence[str] = FLOWS, on_cell: OnCell | None = None
            ) -> dict[str, tuple[PropertyViolation, PropertyViolation, Path]]:
    """P17 in a kit run: the matrix against the run's target, its checks counted in the run's
    ledger; a failing matrix is the run's P17 failure, its cells written to
    ``<replay_dir>/<run_id>-P17.json``. Nothing runs (P17 not run) when P17 is not
    selected or the target is not reachable over the network."""
    url = str(client.base_url).rstrip("/")
    if (wanted is not None and PID not in wanted) or not reachable(url):
        return {}
    matrix = consumer_matrix(url, admin_token, command=command, flows=flows, on_cell=on_cell)
    ledger.checks[PID] += matrix.checks
    ledger.by_check[CHECK] += matrix.checks
    for cell in matrix.cells:  # each check named its ids (WP-CONS-…) in the cell's ledger
        for rid, count in cell.requirements.items():
            ledger.by_requirement.setdefault(rid, Counter())[CHECK] += count
        for rid, count in cell.failed.items():
            ledger.failed_requirements.setdefault(rid, Counter())[PID] += count
    failed = [cell for cell in matrix.cells if not cell.ok]
    if not failed:
        return {}
    ledger.failed[PID] += sum(sum(cell.failed.values()) for cell in failed) or len(failed)
    ledger.failed_checks.setdefault(CHECK, PID)
    violation = PropertyViolation(PID, f"{failed[0].flow} × {failed[0].point}: {failed[0].note}",
                                  {"failed_cells": [c.__dict__ for c in failed]})
    if ledger.enforced is not None and PID not in ledger.enforced:
        ledger.recorded.setdefault(PID, violation)
        return {}
    replay_dir.mkdir(parents=True, exist_ok=True)
    path = replay_dir / f"{run_id}-{PID}.json"
    path.write_text(json.dumps({"format": "waypost-consumer-matrix/1", "property": PID,
                                "table": matrix.table(),
                                "cells": [c.__dict__ for c in matrix.cells]}, indent=2) + "\n")
    return {PID: (violation, violation, path)}
