"""``waypost bench d1``: round trips to D1 and time per operation, beside the SQLite adapter in
the same run.

Both deployments are the reference in-process (the same app, the same requests); only the
storage differs: D1 and R2 through the gateway Worker on local workerd, or the embedded SQLite
file (``synchronous=FULL``) and local objects. For D1 every batch is counted and classified:
a *plan* (one atomic business operation: it carries a ``commit_guards`` verdict) or a *read*.
The baseline is an empty batch round trip to the gateway, measured in the same run.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

with warnings.catch_warnings():  # starlette's notice about httpx is not ours to act on here
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from waypost.adapters.d1.driver import D1Driver
from waypost.bench.machine import machine
from waypost.gateway import local_d1
from waypost.reference.server import Settings, build_app
from waypost.reference.storage.plan import Statement

ADMIN = secrets.token_urlsafe(16)
SCOPES = ["message.send", "message.read", "receipt.write", "memory.write", "memory.read",
          "blob.write", "blob.reference"]


class Deployment:
    """The reference over one storage, provisioned with a space ``b`` (alice writes, bob reads
    his inbox) and alice's collection ``notes``."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}
        self.counter = 0
        self.revision = 0
        self.inbox: list[str] = []  # bob's feed items not yet acknowledged
        self.admin("POST", "/admin/v1/spaces", {
            "space_id": "b", "display_name": "bench", "source_uri": "https://example.test/b",
            "default_actor": {"actor_id": "alice", "kind": "agent", "display_name": "alice"}})
        self.admin("POST", "/admin/v1/spaces/b/actors",
                   {"actor_id": "bob", "kind": "agent", "display_name": "bob"})
        self.admin("POST", "/admin/v1/spaces/b/collections",
                   {"collection_id": "notes", "source_actor_id": "alice", "scope": "bench"})
        for actor in ("alice", "bob"):
            self.admin("POST", "/admin/v1/spaces/b/consumers",
                       {"consumer_id": actor, "actor_id": actor, "view": "inbox"})
            issued = self.admin("POST", "/admin/v1/spaces/b/tokens", {
                "actor_id": actor, "consumer_id": actor, "scopes": SCOPES,
                "recipients": {"mode": "any"}, "blob_references": [],
                "collections": [{"collection_id": "notes", "actions": ["read", "write"]}]})
            self.tokens[actor] = issued["token"]
        self.entry_blob = self.upload("alice", b"entry")

    def rid(self) -> str:
        self.counter += 1
        return f"bench-{self.counter}"

    def admin(self, method: str, path: str, body: dict[str, Any]) -> Any:
        response = self.client.request(method, path, json={"request_id": self.rid(), **body},
                                       headers={"Authorization": f"Bearer {ADMIN}"})
        return _checked(response)

    def call(self, who: str, method: str, path: str, **kwargs: Any) -> Any:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return _checked(self.client.request(method, path, headers=headers, **kwargs))

    # The operations measured; each is what one client action costs.
    def send(self) -> None:
        sent = self.call("alice", "POST", "/v1/messages", json={
            "request_id": self.rid(), "thread": {"new": True}, "kind": "info", "subject": "s",
            "body": {"text": "hello"}, "recipient_ids": ["bob"]})
        self.inbox.append(sent["feed_item_id"])

    def read_feed(self) -> None:
        self.call("bob", "GET", "/v1/feed", params={"limit": 10})

    def ack(self) -> None:
        self.call("bob", "POST", "/v1/acks", json={
            "request_id": self.rid(), "items": [{"item_id": self.inbox.pop(), "stage": "received"}]})

    def upload(self, who: str = "alice", content: bytes | None = None) -> str:
        data = content if content is not None else secrets.token_bytes(4096)
        slot = self.call(who, "POST", "/v1/blobs", json={
            "request_id": self.rid(), "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
            "content_type": "application/octet-stream"})
        self.call(who, "PUT", f"/v1/uploads/{slot['upload_id']}/content", content=data)
        sealed = self.call(who, "POST", f"/v1/uploads/{slot['upload_id']}/commit",
                           json={"request_id": self.rid()})
        return str(sealed["blob_id"])

    def publish(self) -> None:
        self.call("alice", "POST", "/v1/collections/notes/revisions", json={
            "request_id": self.rid(), "expected_revision": self.revision, "mode": "delta",
            "items": [{"item_id": f"e{self.revision}", "path": f"e{self.revision}.md",
                       "blob_id": self.entry_blob}]})
        self.revision += 1


def _checked(response: Any) -> Any:
    """The JSON of a 2xx answer of starlette's TestClient (an httpx2 response where httpx2 is
    installed, as the MCP SDK brings it, else an httpx one)."""
    if response.status_code >= 300:
        raise RuntimeError(f"{response.request.method} {response.request.url.path} answered "
                           f"{response.status_code}: {response.text[:2000]}")
    return response.json() if response.content else None


#: The physical limit of each operation: one batch per HTTP request it takes (docs/d1.md).
GOALS = {"message.send": 1, "feed.read (10 items)": 1, "receipt.ack (1 item)": 1,
         "blob upload (prepare, PUT, commit)": 3, "memory.publish (1-entry delta)": 1}
OPERATIONS: dict[str, Callable[[Deployment], object]] = {
    "message.send": Deployment.send,
    "feed.read (10 items)": Deployment.read_feed,
    "receipt.ack (1 item)": Deployment.ack,
    "blob upload (prepare, PUT, commit)": Deployment.upload,
    "memory.publish (1-entry delta)": Deployment.publish,
}


def _measure(settings: Settings, repeats: int) -> dict[str, Any]:
    """Median and p90 milliseconds per operation, and for D1 the batches each one sent."""
    results: dict[str, Any] = {}
    with TestClient(build_app(settings)) as client:
        deployment = Deployment(client)
        # the test client's app is typed as any ASGI app; this one is Starlette's
        driver = client.app.state.context.driver  # type: ignore[attr-defined]
        sent: list[Sequence[Statement]] = []
        if isinstance(driver, D1Driver):
            driver.on_batch = sent.append
        for _ in range(repeats + 1):  # the first warms up; acks consume these
            deployment.send()
        deployment.read_feed()
        for name, operation in OPERATIONS.items():
            timings, batches = [], []
            for round_ in range(repeats + 1):
                sent.clear()
                started = time.perf_counter()
                operation(deployment)
                elapsed = time.perf_counter() - started
                if round_:  # the first round warms caches and statements up
                    timings.append(elapsed * 1000)
                    batches.append([_kind(one) for one in sent])
            entry: dict[str, Any] = {"median_ms": round(statistics.median(timings), 2),
                                     "p90_ms": round(statistics.quantiles(timings, n=10)[-1], 2)}
            if isinstance(driver, D1Driver):
                kinds = batches[-1]
                entry.update({"batches": len(kinds), "plans": kinds.count("plan"),
                              "reads": kinds.count("read"), "goal": GOALS[name],
                              "above_goal": len(kinds) - GOALS[name],
                              "same_every_time": all(b == kinds for b in batches)})
            results[name] = entry
        if isinstance(driver, D1Driver):
            results["_baseline"] = _empty_batch(client, driver, repeats * 4)
    return results


def _kind(statements: Sequence[Statement]) -> str:
    return "plan" if any("INSERT INTO commit_guards" in s.sql for s in statements) else "read"


def _empty_batch(client: TestClient, driver: D1Driver, times: int) -> dict[str, float]:
    """The gateway's own cost: a one-statement read batch, ``times`` in a row."""
    portal = client.portal
    assert portal is not None

    async def run() -> float:
        started = time.perf_counter()
        for _ in range(times):
            await driver.read([Statement("SELECT 1 AS one")])
        return (time.perf_counter() - started) * 1000 / times

    return {"batch_round_trip_ms": round(portal.call(run), 2), "batches": times}


def bench_d1(repeats: int, out: Path | None) -> dict[str, Any]:
    """Measure both adapters; print the JSON on stdout and a table on stderr."""
    with tempfile.TemporaryDirectory(prefix="waypost-bench-d1-") as tmp:
        root = Path(tmp)
        with local_d1(root / "d1", ADMIN) as settings:
            d1 = _measure(settings, repeats)
        sqlite = _measure(Settings(root / "sqlite", ADMIN, sweep_seconds=0), repeats)
    baseline = d1.pop("_baseline")
    operations = {name: {"d1": d1[name], "sqlite": sqlite[name],
                         "d1_over_sqlite": round(d1[name]["median_ms"]
                                                 / max(sqlite[name]["median_ms"], 0.001), 1)}
                  for name in OPERATIONS}
    result = {
        "benchmark": "d1", "repeats": repeats,
        "machine": machine(),
        "d1": {"gateway": "workerd via miniflare on loopback", "baseline": baseline},
        "sqlite": {"synchronous": "FULL"},
        "operations": operations,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if out is not None:
        out.write_text(text + "\n")
    print(_table(result), file=sys.stderr)
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [f"{'operation':36} {'D1 ms':>8} {'SQLite ms':>10} {'×':>5}  D1 batches (plans + "
             "reads), goal"]
    for name, row in result["operations"].items():
        d1 = row["d1"]
        lines.append(f"{name:36} {d1['median_ms']:8.2f} {row['sqlite']['median_ms']:10.2f} "
                     f"{row['d1_over_sqlite']:5.1f}  {d1['batches']} ({d1['plans']} + "
                     f"{d1['reads']}), {d1['goal']}")
    baseline = result["d1"]["baseline"]
    lines.append(f"baseline: one D1 batch round trip takes {baseline['batch_round_trip_ms']} ms; "
                 f"medians of {result['repeats']} repeats, the reference in-process on each")
    return "\n".join(lines)
