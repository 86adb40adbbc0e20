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

Outcomes: ``not reached`` (the write never passes that point: it answered normally),
``committed`` (the crash came after the commit: the lookup already shows the result, the retry
replays it), ``resumed`` (a reservation survived: the retry finished it with its reserved ids),
``not committed`` (nothing durable: the retry ran as a first attempt), ``stored`` (the raw PUT
of upload bytes, which has no key: its retry stored them).

Only the kit's HTTP vocabulary is used here (no import of the reference).
"""

from __future__ import annotations

import hashlib
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from waypost.conformance.targets import GatewayProcess, ServerProcess

#: Every fault point of protocol.md §14, and ``commit.durable`` (a server's point after a
#: transaction is durable and before its callers are answered), "not reached" where absent.
POINTS = ("reserve.after", "object.after_write", "prepare.after", "commit.before",
          "commit.durable", "commit.after", "seal.before_commit", "upload.after_store",
          "ack.after_commit", "response.before")
OPERATIONS = ("message.send", "receipt.ack", "blob.prepare", "blob.put", "blob.commit",
              "memory.publish")
CRASH_EXIT = 86


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

    @property
    def green(self) -> bool:
        return all(cell.ok for cell in self.cells)

    def table(self) -> str:
        """Per action, operations down and fault points across; each cell its outcome
        (``FAIL …`` if wrong), the failures' reasons below."""
        points = [p for p in POINTS if any(c.point == p for c in self.cells)]
        operations = [o for o in OPERATIONS if any(c.operation == o for c in self.cells)]
        width = max(len(p) for p in POINTS) + 2
        lines: list[str] = []
        for action in dict.fromkeys(c.action for c in self.cells):
            lines.append(f"{action}:".ljust(16) + "".join(p.ljust(width) for p in points))
            for operation in operations:
                row = operation.ljust(16)
                for point in points:
                    cell = next(c for c in self.cells
                                if (c.operation, c.point, c.action) == (operation, point, action))
                    row += (cell.outcome if cell.ok else f"FAIL {cell.outcome}").ljust(width)
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
        return {"green": self.green, "points": list(POINTS), "operations": list(OPERATIONS),
                "cells": [c.__dict__ for c in self.cells]}


class Reference:
    """A server with test hooks: by default the reference on one data directory, started here
    with ``--crash-mode exit`` and restarted whenever a crash ends it; or (``url`` given) a
    running server in ``abandon`` mode, restarted through ``/_test/restart``."""

    def __init__(self, data_dir: Path, url: str | None = None, admin_token: str = "",
                 gateway: GatewayProcess | None = None, gateway_secret: str = "") -> None:
        self.data_dir = data_dir
        self.admin_token = admin_token or secrets.token_urlsafe(16)
        # On D1 the gateway outlives every crash of the reference: the data is there.
        self.storage: tuple[str, ...] = ("--storage", "d1", "--gateway", gateway.url) \
            if gateway else ("--synchronous", "normal")
        self.env = {"WAYPOST_GATEWAY_SECRET": gateway_secret} if gateway else {}
        self.fixed_url = url
        self.process = None if url else self._start()
        self.tokens: dict[str, str] = {}
        self.space = f"crash-{secrets.token_hex(4)}"  # a running server may hold earlier runs

    def _start(self) -> ServerProcess:
        return ServerProcess(self.data_dir, self.admin_token, "--test-hooks", "--crash-mode",
                             "exit", "--no-access-log", *self.storage, env=self.env)

    @property
    def url(self) -> str:
        if self.process is None:
            assert self.fixed_url is not None
            return self.fixed_url
        return self.process.url

    def recover(self) -> None:
        """After a dropped connection: restart (a real process, or through the hook)."""
        if self.process is None:
            answer = self.admin("POST", "/_test/restart", {})
            if answer.status_code != 200:
                raise RuntimeError(f"restart: {answer.status_code} {answer.text}")
            return
        self.restart_after_crash()

    def restart_after_crash(self) -> None:
        """The connection dropped: the process must be ending with the crash status; start a
        new one on the same data directory."""
        assert self.process is not None
        try:
            code = self.process.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the connection dropped but the server did not end") from None
        if code != CRASH_EXIT:
            raise RuntimeError(f"the server ended with status {code}:\n"
                               + "".join(self.process.log[-20:]))
        self.process = self._start()

    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, self.url + path, json=body, timeout=30,
                             headers={"Authorization": f"Bearer {self.admin_token}"})

    def call(self, who: str, method: str, path: str, body: Any = None,
             content: bytes | None = None) -> httpx.Response | None:
        """A data-plane request; ``None`` when the connection dropped (a crash)."""
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        try:
            return httpx.request(method, self.url + path, json=body, content=content,
                                 headers=headers, timeout=30)
        except httpx.TransportError:
            return None

    def must(self, who: str, method: str, path: str, body: Any = None,
             content: bytes | None = None) -> dict[str, Any]:
        answer = self.call(who, method, path, body, content)
        if answer is None or answer.status_code >= 300:
            raise RuntimeError(f"{method} {path}: {None if answer is None else answer.text}")
        data: dict[str, Any] = answer.json()
        return data

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


def provision(ref: Reference) -> None:
    """A space with alice (writer of collection notes) and bob, an inbox and a token each."""
    def ok(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = ref.admin("POST", path, body)
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"provisioning {path}: {answer.text}")
        data: dict[str, Any] = answer.json()
        return data

    space = ref.space
    ok("/admin/v1/spaces", {"request_id": f"{space}-s", "space_id": space,
                            "display_name": space, "source_uri": f"waypost-crash://{space}",
                            "default_actor": {"actor_id": "alice", "kind": "agent",
                                              "display_name": "alice"}})
    ok(f"/admin/v1/spaces/{space}/actors", {"request_id": f"{space}-b", "actor_id": "bob",
                                            "kind": "agent", "display_name": "bob"})
    ok(f"/admin/v1/spaces/{space}/collections", {
        "request_id": f"{space}-c", "collection_id": "notes", "source_actor_id": "alice",
        "scope": "notes"})
    for actor in ("alice", "bob"):
        ok(f"/admin/v1/spaces/{space}/consumers", {
            "request_id": f"{space}-c-{actor}", "consumer_id": f"{actor}-in",
            "actor_id": actor, "view": "inbox"})
        issued = ok(f"/admin/v1/spaces/{space}/tokens", {
            "request_id": f"{space}-t-{actor}", "actor_id": actor,
            "consumer_id": f"{actor}-in",
            "scopes": ["message.send", "message.read", "receipt.write", "blob.write",
                       "memory.write", "memory.read"],
            "recipients": {"mode": "any"}, "blob_references": [],
            "collections": [{"collection_id": "notes", "actions": ["read", "write"]}]})
        ref.tokens[actor] = issued["token"]


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


def run_cell(ref: Reference, operation: str, point: str, n: int, action: str = "crash") -> Cell:
    """One cell: arm ``point`` with ``action``, write, recover, look up, retry twice, count."""
    cell = Cell(operation, point, action=action)
    write = prepare_write(ref, operation, n)
    armed = ref.admin("POST", "/_test/faults", {"point": point, "action": action})
    if armed.status_code != 200:
        raise RuntimeError(f"arming {point}: {armed.text}")
    first = ref.call(write.who, write.method, write.path, write.body, write.content)
    if first is None:
        ref.recover()  # a new process (or a restarted one): nothing stays armed
    else:
        fired = not any(a["point"] == point for a in ref.admin("GET", "/_test/faults").json()[
            "armed"])
        ref.admin("DELETE", "/_test/faults")
        if not fired:
            cell.outcome = "not reached"
            cell.ok = first.status_code < 300 and write.effects() == 1
            cell.note = f"answered {first.status_code}: {first.text[:200]}"
            return cell
        if action != "unavailable" or first.status_code != 503:
            cell.note = f"the fault fired but the write answered {first.status_code}"
            return cell
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


@contextmanager
def reference(url: str | None = None, admin_token: str = "",
              target: str = "sqlite") -> Iterator[Reference]:
    """The reference started here on ``target`` (sqlite, or d1 behind a local gateway), or
    the running server at ``url``."""
    with tempfile.TemporaryDirectory(prefix="waypost-crash-") as scratch:
        gateway, secret = None, secrets.token_urlsafe(16)
        if target == "d1" and url is None:
            gateway = GatewayProcess(Path(scratch) / "d1", secret)
        try:
            ref = Reference(Path(scratch) / "data", url, admin_token, gateway, secret)
            try:
                provision(ref)
                yield ref
            finally:
                ref.stop()
        finally:
            if gateway is not None:
                gateway.stop()


def crash_matrix(operations: tuple[str, ...] = OPERATIONS, points: tuple[str, ...] = POINTS,
                 actions: tuple[str, ...] = ("crash",), progress: bool = True,
                 url: str | None = None, admin_token: str = "", target: str = "sqlite") -> Matrix:
    """Run every (operation, point, action) cell against one reference (restarted as needed)
    on ``target``; with ``url``, against a running server with test hooks (restarted through
    the hook)."""
    matrix = Matrix()
    with reference(url, admin_token, target) as ref:
        cells = [(o, p, a) for a in actions for o in operations for p in points]
        for n, (operation, point, action) in enumerate(cells):
            cell = run_cell(ref, operation, point, n, action)
            matrix.cells.append(cell)
            if progress:
                print(f"  {action} {operation} × {point}: {cell.outcome}"
                      f"{'' if cell.ok else ' FAIL ' + cell.note}", file=sys.stderr)
    return matrix
