"""A load run with invariants: concurrent clients send messages, read their inbox and ACK it,
and publish into shared collections with compare-and-swap, bounded by time and by request
count; afterwards every view is re-read and the history checked
(``properties/model/load_history.py``). The run reports throughput per operation and anomalies.

Each client is an actor of one fresh space with its own inbox consumer; collection ``m<j>``
belongs to actor ``c<j>`` and the clients ``i ≡ j (mod collections)`` race to publish into it
with tokens of that actor. Every actor also has an ``audit`` consumer nobody ACKs, re-read in
full at the end, beside a space-log consumer that sees everything."""

from __future__ import annotations

import hashlib
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from waypost.properties.hostile.probes import ALL_SCOPES
from waypost.properties.model.load_history import (
    REQUIREMENTS,
    Acked,
    History,
    Published,
    Sent,
    check_acks,
    check_collection,
    check_view,
)

OPERATIONS = ("send", "read", "ack", "publish", "drain")  # drain: the inboxes' rest after
RETRIES = 5  # attempts of one request_id after a dropped connection or a 503


@dataclass
class OpStats:
    """Answers of one operation: successes, conflicts (CAS), errors, latencies."""

    ok: int = 0
    conflicts: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)

    def as_json(self, seconds: float) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def quantile(q: float) -> float:
            return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2) \
                if ordered else 0.0
        return {"ok": self.ok, "conflicts": self.conflicts, "errors": self.errors,
                "per_second": round(self.ok / seconds, 1) if seconds else 0.0,
                "p50_ms": quantile(0.5), "p95_ms": quantile(0.95), "p99_ms": quantile(0.99)}


@dataclass
class LoadReport:
    target: str
    clients: int
    seconds: float = 0.0
    requests: int = 0
    stats: dict[str, OpStats] = field(default_factory=lambda: {op: OpStats()
                                                               for op in OPERATIONS})
    history: History = field(default_factory=History)
    checked: dict[str, int] = field(default_factory=dict)

    def tally(self, op: str, *, ok: int = 0, errors: int = 0, conflicts: int = 0) -> None:
        """Count answers of ``op``; client threads call it at once, so under the lock."""
        with self.history.lock:
            stats = self.stats[op]
            stats.ok, stats.errors = stats.ok + ok, stats.errors + errors
            stats.conflicts += conflicts

    @property
    def anomalies(self) -> list[Any]:
        return self.history.anomalies

    def as_json(self) -> dict[str, Any]:
        return {"target": self.target, "clients": self.clients,
                "seconds": round(self.seconds, 3), "requests": self.requests,
                "operations": {op: s.as_json(self.seconds) for op, s in self.stats.items()},
                "checked": self.checked, "requirements": list(REQUIREMENTS),
                "indeterminate": self.history.indeterminate,
                "anomalies": [a.as_json() for a in self.anomalies]}


@dataclass
class Actor:
    name: str
    token: str  # its inbox consumer: sends, reads, ACKs
    audit: str  # its audit consumer: the final re-read
    publisher: str  # a token of its collection's source actor
    collection: str
    blob_id: str = ""


class Budget:
    """The run's bounds: a deadline and a request count, shared by the clients."""

    def __init__(self, seconds: float, requests: int) -> None:
        self.deadline, self.left = time.monotonic() + seconds, requests
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0 or time.monotonic() >= self.deadline:
                return False
            self.left -= 1
            return True


class Space:
    """The run's space, provisioned through the control plane."""

    def __init__(self, client: httpx.Client, admin_token: str, clients: int) -> None:
        self.client, self.admin_token = client, admin_token
        self.id = f"load-{secrets.token_hex(4)}"
        described = client.get("/v1/describe").json()
        self.limits: dict[str, int] = dict(described.get("limits", {}))
        self.names = [f"c{i}" for i in range(clients)]
        self.collections = [f"m{j}" for j in range(max(1, clients // 4))]
        self._n = 0
        self.admin("/admin/v1/spaces", {
            "space_id": self.id, "display_name": f"waypost kit load {self.id}", "source_uri": f"waypost-kit://{self.id}",
            "default_actor": {"actor_id": "c0", "kind": "agent", "display_name": "c0"}})
        for name in self.names[1:]:
            self.admin(f"/admin/v1/spaces/{self.id}/actors",
                       {"actor_id": name, "kind": "agent", "display_name": name})
        for j, cid in enumerate(self.collections):
            self.admin(f"/admin/v1/spaces/{self.id}/collections", {
                "collection_id": cid, "source_actor_id": self.names[j], "scope": "load"})
        self.actors = [self._actor(i, name) for i, name in enumerate(self.names)]
        self.log = self.token("c0", "log", "space_log", ["message.read", "space.observe",
                                                         "memory.read"], [])
        for j, cid in enumerate(self.collections):  # one entry blob per collection's source
            self.actors[j].blob_id = self._blob(self.actors[j].token, cid.encode())
        for actor in self.actors:
            actor.blob_id = self.actors[self.collections.index(actor.collection)].blob_id

    def admin(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._n += 1
        answer = self.client.post(path, json={"request_id": f"{self.id}.p{self._n}", **body},
                                  headers={"Authorization": f"Bearer {self.admin_token}"})
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"provisioning {path} failed: {answer.status_code} "
                               f"{answer.text[:300]}")
        data: dict[str, Any] = answer.json()
        return data

    def token(self, actor: str, consumer: str, view: str, scopes: list[str],
              writes: list[str]) -> str:
        """A new consumer of ``actor`` and a token on it reading every collection."""
        self.admin(f"/admin/v1/spaces/{self.id}/consumers",
                   {"consumer_id": consumer, "actor_id": actor, "view": view})
        issued = self.admin(f"/admin/v1/spaces/{self.id}/tokens", {
            "actor_id": actor, "consumer_id": consumer, "scopes": scopes,
            "recipients": {"mode": "any"}, "blob_references": [],
            "collections": [{"collection_id": cid,
                             "actions": ["read", "write"] if cid in writes else ["read"]}
                            for cid in self.collections]})
        return str(issued["token"])

    def _actor(self, i: int, name: str) -> Actor:
        collection = self.collections[i % len(self.collections)]
        source = self.names[self.collections.index(collection)]
        return Actor(name, self.token(name, f"{name}-inbox", "inbox", ALL_SCOPES, []),
                     self.token(name, f"{name}-audit", "inbox", ["message.read",
                                                                  "memory.read"], []),
                     self.token(source, f"{name}-pub", "inbox", ALL_SCOPES, [collection]),
                     collection)

    def _blob(self, token: str, data: bytes) -> str:
        auth = {"Authorization": f"Bearer {token}"}
        self._n += 1
        prepared = self.client.post("/v1/blobs", headers=auth, json={
            "request_id": f"{self.id}.b{self._n}", "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "content_type": "text/plain"}).json()
        self.client.put(f"/v1/uploads/{prepared['upload_id']}/content", content=data,
                        headers=auth)
        sealed = self.client.post(f"/v1/uploads/{prepared['upload_id']}/commit", headers=auth,
                                  json={"request_id": f"{self.id}.s{self._n}"})
        return str(sealed.json()["blob_id"])


class Client:
    """One client thread: its actor, its RNG, its cursor and what it acknowledged."""

    def __init__(self, index: int, space: Space, http: httpx.Client, report: LoadReport,
                 budget: Budget, seed: int) -> None:
        self.index, self.space, self.http, self.report = index, space, http, report
        self.budget, self.rng = budget, random.Random(seed * 1000 + index)
        self.actor = space.actors[index]
        self.cursor: str | None = None
        self.delivered: list[dict[str, Any]] = []
        self.acked: list[str] = []
        self.head = 0
        self.n = 0

    def run(self) -> None:
        while self.budget.take():
            operation = self.rng.choices(["send", "read", "publish"], weights=(4, 4, 2))[0]
            getattr(self, operation)()

    def call(self, op: str, method: str, path: str, token: str, body: Any = None,
             params: dict[str, Any] | None = None) -> httpx.Response | None:
        """One request, retried with the same body after a dropped connection or a 503 or
        a pending submission; None when it never got an answer."""
        for _ in range(RETRIES):
            started = time.monotonic()
            try:
                answer = self.http.request(method, path, json=body, params=params,
                                           headers={"Authorization": f"Bearer {token}"})
            except httpx.TransportError as error:
                self.report.history.anomaly("transport", f"{op}: {error!r}")
                continue
            with self.report.history.lock:
                self.report.requests += 1
                self.report.stats[op].latencies.append(time.monotonic() - started)
            if answer.status_code == 503 or (answer.status_code == 409 and _code(answer) ==
                                             "SUBMISSION_PENDING"):
                continue
            if answer.status_code >= 500:
                self.report.history.anomaly("server error", f"{op}: {answer.status_code} "
                                            f"{answer.text[:200]}")
            return answer
        with self.report.history.lock:
            self.report.history.indeterminate += 1
        self.report.tally(op, errors=1)
        return None

    def rid(self, kind: str) -> str:
        self.n += 1
        return f"{self.space.id}.{kind}{self.index}.{self.n}"

    def expect(self, op: str, answer: httpx.Response | None, status: int) -> bool:
        if answer is None:
            return False
        if answer.status_code != status:
            self.report.tally(op, errors=1)
            self.report.history.anomaly("unexpected answer", f"{op}: {answer.status_code} "
                                        f"{answer.text[:200]}")
            return False
        self.report.tally(op, ok=1)
        return True

    def send(self) -> None:
        others = [a.name for a in self.space.actors if a.name != self.actor.name] \
            or [self.actor.name]
        recipients = tuple(self.rng.sample(others, min(len(others), self.rng.choice((1, 1, 2)))))
        request_id = self.rid("s")
        answer = self.call("send", "POST", "/v1/messages", self.actor.token, {
            "request_id": request_id, "recipient_ids": list(recipients),
            "thread": {"new": True}, "kind": "info", "subject": request_id,
            "body": {"text": "load"}})
        if self.expect("send", answer, 201):
            assert answer is not None
            data = answer.json()
            self.report.history.add("sent", Sent(request_id, data["message_id"],
                                                 data["feed_item_id"], int(data["sequence"]),
                                                 self.actor.name, recipients))

    def read(self, ack: bool = True) -> bool:
        """One page of the inbox from the client's cursor, then an ACK of some of it with the
        page's cursor as checkpoint (``ack``: during the run; else the drain after it);
        whether more is there."""
        op = "read" if ack else "drain"
        params: dict[str, Any] = {"limit": self.rng.randint(1, self.space.limits.get(
            "page_limit", 50))}
        if self.cursor:
            params["cursor"] = self.cursor
        answer = self.call(op, "GET", "/v1/feed", self.actor.token, params=params)
        if not self.expect(op, answer, 200):
            return False
        assert answer is not None
        page = answer.json()
        self.delivered += page["items"]
        self.cursor = page["next_cursor"]
        if ack and page["items"]:
            self.ack(page)
        return bool(page["has_more"])

    def ack(self, page: dict[str, Any]) -> None:
        fresh = [i["item_id"] for i in page["items"] if i["type"] != "receipt"]
        again = [self.rng.choice(self.acked)] if self.acked and self.rng.random() < 0.3 else []
        chosen = list(dict.fromkeys(again + fresh))[:self.space.limits.get("ack_items", 20)]
        body: dict[str, Any] = {"request_id": self.rid("a"), "checkpoint": {
            "cursor": page["next_cursor"]}, "items": [
            {"item_id": item, "stage": self.rng.choice(("received", "processed"))}
            for item in chosen]}
        answer = self.call("ack", "POST", "/v1/acks", self.actor.token, body)
        if self.expect("ack", answer, 200):
            assert answer is not None
            consumer = f"{self.actor.name}-inbox"
            for item in answer.json()["items"]:
                self.report.history.add("acked", Acked(consumer, item["item_id"], item["stage"],
                                                       int(item["receipt_version"]),
                                                       bool(item["changed"])))
            self.acked += fresh

    def publish(self) -> None:
        """One new entry into the client's collection, at the head it knows; a conflict
        moves it to the current head and tries again (a few times)."""
        for _ in range(4):
            item_id = self.rid("i").replace(".", "_").replace("-", "_")[-96:]
            answer = self.call("publish", "POST",
                               f"/v1/collections/{self.actor.collection}/revisions",
                               self.actor.publisher, {
                                   "request_id": self.rid("p"), "expected_revision": self.head,
                                   "mode": "delta", "items": [{
                                       "item_id": item_id, "path": f"{self.actor.name}/{item_id}",
                                       "blob_id": self.actor.blob_id}]})
            if answer is not None and answer.status_code == 409 and \
                    _code(answer) == "REVISION_CONFLICT":
                self.report.tally("publish", conflicts=1)
                self.head = int(answer.json()["error"]["details"]["current_revision"])
                if not self.budget.take():
                    return
                continue
            if self.expect("publish", answer, 201):
                assert answer is not None
                data = answer.json()
                self.head = int(data["revision"])
                self.report.history.add("published", Published(
                    self.actor.collection, self.head, int(data["parent_revision"]), item_id))
            return


def _code(answer: httpx.Response) -> str | None:
    try:
        code = answer.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None


Progress = Callable[[LoadReport, float], None]


def run(make_client: Callable[[], httpx.Client], admin_token: str, target: str, *,
        clients: int = 16, seconds: float = 10.0, max_requests: int = 1_000_000,
        seed: int | None = None, progress: Progress | None = None,
        progress_seconds: float = 5.0) -> LoadReport:
    """Drive ``clients`` threads for ``seconds`` (at most ``max_requests`` requests), then
    re-read every view and check the history."""
    seed = random.randrange(2**32) if seed is None else seed
    report = LoadReport(target, clients)
    with make_client() as setup:
        space = Space(setup, admin_token, clients)
        started = time.monotonic()
        budget = Budget(seconds, max_requests)
        https = [make_client() for _ in range(clients)]
        try:
            workers = [Client(i, space, https[i], report, budget, seed) for i in range(clients)]
            threads = [threading.Thread(target=w.run, name=f"load-{i}", daemon=True)
                       for i, w in enumerate(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:  # a progress line every progress_seconds meanwhile
                while thread.is_alive():
                    thread.join(timeout=progress_seconds)
                    if thread.is_alive() and progress is not None:
                        progress(report, time.monotonic() - started)
            report.seconds = time.monotonic() - started
            for worker in workers:  # the rest of each inbox, without ACKs
                while worker.read(ack=False):
                    pass
            reread(space, setup, workers, report)
        finally:
            for http in https:
                http.close()
    return report


class Unread(Exception):
    """A read of the final re-read that never got a 200, retried as the run's requests are."""


def _get(client: httpx.Client, path: str, token: str,
         params: dict[str, Any] | None = None) -> dict[str, Any]:
    detail = ""
    for _ in range(RETRIES):
        try:
            answer = client.get(path, params=params, headers={"Authorization": f"Bearer {token}"})
        except httpx.TransportError as error:
            detail = repr(error)
            continue
        if answer.status_code == 200:
            data: dict[str, Any] = answer.json()
            return data
        detail = f"{answer.status_code} {answer.text[:200]}"
        if answer.status_code != 503:
            break
    raise Unread(f"GET {path}: {detail}")


def _all_items(client: httpx.Client, token: str, page_limit: int, path: str = "/v1/feed",
               ids: bool = False) -> list[Any]:
    """Every item of a paged list from its start (``ids``: their item_ids only)."""
    items: list[Any] = []
    params: dict[str, Any] = {"limit": page_limit}
    while True:
        page = _get(client, path, token, params)
        items += [item["item_id"] for item in page["items"]] if ids else page["items"]
        if not page["has_more"]:
            return items
        params["cursor"] = page["next_cursor"]


def _reread_collection(client: httpx.Client, space: Space, collection: str,
                       history: History, limit: int) -> int:
    """One collection's head, parents and head entries against the history; its head."""
    token = next(a for a in space.actors if a.collection == collection).publisher
    path = f"/v1/collections/{collection}"
    head = int(_get(client, path, token)["current_revision"])
    parents: dict[int, int] = {  # a missing parent (-1) is an anomaly
        r: _get(client, f"{path}/revisions/{r}", token).get("parent_revision", -1)
        for r in range(1, head + 1)}
    entries = _all_items(client, token, limit, f"{path}/revisions/{head}/items", ids=True) \
        if head else []
    history.anomalies += check_collection(collection, head, history, entries, parents)
    return head


def reread(space: Space, client: httpx.Client, workers: list[Client],
           report: LoadReport) -> None:
    """Every view from its start and every collection, against the history: the space log
    in pages as large as published, each inbox in pages of 7 (another cut of page edges
    than its reader's). A read that never gets a 200 is an anomaly, and what it would
    have shown goes unchecked."""
    history, limit = report.history, space.limits.get("page_limit", 50)
    heads: dict[str, int] = {}
    views = 0
    for collection in space.collections:
        try:
            heads[collection] = _reread_collection(client, space, collection, history, limit)
        except Unread as error:
            history.anomaly("re-read", f"collection {collection}: {error}", collection)
    try:
        log = _all_items(client, space.log, limit)
    except Unread as error:
        history.anomaly("re-read", f"space log: {error}")
        log = None
    if log is not None:
        producers = {item["item_id"]: item["producer_id"] for item in log}
        history.anomalies += check_view("space log", log, history, None, heads, producers)
        views += 1
        for worker in workers:
            views += _reread_inbox(client, worker, history, heads, producers, min(limit, 7))
    history.anomalies += check_acks(history)
    report.checked = {"views": views, "messages": len(history.sent),
                      "receipts": sum(a.changed for a in history.acked),
                      "revisions": sum(heads.values()), "collections": len(heads)}


def _reread_inbox(client: httpx.Client, worker: Client, history: History,
                  heads: dict[str, int], producers: dict[str, str], limit: int) -> int:
    """An inbox as its client read it and re-read from its start; the views checked."""
    name = worker.actor.name
    history.anomalies += check_view(f"{name}'s inbox as read during the run",
                                    worker.delivered, history, name, heads, producers)
    try:
        again = _all_items(client, worker.actor.audit, limit)
    except Unread as error:
        history.anomaly("re-read", f"{name}'s inbox: {error}")
        return 1
    history.anomalies += check_view(f"{name}'s inbox re-read", again, history, name, heads,
                                    producers)
    return 2
