"""``waypost bench publish``: what a one-entry delta publish costs as a collection grows, and
whether a large upload is streamed, against the reference server started as a child process.

Everything goes over real HTTP (this module never imports the reference): a space with one
writer is provisioned through the control plane, one small blob is uploaded for all entries,
then

* baseline: ``GET /v1/describe`` round trips per second, and a one-entry delta publish on an
  empty collection (a fresh collection at revision 0 for every repeat);
* publish: for each size, a collection filled with that many entries (deltas of at most the
  published ``inline_items_per_publish``), then ``repeats`` timed one-entry delta publishes,
  each moving one existing entry to a new path, so the collection keeps exactly that many
  entries (adding entries would pass ``memory_entries_per_revision`` at its 10,000 default);
* upload: ``blob.prepare``, the content PUT streamed from a generator in 1 MiB chunks, and
  ``blob.commit``, with the server process's peak resident memory (``VmHWM``) before and
  after. The upload runs before the collections are filled, so the peak before it is the
  server's small resting size and any buffering of the body would show as growth.
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import random
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.heavy_publish import heavy_section
from waypost.bench.machine import baseline, machine
from waypost.bench.publish_client import Bench, BenchError
from waypost.conformance.targets import ServerProcess

DEFAULT_SIZES = (100, 1_000, 10_000)
HEAVY_ENTRIES = 2_000
CHUNK = 1 << 20
MIB = 1 << 20
SPACE = "bench"
WRITER = "writer"
SCOPES = ["memory.write", "memory.read", "blob.write"]


@contextmanager
def _server(synchronous: str) -> Iterator[tuple[ServerProcess, Path, str]]:
    """The embedded reference in a temporary data directory, like the kit's sqlite target,
    but with the process at hand (its pid is read for memory)."""
    admin_token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="waypost-bench-") as data_dir:
        server = ServerProcess(Path(data_dir) / "data", admin_token, "--no-access-log",
                               "--synchronous", synchronous)
        try:
            yield server, Path(data_dir), admin_token
        finally:
            server.stop()


def _provision(bench: Bench, collections: list[str]) -> None:
    """A space whose default actor writes every collection, its consumer, and its token."""
    bench.call("POST", "/admin/v1/spaces", expect=201, admin=True, body={
        "request_id": bench.rid(), "space_id": SPACE, "display_name": "benchmark",
        "source_uri": "waypost-bench://publish",
        "default_actor": {"actor_id": WRITER, "kind": "agent", "display_name": WRITER}})
    bench.call("POST", f"/admin/v1/spaces/{SPACE}/consumers", expect=201, admin=True, body={
        "request_id": bench.rid(), "consumer_id": f"{WRITER}-inbox", "actor_id": WRITER,
        "view": "inbox"})
    for collection_id in collections:
        bench.call("POST", f"/admin/v1/spaces/{SPACE}/collections", expect=201, admin=True,
                   body={"request_id": bench.rid(), "collection_id": collection_id,
                         "source_actor_id": WRITER, "scope": "benchmark"})
    issued = bench.call("POST", f"/admin/v1/spaces/{SPACE}/tokens", expect=201, admin=True, body={
        "request_id": bench.rid(), "actor_id": WRITER, "consumer_id": f"{WRITER}-inbox",
        "scopes": SCOPES, "recipients": {"mode": "any"},
        "collections": [{"collection_id": cid, "actions": ["read", "write"]}
                        for cid in collections],
        "blob_references": []})
    bench.token = issued.json()["token"]


def _chunks(size: int) -> Iterator[bytes]:
    """``size`` deterministic bytes, 1 MiB at a time (each chunk numbered, so no two alike);
    never more than one chunk is held."""
    block = random.Random(size).randbytes(CHUNK)
    for index, start in enumerate(range(0, size, CHUNK)):
        yield (index.to_bytes(8, "big") + block[8:])[:min(CHUNK, size - start)]


def _upload(bench: Bench, size: int) -> tuple[str, dict[str, float]]:
    """prepare → PUT (streamed) → commit; the blob id and the seconds of each step."""
    hasher = hashlib.sha256()
    for chunk in _chunks(size):
        hasher.update(chunk)
    started = time.perf_counter()
    prepared = bench.call("POST", "/v1/blobs", expect=201, body={
        "request_id": bench.rid(), "size": size, "sha256": hasher.hexdigest(),
        "content_type": "application/octet-stream"}).json()
    put_started = time.perf_counter()
    bench.call("PUT", f"/v1/uploads/{prepared['upload_id']}/content", expect=200,
               content=_chunks(size), headers={"Content-Length": str(size),
                                               "Content-Type": "application/octet-stream"})
    commit_started = time.perf_counter()
    sealed = bench.call("POST", f"/v1/uploads/{prepared['upload_id']}/commit", expect=200,
                        body={"request_id": bench.rid()}).json()
    ended = time.perf_counter()
    if sealed.get("blob_id") != prepared["blob_id"] or sealed.get("size") != size:
        raise BenchError(f"blob.commit answered {sealed}, expected blob {prepared['blob_id']} "
                         f"of {size} bytes")
    return str(sealed["blob_id"]), {"prepare": put_started - started,
                                    "put": commit_started - put_started,
                                    "commit": ended - commit_started, "total": ended - started}


def _publish(bench: Bench, collection_id: str, expected_revision: int,
             items: list[dict[str, Any]]) -> float:
    """One delta publish that must create revision ``expected_revision + 1``; its seconds."""
    body = {"request_id": bench.rid(), "expected_revision": expected_revision, "mode": "delta",
            "items": items}
    path = f"/v1/collections/{collection_id}/revisions"
    started = time.perf_counter()
    response = bench.call("POST", path, expect=201, body=body)
    seconds = time.perf_counter() - started
    answer = response.json()
    if answer.get("revision") != expected_revision + 1 or answer.get("changed") is not True:
        raise BenchError(bench.evidence("POST", path, body, response, (201,)) +
                         f"\n(expected revision {expected_revision + 1}, changed true)")
    return seconds


def _entry(bench: Bench, item_id: str, path: str) -> dict[str, Any]:
    return {"item_id": item_id, "path": path, "blob_id": bench.blob_id}


def _fill(bench: Bench, collection_id: str, entries: int) -> tuple[int, float]:
    """Deltas of at most ``inline_items_per_publish`` new entries; the head revision reached
    and the seconds it took."""
    batch = int(bench.limits["inline_items_per_publish"])
    revision, started = 0, time.perf_counter()
    for start in range(0, entries, batch):
        _publish(bench, collection_id, revision,
                 [_entry(bench, f"e{n:05d}", f"notes/e{n:05d}.md")
                  for n in range(start, min(start + batch, entries))])
        revision += 1
    return revision, time.perf_counter() - started


def _figures(entries: int, seconds: list[float]) -> dict[str, Any]:
    """Median and p90 (nearest rank) in milliseconds."""
    ordered = sorted(seconds)
    p90 = ordered[max(math.ceil(0.9 * len(ordered)) - 1, 0)]
    return {"entries": entries, "repeats": len(seconds),
            "median_ms": round(1000 * statistics.median(ordered), 3),
            "p90_ms": round(1000 * p90, 3), "min_ms": round(1000 * ordered[0], 3),
            "max_ms": round(1000 * ordered[-1], 3)}


def _sized(bench: Bench, entries: int, repeats: int) -> dict[str, Any]:
    """Fill a collection to ``entries``, then time one-entry deltas that each move one
    existing entry to a new path (the collection keeps ``entries`` entries)."""
    collection_id = f"size-{entries}"
    head, fill_seconds = _fill(bench, collection_id, entries)
    seconds = []
    for k in range(repeats):
        item_id = f"e{k % entries:05d}"
        seconds.append(_publish(bench, collection_id, head,
                                [_entry(bench, item_id, f"moved/{k}/{item_id}.md")]))
        head += 1
    return {**_figures(entries, seconds), "fill_publishes": math.ceil(entries / max(
        int(bench.limits["inline_items_per_publish"]), 1)), "fill_seconds": round(fill_seconds, 3)}


def _empty(bench: Bench, repeats: int) -> dict[str, Any]:
    """One-entry delta on an empty collection: a fresh one (revision 0) for every repeat."""
    seconds = [_publish(bench, f"empty-{k}", 0, [_entry(bench, "e00000", "notes/e00000.md")])
               for k in range(repeats)]
    return _figures(0, seconds)


def memory_kib(pid: int | str) -> dict[str, int]:
    """``VmHWM`` (peak resident) and ``VmRSS`` of a process, in KiB (Linux /proc)."""
    found: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return found
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            found[name] = int(value.split()[0])
    return found


def filesystem(path: Path) -> str | None:
    """The file-system type holding ``path`` (from /proc/mounts; None elsewhere)."""
    best, kind = "", None
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    resolved = str(path.resolve())
    for line in mounts:
        parts = line.split()
        if len(parts) >= 3 and (resolved == parts[1] or resolved.startswith(
                parts[1].rstrip("/") + "/")) and len(parts[1]) > len(best):
            best, kind = parts[1], parts[2]
    return kind


def _mib(kib: int | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def _upload_section(bench: Bench, size: int) -> dict[str, Any]:
    pid = bench.server.process.pid
    server_before, client_before = memory_kib(pid), memory_kib("self")
    _blob_id, seconds = _upload(bench, size)
    server_after, client_after = memory_kib(pid), memory_kib("self")

    def growth(before: dict[str, int], after: dict[str, int]) -> float | None:
        if "VmHWM" not in before or "VmHWM" not in after:
            return None
        return round((after["VmHWM"] - before["VmHWM"]) / 1024, 1)

    return {
        "bytes": size, "mib": round(size / MIB, 3), "chunk_bytes": CHUNK,
        "seconds": round(seconds["total"], 3),
        "mib_per_second": round(size / MIB / seconds["total"], 1),
        "put_seconds": round(seconds["put"], 3),
        "put_mib_per_second": round(size / MIB / seconds["put"], 1),
        "prepare_seconds": round(seconds["prepare"], 4),
        "commit_seconds": round(seconds["commit"], 4),
        "server_pid": pid,
        "server_peak_rss_before_mib": _mib(server_before.get("VmHWM")),
        "server_peak_rss_after_mib": _mib(server_after.get("VmHWM")),
        "server_peak_rss_growth_mib": growth(server_before, server_after),
        "server_rss_before_mib": _mib(server_before.get("VmRSS")),
        "server_rss_after_mib": _mib(server_after.get("VmRSS")),
        "client_peak_rss_growth_mib": growth(client_before, client_after),
    }


def _growth(sized: list[dict[str, Any]], empty: dict[str, Any]) -> dict[str, Any]:
    """How the median grows: largest over smallest size, over the empty collection, and a
    least-squares slope in ms per 1,000 entries."""
    if not sized:
        return {}
    small, large = sized[0], sized[-1]
    result: dict[str, Any] = {
        "median_ms_by_entries": {str(row["entries"]): row["median_ms"] for row in sized},
        "from_entries": small["entries"], "to_entries": large["entries"],
        "median_ratio": round(large["median_ms"] / small["median_ms"], 2),
        "median_ratio_vs_empty": round(large["median_ms"] / empty["median_ms"], 2),
        "ms_per_1000_entries": None,
    }
    if len(sized) >= 2:
        xs = [float(row["entries"]) for row in sized]
        ys = [float(row["median_ms"]) for row in sized]
        mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
        spread = sum((x - mean_x) ** 2 for x in xs)
        if spread > 0:
            slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
            result["ms_per_1000_entries"] = round(1000 * slope, 3)
    return result


def bench_publish(sizes: Sequence[int] = DEFAULT_SIZES, repeats: int = 20,
                  upload_mib: int = 64, synchronous: str = "normal",
                  out: Path | None = None, heavy_entries: int = HEAVY_ENTRIES) -> dict[str, Any]:
    """Run the whole benchmark once; print the JSON (and write it to ``out``), a summary on
    stderr. Raises :class:`BenchError` if the server answers anything unexpected."""
    sizes = sorted(set(sizes))
    if not sizes or sizes[0] < 1 or repeats < 1 or upload_mib <= 0:
        raise ValueError("sizes must be positive, repeats at least 1, upload-mib above 0")
    upload_bytes = upload_mib * MIB
    collections = [f"empty-{k}" for k in range(repeats)] + [f"size-{n}" for n in sizes]
    collections += ["heavy"] if heavy_entries else []
    with _server(synchronous) as (server, data_dir, admin_token), \
            httpx.Client(base_url=server.url, timeout=300) as client:
        bench = Bench(server, client, admin_token)
        described = client.get("/v1/describe")
        described.raise_for_status()
        bench.limits = dict(described.json()["limits"])
        high = int(bench.limits["memory_entries_per_revision"])
        if sizes[-1] > high:
            raise ValueError(f"size {sizes[-1]} is above the server's "
                             f"memory_entries_per_revision ({high})")
        if upload_bytes > int(bench.limits["upload_bytes"]):
            raise ValueError(f"--upload-mib {upload_mib} is above the server's upload_bytes "
                             f"({bench.limits['upload_bytes']})")
        describe = baseline(client)
        _provision(bench, collections)
        bench.blob_id, _ = _upload(bench, 64)
        upload = _upload_section(bench, upload_bytes)
        empty = _empty(bench, repeats)
        sized = [_sized(bench, n, repeats) for n in sizes]
        heavy = (heavy_section(bench, data_dir / "data", "heavy", heavy_entries, repeats)
                 if heavy_entries else None)
        result: dict[str, Any] = {
            "benchmark": "publish",
            "machine": {**machine(), "platform": platform.platform()},
            "server": {"target": "sqlite", "synchronous": synchronous,
                       "data_dir_filesystem": filesystem(data_dir),
                       "limits": {k: bench.limits[k] for k in (
                           "inline_items_per_publish", "memory_entries_per_revision",
                           "upload_bytes") if k in bench.limits}},
            "method": {
                "publish": "one-entry delta (POST /v1/collections/{id}/revisions) with "
                           "expected_revision = head, moving one existing entry to a new path "
                           "(the collection keeps its size); wall time of the HTTP round trip",
                "empty_publish": "one-entry delta adding an entry to a fresh collection at "
                                 "revision 0, once per repeat",
                "p90": "nearest rank",
                "upload": "blob.prepare + PUT content streamed in 1 MiB chunks with "
                          "Content-Length + blob.commit; SHA-256 computed beforehand, untimed",
            },
            "baseline": {"describe": describe, "empty_publish": empty},
            "publish": sized,
            "growth": _growth(sized, empty),
            "upload": upload,
            "heavy_collection": heavy,
        }
    text = json.dumps(result, indent=2)
    if out is not None:
        out.write_text(text + "\n")
    print(text)
    _summary(result)
    return result


def _summary(result: dict[str, Any]) -> None:
    lines = [f"waypost bench publish ({result['machine']['cpus']} cpus, "
             f"python {result['machine']['python']}, sqlite synchronous="
             f"{result['server']['synchronous']})",
             f"  baseline: {result['baseline']['describe']['round_trips_per_second']} "
             f"describe/s; empty collection publish median "
             f"{result['baseline']['empty_publish']['median_ms']} ms"]
    lines += [f"  {row['entries']:>6} entries: median {row['median_ms']} ms, p90 "
              f"{row['p90_ms']} ms ({row['repeats']} publishes)" for row in result["publish"]]
    growth = result["growth"]
    if growth and growth["ms_per_1000_entries"] is not None:
        lines.append(f"  growth: {growth['from_entries']} → {growth['to_entries']} entries "
                     f"×{growth['median_ratio']} median; {growth['ms_per_1000_entries']} ms "
                     "per 1,000 entries")
    upload = result["upload"]
    lines.append(f"  upload: {upload['mib']} MiB in {upload['seconds']} s "
                 f"({upload['mib_per_second']} MiB/s); server peak RSS "
                 f"{upload['server_peak_rss_before_mib']} → {upload['server_peak_rss_after_mib']}"
                 f" MiB (+{upload['server_peak_rss_growth_mib']})")
    heavy = result.get("heavy_collection")
    if heavy:
        lines.append(
            f"  heavy: {heavy['entries']} entries, manifest {heavy['manifest_bytes']} bytes; "
            f"delta median {heavy['delta']['median_ms']} ms, growth ≤ "
            f"{heavy['delta']['growth_over_manifest_max']}× the manifest; unchanged max "
            f"{heavy['unchanged']['max_ms']} ms; another client's describe max "
            f"{heavy['other_client_describe']['max_ms']} ms")
    print("\n".join(lines), file=sys.stderr)
