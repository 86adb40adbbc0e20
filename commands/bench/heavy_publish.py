"""The heavy-collection section of ``waypost bench publish``: what a small publish costs on a
collection of large entries, and what it costs everybody else (docs/performance.md "Publishes
that cost what they change").

A collection is filled with ``entries`` entries of about 5 KB each (a 900-byte path, 4,000 bytes
of metadata), then ``repeats`` one-entry deltas (one entry moved to a new path) and ``repeats``
unchanged publishes (the same delta again: ``200 changed:false``), each on its own, while
another client times ``GET /v1/describe`` one after another. The figures:

* the data directory's growth per publish: the database's used pages (``page_count −
  freelist_count``, read through a read-only SQLite connection, which sees the WAL) and the
  blob files, beside the bytes of the revision's manifest object (the floor: the protocol asks
  for a complete manifest per revision);
* each publish's wall time, and the other client's describe latency (median, p99, worst).

The targets (issue "No actor slows the others"): growth at most 1.5× the manifest's bytes, an
unchanged publish at most 50 ms writing no manifest and no entry rows, the other client's worst
latency at most 50 ms.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx

from waypost.bench.publish_client import Bench

PATH_BYTES, METADATA_CHARS = 900, 3_980  # with the ids: an entry of about 5 KB
GROWTH_FACTOR, UNCHANGED_MS, WORST_MS = 1.5, 50.0, 50.0
REST_DESCRIBES = 200


def _item(bench: Bench, n: int, moved: int | None = None) -> dict[str, Any]:
    stem = f"heavy/{n:05d}/" if moved is None else f"moved/{moved}/{n:05d}/"
    return {"item_id": f"h{n:05d}", "path": stem + "p" * (PATH_BYTES - len(stem)),
            "blob_id": bench.blob_id, "metadata": {"note": "m" * METADATA_CHARS}}


def used_bytes(data_dir: Path) -> int:
    """The database's used pages (committed data, the WAL included) plus the blob files."""
    database = next(data_dir.glob("*.sqlite3"))
    connection = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        pages, free, size = (int(str(connection.execute(f"PRAGMA {name}").fetchall()[0][0]))
                             for name in ("page_count", "freelist_count", "page_size"))
    finally:
        connection.close()
    blobs = sum(path.stat().st_size for path in data_dir.rglob("*")
                if path.is_file() and not path.name.startswith(database.name))
    return (pages - free) * size + blobs


@contextlib.contextmanager
def _other_client(url: str) -> Iterator[list[float]]:
    """Another client timing ``GET /v1/describe`` one after another until the block ends."""
    taken: list[float] = []
    stop = threading.Event()

    def loop() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while not stop.is_set():
                started = time.perf_counter()
                client.get("/v1/describe").raise_for_status()
                taken.append(time.perf_counter() - started)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield taken
    finally:
        stop.set()
        thread.join(timeout=60)


def _latency(seconds: list[float]) -> dict[str, Any]:
    ordered = sorted(seconds) or [0.0]
    p99 = ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]
    return {"requests": len(seconds), "median_ms": round(1000 * statistics.median(ordered), 2),
            "p99_ms": round(1000 * p99, 2), "max_ms": round(1000 * ordered[-1], 2)}


def _publish(bench: Bench, cid: str, head: int, items: list[dict[str, Any]],
             status: int) -> float:
    body = {"request_id": bench.rid(), "expected_revision": head, "mode": "delta",
            "items": items}
    started = time.perf_counter()
    bench.call("POST", f"/v1/collections/{cid}/revisions", expect=status, body=body)
    return time.perf_counter() - started


def _manifest_bytes(bench: Bench, cid: str, revision: int) -> int:
    meta = bench.call("GET", f"/v1/collections/{cid}/revisions/{revision}", expect=200).json()
    blob = bench.call("GET", f"/v1/blobs/{meta['manifest_blob_id']}", expect=200).json()
    return int(blob["size"])


def heavy_section(bench: Bench, data_dir: Path, cid: str, entries: int,
                  repeats: int) -> dict[str, Any]:
    """Fill ``cid`` with ``entries`` large entries; then the deltas and the unchanged
    publishes, each timed with its growth, while another client times describe."""
    per_publish = max(1, int(bench.limits["request_bytes"]) // 5_600)
    head, started = 0, time.perf_counter()
    for start in range(0, entries, per_publish):
        _publish(bench, cid, head, [_item(bench, n) for n in
                                    range(start, min(entries, start + per_publish))], 201)
        head += 1
    fill_seconds = time.perf_counter() - started
    with _other_client(str(bench.client.base_url)) as resting:
        while len(resting) < REST_DESCRIBES:
            time.sleep(0.01)
    rest = _latency(list(resting))
    deltas: list[dict[str, float]] = []
    unchanged: list[dict[str, float]] = []
    with _other_client(str(bench.client.base_url)) as taken:
        for k in range(repeats):
            before = used_bytes(data_dir)
            seconds = _publish(bench, cid, head, [_item(bench, k % entries, moved=k)], 201)
            head += 1
            deltas.append({"seconds": seconds, "growth": used_bytes(data_dir) - before,
                           "manifest": _manifest_bytes(bench, cid, head)})
        last = repeats - 1  # the last delta again: the state it made, unchanged
        for _ in range(repeats):
            before = used_bytes(data_dir)
            seconds = _publish(bench, cid, head, [_item(bench, last % entries, moved=last)],
                               200)
            unchanged.append({"seconds": seconds, "growth": used_bytes(data_dir) - before})
        during = list(taken)
    ratio = [row["growth"] / row["manifest"] for row in deltas]
    times = {name: _latency([row["seconds"] for row in rows])
             for name, rows in (("delta", deltas), ("unchanged", unchanged))}
    other = _latency(during)
    worst_ratio = round(max(ratio), 3)
    found: dict[str, Any] = {
        "entries": entries, "entry_bytes_about": PATH_BYTES + METADATA_CHARS + 120,
        "fill_publishes": math.ceil(entries / per_publish), "fill_seconds": round(fill_seconds, 2),
        "manifest_bytes": deltas[-1]["manifest"] if deltas else None,
        "delta": {**times["delta"], "growth_bytes_median": statistics.median(
            row["growth"] for row in deltas), "growth_over_manifest_max": worst_ratio},
        "unchanged": {**times["unchanged"], "growth_bytes_max": max(
            row["growth"] for row in unchanged)},
        "other_client_describe": other, "describe_at_rest": rest,
        "event_loop_lag": {  # seen from outside: describe's time above its median at rest
            "p99_ms": round(max(0.0, other["p99_ms"] - rest["median_ms"]), 2),
            "max_ms": round(max(0.0, other["max_ms"] - rest["median_ms"]), 2)},
    }
    found["targets"] = {
        "delta_growth_over_manifest": _verdict(worst_ratio, GROWTH_FACTOR),
        "unchanged_publish_max_ms": _verdict(times["unchanged"]["max_ms"], UNCHANGED_MS),
        "other_client_worst_ms": _verdict(other["max_ms"], WORST_MS),
    }
    return found


def _verdict(measured: float, limit: float) -> dict[str, Any]:
    return {"measured": measured, "at_most": limit,
            "verdict": "met" if measured <= limit else "not met"}
