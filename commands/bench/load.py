"""``waypost bench feed|blobs``: the reference under concurrent load, over real HTTP against
a child ``waypost serve``, each figure beside a baseline measured in the same run
(``waypost bench send`` is :mod:`waypost.bench.send`).

- feed: the p50 of a feed page (100 items) at two feed sizes, and their ratio;
- blobs: the p99 of ``/v1/describe`` while slow clients download a 64 MiB blob, over its p50 at
  rest, with the server's peak RSS growth; the same while manifests are refused (one at
  ``manifest_input_bytes`` of empty items, one over it).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import multiprocessing.process
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import httpx

from waypost.bench.fill import fill
from waypost.bench.machine import machine
from waypost.bench.wire import (
    Connection,
    Served,
    millis,
    served,
)
from waypost.reference.server import DATABASE

MIB = 1 << 20
Request = Callable[[Connection, str], Awaitable[tuple[int, bytes]]]


async def _pages(runs: Sequence[Served], repeats: int) -> list[list[float]]:
    """Seconds of ``repeats`` reads of bob's first feed page of 100 (his checkpoint is 0) on
    each server, taken in turn (server 1, server 2, server 1, …) so that whatever else the
    machine does weighs on every size alike."""
    connections = [await Connection.open(run.server.port) for run in runs]
    seconds: list[list[float]] = [[] for _ in runs]
    try:
        for _ in range(repeats):
            for run, connection, taken in zip(runs, connections, seconds, strict=True):
                started = time.perf_counter()
                status, body = await connection.request("GET", "/v1/feed?limit=100",
                                                        run.tokens["bob"])
                taken.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"feed answered {status}: {body[:300]!r}")
    finally:
        for connection in connections:
            connection.close()
    return seconds


def bench_feed(sizes: Sequence[int], repeats: int) -> dict[str, Any]:
    """Feed page p50 at each size: one server per size, its feed filled by the bulk path of
    :mod:`waypost.bench.fill`, then the pages read over HTTP from the servers in turn."""
    filled = []
    with ExitStack() as stack:
        for size in sorted(sizes):
            run = stack.enter_context(served("normal"))
            started = time.perf_counter()
            fill(run.data_dir / DATABASE, run.tokens["alice"], 0, size)
            filled.append((size, run, round(time.perf_counter() - started, 1)))
        timings = asyncio.run(_pages([run for _, run, _ in filled], repeats))
    rows = [{"items": size, "fill_seconds": seconds, **millis(taken)}
            for (size, _, seconds), taken in zip(filled, timings, strict=True)]
    return {"benchmark": "feed", "machine": machine(), "server": {"synchronous": "normal"},
            "fill": "bulk: the rows of alice's sends written straight into the database, "
                    "10,000 sends per transaction (waypost.bench.fill)",
            "reads": "over HTTP, one server per size, the servers read in turn",
            "pages": rows, "ratio_p50_largest_over_smallest":
                round(rows[-1]["p50_ms"] / rows[0]["p50_ms"], 2)}


def _upload(run: Served, chunks: Callable[[], Iterator[bytes]], size: int) -> str:
    hasher = hashlib.sha256()
    for chunk in chunks():
        hasher.update(chunk)
    auth = {"Authorization": f"Bearer {run.tokens['alice']}"}
    with httpx.Client(base_url=run.server.url, timeout=600, headers=auth) as client:
        slot = client.post("/v1/blobs", json={
            "request_id": f"blob-{hasher.hexdigest()[:16]}", "size": size,
            "sha256": hasher.hexdigest(), "content_type": "application/octet-stream"}).json()
        client.put(f"/v1/uploads/{slot['upload_id']}/content", content=chunks(),
                   headers={"Content-Length": str(size)}).raise_for_status()
        client.post(f"/v1/uploads/{slot['upload_id']}/commit",
                    json={"request_id": f"seal-{slot['upload_id']}"}).raise_for_status()
    return str(slot["blob_id"])


def slow_download(port: int, token: str, blob_id: str, delay: float) -> None:
    """Read the blob 256 KiB at a time with a pause after each: a slow client. Each runs in a
    process of its own, so the client timing describe shares no interpreter lock with it."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(f"GET /v1/blobs/{blob_id}/content HTTP/1.1\r\nHost: bench\r\n"
                           f"Authorization: Bearer {token}\r\n"
                           "Connection: close\r\n\r\n".encode())
        while connection.recv(256 * 1024):
            time.sleep(delay)


Load = threading.Thread | multiprocessing.process.BaseProcess


def _describe_while(run: Served, load: Sequence[Load], minimum: int = 20) -> list[float]:
    """Describe latencies, one after another, until every ``load`` thread has ended (and at
    least ``minimum`` of them)."""
    for thread in load:
        thread.start()
    seconds: list[float] = []
    with httpx.Client(base_url=run.server.url, timeout=60) as client:
        while any(thread.is_alive() for thread in load) or len(seconds) < minimum:
            started = time.perf_counter()
            client.get("/v1/describe").raise_for_status()
            seconds.append(time.perf_counter() - started)
    for thread in load:
        thread.join()
    return seconds


def _under(run: Served, rest: dict[str, float], load: Sequence[Load]) -> dict[str, Any]:
    before = run.rss_mib()
    during = millis(_describe_while(run, load))
    after = run.rss_mib()
    growth = None if after["VmHWM"] is None or before["VmHWM"] is None else round(
        after["VmHWM"] - before["VmHWM"], 1)
    return {"describe": during, "p99_over_rest_p50": round(during["p99_ms"] / rest["p50_ms"], 2),
            # what the load adds to the tail, beside what the machine gives it at rest
            "p99_over_rest_p99": round(during["p99_ms"] / rest["p99_ms"], 2),
            "server_rss_before_mib": before, "server_rss_after_mib": after,
            "server_peak_rss_growth_mib": growth}


def _refused_manifest(run: Served, blob_id: str, seconds: list[float]) -> None:
    auth = {"Authorization": f"Bearer {run.tokens['alice']}"}
    with httpx.Client(base_url=run.server.url, timeout=600, headers=auth) as client:
        head = client.get("/v1/collections/notes").json()["current_revision"]
        started = time.perf_counter()
        answer = client.post("/v1/collections/notes/revisions", json={
            "request_id": f"manifest-{time.perf_counter_ns()}", "expected_revision": head,
            "mode": "snapshot", "manifest_blob_id": blob_id})
        seconds.append(time.perf_counter() - started)
    if answer.status_code != 413:
        raise RuntimeError(f"the manifest answered {answer.status_code}: {answer.text[:300]}")


def _empty_items(size: int) -> Callable[[], Iterator[bytes]]:
    """``{"items":[{},{},…]}`` of exactly ``size`` bytes (a trailing space pads it)."""
    count = (size - len('{"items":[]}')) // 3
    body = b'{"items":[' + b",".join([b"{}"] * count) + b"]}"

    def chunks() -> Iterator[bytes]:
        padded = body + b" " * (size - len(body))
        for start in range(0, size, MIB):
            yield padded[start:start + MIB]
    return chunks


def bench_blobs(downloaders: int, blob_mib: int, delay: float) -> dict[str, Any]:
    """Describe p99 during slow downloads and refused manifests, over its p50 at rest."""
    with served("full") as run:
        with httpx.Client(base_url=run.server.url, timeout=60) as client:
            limit = int(client.get("/v1/describe").json()["limits"]["manifest_input_bytes"])
        size = blob_mib * MIB
        block = bytes(range(256)) * 4096
        blob_id = _upload(run, lambda: (block[:min(MIB, size - s)] for s in range(0, size, MIB)),
                          size)
        at_limit = _upload(run, _empty_items(limit), limit)
        over = _upload(run, _empty_items(limit + MIB), limit + MIB)
        rest = millis(_describe_while(run, [], minimum=500))
        forked = multiprocessing.get_context("fork")  # no thread runs here: forking is safe
        downloads = _under(run, rest, [forked.Process(target=slow_download, args=(
            run.server.port, run.tokens["alice"], blob_id, delay)) for _ in range(downloaders)])
        refusals: dict[str, list[float]] = {"at_limit": [], "over_limit": []}
        manifests = _under(run, rest, [threading.Thread(
            target=_refused_manifest, args=(run, blob, refusals[name]))
            for name, blob in (("at_limit", at_limit), ("over_limit", over)) for _ in range(2)])
    return {"benchmark": "blobs", "machine": machine(), "describe_at_rest": rest,
            "downloads": {"clients": downloaders, "blob_mib": blob_mib,
                          "pause_per_256_kib_s": delay, **downloads},
            "manifests": {"manifest_input_bytes": limit,
                          "seconds_to_413": {k: [round(s, 3) for s in v]
                                             for k, v in refusals.items()}, **manifests}}
