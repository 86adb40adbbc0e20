"""``waypost conformance crash-matrix``: every fault point × every write, with a real crash.

The embedded reference runs with ``--test-hooks --crash-mode exit``: a ``crash`` armed at a point
ends the process there (``os._exit``, no cleanup — what SIGKILL does). For each cell the matrix
arms the point, performs the write, restarts the process on the same data directory if it died,
reads the submission's state through the lookup, retries the very same request, and checks
(P03, P18): the retry succeeds; its answer repeats on a second retry; the write took effect
exactly once (one message, one revision, one receipt version, one upload, one blob).

With the action ``unavailable`` the point answers ``503`` instead: the lookup must not show a
final failure, and the retry must succeed once. Against a running server with test hooks
(``url``), ``crash`` abandons the request and ``/_test/restart`` stands in for the restart.

The fault points are the ones the target lists (``GET /_test/faults``, validated as hostile
input), plus any point protocol.md §14 requires that it leaves out (a failed cell each,
WP-HOOK-7). A point of the sweeper of expired uploads (``cleanup.after_claim``) is passed by no
client's write: ``blob.commit`` exercises it against the sweeper (:func:`run_cleanup_cell`).

Outcomes: ``not reached`` (the write never passes that point: it answered normally),
``committed`` (the crash came after the commit: the lookup already shows the result, the retry
replays it), ``resumed`` (a reservation survived: the retry finished it with its reserved ids),
``not committed`` (nothing durable: the retry ran as a first attempt), ``stored`` (the raw PUT
of upload bytes, which has no key: its retry stored them), ``expired`` (the sweeper claimed the
upload first: the commit is a recorded ``410 UPLOAD_EXPIRED``), ``missing`` (a required point
the target does not offer).

Only the kit's HTTP vocabulary is used here (no import of the reference); the constants shared
with servers come from the contract's data file (``properties/protocol/constants.py``).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.conformance.crash_target import Reference, json_object, reference
from waypost.properties.protocol.constants import FAULT_POINTS, REQUIRED_FAULT_POINTS

#: Every fault point of the contract: protocol.md §14's and ``commit.durable`` (after a
#: transaction is durable, before its callers are answered). A run takes the target's list.
POINTS = FAULT_POINTS
OPERATIONS = ("message.send", "receipt.ack", "blob.prepare", "blob.put", "blob.commit",
              "memory.publish")
#: The prefix of the sweeper's points, and the write that races the sweeper (WP-UPL-8).
SWEEPER, SWEEPER_WRITE = "cleanup.", "blob.commit"
#: How long a cell waits for the target's sweeper to pass its point (the reference sweeps every
#: 30 s); a sweeper that does not come is ``not reached``.
SWEEP_WAIT = 45.0
RERUN = 100_000  # added to a cell's number when it runs once more (fresh request ids)


@dataclass
class Cell:
    operation: str
    point: str
    action: str = "crash"
    outcome: str = ""
    ok: bool = False
    note: str = ""


@dataclass
class Matrix:
    cells: list[Cell] = field(default_factory=list)
    points: list[str] = field(default_factory=list)  # the columns (else: the cells' points)

    @property
    def green(self) -> bool:
        return all(cell.ok for cell in self.cells)

    def columns(self) -> list[str]:
        return self.points or list(dict.fromkeys(c.point for c in self.cells))

    def table(self) -> str:
        """Per action, operations down and fault points across; each cell its outcome
        (``FAIL …`` if wrong), the failures' reasons below."""
        points = self.columns()
        operations = [o for o in OPERATIONS if any(c.operation == o for c in self.cells)]
        width = max((len(p) for p in points), default=0) + 2
        found = {(c.operation, c.point, c.action): c for c in self.cells}
        lines: list[str] = []
        for action in dict.fromkeys(c.action for c in self.cells):
            lines.append(f"{action}:".ljust(16) + "".join(p.ljust(width) for p in points))
            for operation in operations:
                row = operation.ljust(16)
                for point in points:
                    cell = found.get((operation, point, action))
                    shown = "" if cell is None else cell.outcome if cell.ok \
                        else f"FAIL {cell.outcome}"
                    row += shown.ljust(width)
                lines.append(row)
        failures = [f"  {c.action} {c.operation} × {c.point}: {c.note}"
                    for c in self.cells if not c.ok]
        return "\n".join(lines + (["failures:", *failures] if failures else []))

    def verdict(self) -> str:
        """One line: how many cells, how many green or failed."""
        failed = sum(not cell.ok for cell in self.cells)
        return (f"crash matrix: {len(self.cells)} cells, "
                + (f"{failed} failed" if failed else f"{len(self.cells)} green"))

    def as_json(self) -> dict[str, Any]:
        return {"green": self.green, "points": self.columns(), "operations": list(OPERATIONS),
                "cells": [c.__dict__ for c in self.cells]}


@dataclass
class Write:
    """One write of one cell: how to send it, how to look it up, how many effects it made."""

    who: str
    method: str
    path: str
    body: Any = None
    content: bytes | None = None
    lookup: str | None = None  # submission lookup path; None for the raw PUT
    effects: Callable[[], int] = lambda: 1


def _upload(ref: Reference, content: bytes, request_id: str) -> dict[str, Any]:
    return ref.must("alice", "POST", "/v1/blobs", {
        "request_id": request_id, "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"})


def prepare_write(ref: Reference, operation: str, n: int) -> Write:
    """Whatever the write needs first (done before arming), then the write itself."""
    rid = f"{operation}-{n}"
    if operation == "message.send":
        subject = f"crash {n}"

        def messages() -> int:
            page = ref.must("bob", "GET", "/v1/feed?limit=100")
            return sum(1 for i in page["items"] if i["type"] == "message"
                       and i["message"]["subject"] == subject)
        return Write("alice", "POST", "/v1/messages", {
            "request_id": rid, "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": subject, "body": {"text": "x"}},
            lookup=f"/v1/submissions/message.send/{rid}", effects=messages)
    if operation == "receipt.ack":
        sent = ref.must("alice", "POST", "/v1/messages", {
            "request_id": f"pre-{rid}", "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": f"to ack {n}", "body": {"text": "x"}})
        item_id = sent["feed_item_id"]

        def receipts() -> int:
            page = ref.must("alice", "GET", "/v1/feed?limit=100")
            return sum(1 for i in page["items"] if i["type"] == "receipt"
                       and i["receipt"]["subject_item_id"] == item_id)
        return Write("bob", "POST", "/v1/acks", {
            "request_id": rid, "items": [{"item_id": item_id, "stage": "processed"}]},
            lookup=f"/v1/submissions/receipt.ack/{rid}", effects=receipts)
    content = f"blob {n}".encode()
    if operation == "blob.prepare":
        return Write("alice", "POST", "/v1/blobs", {
            "request_id": rid, "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest(), "content_type": "text/plain"},
            lookup=f"/v1/submissions/blob.prepare/{rid}")
    slot = _upload(ref, content, f"pre-{rid}")
    if operation == "blob.put":
        return Write("alice", "PUT", f"/v1/uploads/{slot['upload_id']}/content",
                     content=content)
    ref.must("alice", "PUT", f"/v1/uploads/{slot['upload_id']}/content", content=content)
    if operation == "blob.commit":
        return Write("alice", "POST", f"/v1/uploads/{slot['upload_id']}/commit",
                     {"request_id": rid}, lookup=f"/v1/submissions/blob.commit/{rid}")
    ref.must("alice", "POST", f"/v1/uploads/{slot['upload_id']}/commit",
             {"request_id": f"seal-{rid}"})
    head = ref.must("alice", "GET", "/v1/collections/notes")["current_revision"]

    def revisions() -> int:  # one publish moves the head by exactly one revision
        now = ref.must("alice", "GET", "/v1/collections/notes")["current_revision"]
        return int(now) - int(head)
    return Write("alice", "POST", "/v1/collections/notes/revisions", {
        "request_id": rid, "expected_revision": head, "mode": "delta",
        "items": [{"item_id": f"i{n}", "path": f"p{n}.md", "blob_id": slot["blob_id"]}]},
        lookup=f"/v1/submissions/memory.publish/{rid}", effects=revisions)


def _arm(ref: Reference, point: str, action: str) -> None:
    armed = ref.admin("POST", "/_test/faults", {"point": point, "action": action})
    if armed.status_code != 200:
        raise RuntimeError(f"arming {point}: {armed.text[:300]}")


def run_cell(ref: Reference, operation: str, point: str, n: int, action: str = "crash",
             once_more: bool = True) -> Cell:
    """One cell: arm ``point`` with ``action``, write, recover, look up, retry twice, count.
    A point that fired while the write answered normally may have been passed by the server's
    sweeper instead (its own commit passes ``commit.durable``): the cell runs once more."""
    if point.startswith(SWEEPER) and operation == SWEEPER_WRITE:
        return run_cleanup_cell(ref, point, n, action)
    cell = Cell(operation, point, action=action)
    write = prepare_write(ref, operation, n)
    _arm(ref, point, action)
    first = ref.call(write.who, write.method, write.path, write.body, write.content)
    if first is None:
        ref.recover()  # a new process (or a restarted one): nothing stays armed
    else:
        ended = _answered_anyway(ref, cell, write, point, action, first)
        if ended == "rerun" and once_more:
            return run_cell(ref, operation, point, n + RERUN, action, once_more=False)
        if ended:
            return cell
    return _recovered(ref, cell, write)


def _answered_anyway(ref: Reference, cell: Cell, write: Write, point: str, action: str,
                     first: httpx.Response) -> str:
    """The write answered although the point was armed: ``""`` when that is the answer of an
    ``unavailable`` fault (recovery follows), else what ends the cell: ``"done"`` (the point
    is not on its path, or the fault fired without effect: a failed cell) or ``"rerun"`` (the
    fault fired and the write still succeeded: maybe the sweeper passed the point)."""
    armed = ref.armed(point)  # None: the process ended after answering, and restarted
    ref.disarm()
    if armed or (armed is False and point.startswith(SWEEPER) and first.status_code < 300):
        cell.outcome = "not reached"  # (a sweeper's point: the sweeper passed it)
        cell.ok = first.status_code < 300 and write.effects() == 1
        cell.note = f"answered {first.status_code}: {first.text[:200]}"
        return "done"
    if action == "unavailable" and first.status_code == 503:
        return ""
    cell.note = f"the fault fired but the write answered {first.status_code}" + (
        " and the server ended" if armed is None else "")
    return "rerun" if first.status_code < 300 else "done"


def _recovered(ref: Reference, cell: Cell, write: Write) -> Cell:
    """After the fault: the lookup, two retries, and the one effect the write must have."""
    state = "absent"
    if write.lookup is not None:
        found = ref.call(write.who, "GET", write.lookup)
        if found is not None and found.status_code == 200:
            state = found.json()["state"]
    retry = ref.call(write.who, write.method, write.path, write.body, write.content)
    again = ref.call(write.who, write.method, write.path, write.body, write.content)
    if retry is None or again is None:
        cell.note = "a retry got no answer"
        return cell
    replayed = retry.headers.get("waypost-replayed") == "true"
    cell.outcome = {"committed": "committed", "pending": "resumed",
                    "failed": "failed"}.get(state, "not committed")
    if write.lookup is None:  # a raw PUT has no submission: stored or not, the retry stores
        cell.outcome = "stored" if retry.status_code < 300 else "not stored"
    problems = _problems(write, state, retry, again, replayed)
    cell.ok = not problems
    cell.note = "; ".join(problems)
    return cell


def _problems(write: Write, state: str, retry: httpx.Response, again: httpx.Response,
              replayed: bool) -> list[str]:
    """What is wrong with a cell's recovery: a final failure, a failed or unstable retry, a
    committed write not replayed, other than exactly one effect."""
    problems: list[str] = []
    if state == "failed":
        problems.append("the fault left a final failure (a temporary error must never be "
                        "recorded as final)")
    if retry.status_code >= 300:
        problems.append(f"retry answered {retry.status_code} {retry.text[:200]}")
    if (again.status_code, again.json()) != (retry.status_code, retry.json()):
        problems.append("a second retry answered differently")
    if state == "committed" and not replayed:
        problems.append("the retry of a committed submission was not a replay")
    effects = write.effects()
    if effects != 1:
        problems.append(f"the write took effect {effects} times")
    return problems


def run_cleanup_cell(ref: Reference, point: str, n: int, action: str = "crash") -> Cell:
    """``blob.commit`` × a point of the sweeper: an upload with its bytes stored expires
    (``/_test/clock``), the sweeper claims it and faults at the point (a crash ends the process,
    which restarts), and only then is the commit sent. The cleanup won the race, so the commit
    must answer ``410 UPLOAD_EXPIRED``, recorded (the lookup holds it and both retries replay
    it), a PUT too; the upload's blob must never exist, and a blob sealed before the expiry
    must keep its bytes (WP-UPL-7, WP-UPL-8)."""
    cell = Cell(SWEEPER_WRITE, point, action=action)
    kept_bytes = f"kept {n}".encode()
    kept = _upload(ref, kept_bytes, f"kept-{n}")
    ref.must("alice", "PUT", f"/v1/uploads/{kept['upload_id']}/content", content=kept_bytes)
    ref.must("alice", "POST", f"/v1/uploads/{kept['upload_id']}/commit", {"request_id": f"k{n}"})
    content = f"blob {n}".encode()
    slot = _upload(ref, content, f"pre-{SWEEPER_WRITE}-{n}")
    ref.must("alice", "PUT", f"/v1/uploads/{slot['upload_id']}/content", content=content)
    _arm(ref, point, action)
    ref.expire(slot.get("expires_at"))
    if not _swept(ref, point):
        ref.disarm()
        cell.outcome, cell.ok = "not reached", True
        cell.note = f"no sweep passed {point} within {SWEEP_WAIT:.0f} s"
        return cell
    if action == "crash" and ref.process is None:
        ref.recover()  # the sweeper's request-less crash: restart the running server
    ref.expire(slot.get("expires_at"))  # a new process starts with the test clock unmoved
    problems = _expired_problems(ref, slot, kept, kept_bytes, content, f"{SWEEPER_WRITE}-{n}")
    cell.outcome, cell.ok, cell.note = "expired", not problems, "; ".join(problems)
    return cell


def _swept(ref: Reference, point: str) -> bool:
    """Whether the sweeper passed the armed ``point`` within :data:`SWEEP_WAIT`."""
    deadline = time.monotonic() + SWEEP_WAIT
    while (armed := ref.armed(point)) and time.monotonic() < deadline:
        time.sleep(0.25)
    return not armed


def _expired_problems(ref: Reference, slot: dict[str, Any], kept: dict[str, Any],
                      kept_bytes: bytes, content: bytes, rid: str) -> list[str]:
    """What is wrong once the sweeper has claimed ``slot``: its commit (and retries) must be a
    recorded 410 UPLOAD_EXPIRED, a PUT 410 too, its blob absent, and ``kept`` intact."""
    commit = (f"/v1/uploads/{slot['upload_id']}/commit", {"request_id": rid})
    first, retry, again = (ref.call("alice", "POST", *commit) for _ in range(3))
    found = ref.call("alice", "GET", f"/v1/submissions/{SWEEPER_WRITE}/{rid}")
    put = ref.call("alice", "PUT", f"/v1/uploads/{slot['upload_id']}/content", content=content)
    blob = ref.call("alice", "GET", f"/v1/blobs/{slot['blob_id']}")
    still = ref.call("alice", "GET", f"/v1/blobs/{kept['blob_id']}/content")
    problems = [f"{what} answered {_shown(answer)}, not 410 UPLOAD_EXPIRED"
                for what, answer in (("the commit", first), ("its retry", retry),
                                     ("the PUT", put))
                if answer is None or answer.status_code != 410
                or _code(answer) != "UPLOAD_EXPIRED"]
    if retry is None or again is None or retry.headers.get("waypost-replayed") != "true" \
            or (again.status_code, again.content) != (retry.status_code, retry.content):
        problems.append("the commit's retries did not replay its recorded answer")
    if found is None or json_object(found).get("state") != "failed":
        problems.append(f"the commit's lookup is {_shown(found)}, not a recorded failure")
    if blob is None or blob.status_code != 404:
        problems.append(f"the expired upload's blob exists: {_shown(blob)}")
    if still is None or still.status_code != 200 or still.content != kept_bytes:
        problems.append(f"a blob sealed before the expiry lost its bytes: {_shown(still)}")
    return problems


def _shown(answer: httpx.Response | None) -> str:
    return "nothing" if answer is None else f"{answer.status_code} {answer.text[:120]!r}"


def _code(answer: httpx.Response) -> Any:
    error = json_object(answer).get("error")
    return error.get("code") if isinstance(error, dict) else None


def target_points(ref: Reference) -> list[str]:
    """The columns of a run: every point the target lists, then each point protocol.md §14
    requires that it leaves out (WP-HOOK-7)."""
    listed = ref.listed_points()
    return [*listed, *(p for p in REQUIRED_FAULT_POINTS if p not in listed)]


def crash_matrix(operations: tuple[str, ...] = OPERATIONS, points: Sequence[str] | None = None,
                 actions: tuple[str, ...] = ("crash",), progress: bool = True,
                 url: str | None = None, admin_token: str = "", target: str = "sqlite",
                 power_loss: bool = False) -> Matrix:
    """Run every (operation, point, action) cell against one reference (restarted as needed)
    on ``target``; with ``url``, against a running server with test hooks (restarted through
    the hook). ``points``: by default every point the target lists (:func:`target_points`).
    ``power_loss`` (sqlite): each crash is a power cut (the server's database behind the
    power-cut simulator, ``synchronous`` full): what was not synced is lost with it."""
    matrix = Matrix()
    with reference(url, admin_token, target, power_loss) as ref:
        offered = ref.listed_points()
        matrix.points = list(points) if points is not None else target_points(ref)
        cells = [(o, p, a) for a in actions for o in operations for p in matrix.points]
        for n, (operation, point, action) in enumerate(cells):
            if point in offered:
                cell = run_cell(ref, operation, point, n, action)
            elif point in REQUIRED_FAULT_POINTS:
                cell = Cell(operation, point, action, "missing", note="the target does not "
                            "offer this fault point of protocol.md §14 (WP-HOOK-7)")
            else:  # a point of another server, asked for by name
                cell = Cell(operation, point, action, "not offered", ok=True)
            matrix.cells.append(cell)
            if progress:
                print(f"  {action} {operation} × {point}: {cell.outcome}"
                      f"{'' if cell.ok else ' FAIL ' + cell.note}", file=sys.stderr)
    return matrix
