"""``waypost bench send``: what one message.send costs the reference, beside the floor of its own
stack (:mod:`waypost.bench.floor`) measured in the same run.

Each phase drives one server with N keep-alive connections (:mod:`waypost.bench.drive`) and
reads, from Linux' /proc before and after, the server's CPU (its event loop, its other threads)
and what it handed to write system calls (``wchar``, ``syscw``) and dirtied in the page cache
(``write_bytes``, in 4 KiB pages). The floor and the reference run in turn, each phase once
per repeat, so that whatever else the machine does weighs on both alike; each figure is the
median over the repeats. Where ``strace`` is installed, one more phase per server runs under it
(its rate is not counted): the write calls and bytes per send by file (WAL, database, temp
files, sockets), the fsyncs, and the temp files opened (SQLite's go to a directory of their
own, ``SQLITE_TMPDIR``).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.bench.drive import client_name, drive
from waypost.bench.machine import machine
from waypost.bench.schema_floor import schema_floor
from waypost.bench.wal_pages import wal_pages
from waypost.bench.wire import raw_fsync_rate, served, thread_cpu_seconds
from waypost.conformance.targets import ChildProcess, free_port
from waypost.reference.server import DATABASE

#: What the issue asks of a send, beside the floor (docs/performance.md).
TARGETS = {"cpu_over_floor_at_16": 1.2, "cpu_over_floor_at_1": 1.5,
           "write_call_kib_per_send": 40.0,  # at the most connections measured
           "sends_16_over_sends_1": 1.5}
PAGE = 4096


class FloorProcess(ChildProcess):
    """The floor app (:mod:`waypost.bench.floor`) as a child process."""

    what = "the floor app"

    def __init__(self, database: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        super().__init__(["--database", str(database), "--port", str(self.port)], env,
                         module="waypost.bench.floor")

    def is_ready(self, line: str) -> bool:
        return "Uvicorn running on" in line


@dataclass(frozen=True)
class Subject:
    """A server under load: its port, pid, the token its sends carry, its temp directory."""

    name: str
    port: int
    pid: int
    token: str
    temp_dir: Path
    client: str
    database: Path | None = None


def process_io(pid: int) -> dict[str, int] | None:
    """``/proc/PID/io``: bytes handed to write calls, write calls, bytes dirtied; None elsewhere."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    fields = dict(line.split(": ") for line in text.splitlines() if ": " in line)
    return {name: int(fields[name]) for name in ("wchar", "syscw", "write_bytes")}


def _phase(subject: Subject, connections: int, seconds: float) -> dict[str, Any]:
    """One timed phase against one server, with its per-send costs."""
    cpu_before, io_before = thread_cpu_seconds(subject.pid), process_io(subject.pid)
    load = drive(subject.port, connections, seconds, subject.token,
                 f"{subject.name}-{secrets.token_hex(4)}", subject.client)
    cpu_after, io_after = thread_cpu_seconds(subject.pid), process_io(subject.pid)
    sends = load["ok"]
    row: dict[str, Any] = dict(load)
    if sends and cpu_before is not None and cpu_after is not None:
        spent = {name: 1000 * (cpu_after[name] - cpu_before[name]) / sends for name in cpu_after}
        row["cpu_ms_per_send"] = {**{k: round(v, 4) for k, v in spent.items()},
                                  "total": round(sum(spent.values()), 4)}
    if sends and io_before is not None and io_after is not None:
        delta = {name: io_after[name] - io_before[name] for name in io_after}
        row["per_send"] = {"write_call_kib": round(delta["wchar"] / 1024 / sends, 2),
                           "write_calls": round(delta["syscw"] / sends, 2),
                           "pages_dirtied": round(delta["write_bytes"] / PAGE / sends, 2)}
    return row


_CALL = re.compile(r"^(\w+)\((\d+)<([^>]*)>(.*)= (-?\d+)")
_TRACED = "write,pwrite64,writev,pwritev,sendto,sendmsg,openat,fsync,fdatasync"


def _kind(path: str, temp_dir: Path) -> str:
    if path.startswith(str(temp_dir)) or path.endswith("(deleted)"):
        return "temp_files"
    for suffix, kind in (("-wal", "wal"), ("-shm", "shm"), (".sqlite3", "database"),
                         ("-journal", "rollback_journal")):
        if path.endswith(suffix):
            return kind
    return "sockets" if path.startswith("socket:") else "other"


@dataclass
class _Trace:
    """What strace's per-thread logs show: answers 201, temp files opened, calls by file."""

    sends: int = 0
    temp_opened: int = 0
    calls: dict[str, list[int]] = field(default_factory=dict)

    def read(self, line: str, temp_dir: Path) -> None:
        if line.startswith("openat("):
            self.temp_opened += "O_TMPFILE" in line or f'"{temp_dir}' in line
            return
        found = _CALL.match(line)
        if found is None:
            return
        call, _, path, rest, result = found.groups()
        kind = "fsyncs" if call in ("fsync", "fdatasync") else _kind(path, temp_dir)
        self.sends += kind == "sockets" and '"HTTP/1.1 201 ' in rest
        counted = self.calls.setdefault(kind, [0, 0])
        counted[0] += 1
        counted[1] += max(int(result), 0)


def traced_phase(subject: Subject, connections: int, seconds: float) -> dict[str, Any] | None:
    """One phase with ``strace`` attached to the server (a log per thread, so no call is split
    across lines): per send, by file, the write calls and bytes, the fsyncs, and the temp files
    opened. None where strace is missing."""
    if shutil.which("strace") is None:
        return None
    trace = _Trace()
    with tempfile.TemporaryDirectory(prefix="waypost-strace-") as work:
        tracer = subprocess.Popen(["strace", "-qq", "-ff", "-y", "-e", f"trace={_TRACED}",
                                   "-o", str(Path(work) / "trace"), "-p", str(subject.pid)],
                                  stderr=subprocess.PIPE)
        try:
            drive(subject.port, connections, seconds, subject.token,
                  f"traced-{secrets.token_hex(4)}", subject.client)
        finally:
            tracer.send_signal(signal.SIGINT)
            try:
                _, complaint = tracer.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                tracer.kill()  # never leave the server traced
                _, complaint = tracer.communicate()
        # the sends counted are those whose answer the trace saw (strace attaches meanwhile)
        for log in Path(work).iterdir():
            with log.open() as lines:
                for line in lines:
                    trace.read(line, subject.temp_dir)
    if not trace.sends:  # e.g. ptrace not permitted here
        return {"connections": connections, "sends": 0, "not_measured": "strace saw no "
                f"answer: {complaint.decode(errors='replace').strip()[-300:]}"}
    found: dict[str, Any] = {"connections": connections, "sends": trace.sends,
                             "temp_files_opened": trace.temp_opened}
    found["per_send"] = {kind: {"calls": round(n / trace.sends, 2),
                                "kib": round(b / 1024 / trace.sends, 2)}
                         for kind, (n, b) in sorted(trace.calls.items())}
    return found


def _median(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of each figure over the repeats (nested figures too)."""
    first = rows[0]
    merged: dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, dict):
            merged[key] = _median([row[key] for row in rows])
        elif isinstance(value, bool):
            merged[key] = any(row[key] for row in rows)
        elif isinstance(value, (int, float)) and key != "connections":
            merged[key] = round(statistics.median(row[key] for row in rows), 4)
        else:
            merged[key] = value
    return merged


@contextmanager
def _subjects(work: Path, floor: bool, client: str) -> Iterator[list[Subject]]:
    """The reference (and the floor) in ``work``, each with a temp directory of its own."""
    with ExitStack() as stack:
        temp = work / "waypost-tmp"
        temp.mkdir()
        run = stack.enter_context(served("full", env={"SQLITE_TMPDIR": str(temp)}))
        subjects = [Subject("waypost", run.server.port, run.server.process.pid,
                            run.tokens["alice"], temp, client, run.data_dir / DATABASE)]
        if floor:
            temp = work / "floor-tmp"
            temp.mkdir()
            process = FloorProcess(work / "floor.sqlite3", {"SQLITE_TMPDIR": str(temp)})
            stack.callback(process.stop)
            subjects.append(Subject("floor", process.port, process.process.pid, "", temp, client))
        yield subjects


def _ratios(level: dict[str, Any]) -> dict[str, Any]:
    """The reference's figures over the floor's: of the medians, and (CPU per send) of each
    repeat's pair of phases, which ran one after the other: their spread is the run's noise."""
    ours, floor = level["waypost"], level.get("floor")
    if floor is None:
        return {}

    def ratio(get: Callable[[dict[str, Any]], float | None]) -> float | None:
        try:
            mine, theirs = get(ours), get(floor)
        except KeyError:
            return None
        return None if mine is None or not theirs else round(mine / theirs, 2)
    return {"cpu_per_send": ratio(lambda r: r["cpu_ms_per_send"]["total"]),
            "cpu_per_send_event_loop": ratio(lambda r: r["cpu_ms_per_send"]["event_loop"]),
            "cpu_per_send_other_threads": ratio(lambda r: r["cpu_ms_per_send"]["other_threads"]),
            "write_call_kib_per_send": ratio(lambda r: r["per_send"]["write_call_kib"]),
            "write_calls_per_send": ratio(lambda r: r["per_send"]["write_calls"]),
            "sends_per_second": ratio(lambda r: r["per_second"]),
            "cpu_per_send_each_repeat": [
                round(mine["cpu_ms_per_send"]["total"] / theirs["cpu_ms_per_send"]["total"], 2)
                for mine, theirs in zip(ours["repeats"], floor["repeats"], strict=True)
                if mine.get("cpu_ms_per_send") and theirs.get("cpu_ms_per_send")
                and theirs["cpu_ms_per_send"]["total"]]}


def _schema_floor(subject: Subject, work: Path, level: dict[str, Any]) -> dict[str, Any]:
    """:func:`schema_floor` on a copy of the reference's database, with the lowest ratio to the
    floor at one connection it allows (the floor's CPU per send over HTTP, plus what the
    schema's rows cost its writer above the floor's one row)."""
    assert subject.database is not None
    found = schema_floor(subject.database, subject.token, "bob", work)
    floor_cpu = level["floor"].get("cpu_ms_per_send", {}).get("total")
    found["lowest_cpu_ratio_at_1"] = None if not floor_cpu else round(
        (floor_cpu + found["rows_over_one_row_ms"]) / floor_cpu, 2)
    return found


def _verdicts(levels: list[dict[str, Any]], traced: dict[str, Any] | None,
              schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each target beside its measure (None where this run cannot tell)."""
    by = {level["connections"]: level for level in levels}
    low, high = by[min(by)], by[max(by)]
    found: dict[str, Any] = {}

    def verdict(name: str, measured: float | None, at_most: bool = True, **beside: Any) -> None:
        limit = TARGETS[name]
        met = None if measured is None else (measured <= limit if at_most else measured >= limit)
        found[name] = {"measured": measured, "at_most" if at_most else "at_least": limit,
                       "met": met, **beside}

    def cpu(name: str, level: dict[str, Any], **beside: Any) -> None:
        ratios = level["ratios"]
        verdict(name, ratios.get("cpu_per_send"),
                each_repeat=ratios.get("cpu_per_send_each_repeat"), **beside)
    if max(by) == 16:
        cpu("cpu_over_floor_at_16", high)
    if min(by) == 1:
        # with the schema floor, what no implementation of this schema goes below
        cpu("cpu_over_floor_at_1", low, **({} if schema is None else {
            "schema_allows_at_least": schema["lowest_cpu_ratio_at_1"]}))
    verdict("write_call_kib_per_send", high["waypost"].get("per_send", {}).get("write_call_kib"))
    if (min(by), max(by)) == (1, 16):
        verdict("sends_16_over_sends_1",
                round(high["waypost"]["per_second"] / low["waypost"]["per_second"], 2), False)
    opened = None if traced is None else traced.get("temp_files_opened")
    found["no_temp_files"] = {"measured": opened, "at_most": 0,
                              "met": None if opened is None else opened == 0}
    return found


def bench_send(levels: Sequence[int], seconds: float, *, floor: bool = False, repeats: int = 3,
               client: str = "wrk",
               progress: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Sends at each connection count, each phase ``repeats`` times; beside the floor if asked."""
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="waypost-bench-") as work, \
            _subjects(Path(work), floor, client) as subjects:
        for subject in subjects:  # warm-up: compiled statements, page cache, the thread pool
            drive(subject.port, max(levels), 1.0, subject.token, f"warm-{secrets.token_hex(4)}",
                  client)
        results: list[dict[str, Any]] = []
        for connections in levels:
            runs: dict[str, list[dict[str, Any]]] = {s.name: [] for s in subjects}
            for repeat in range(repeats):
                order = subjects if repeat % 2 == 0 else subjects[::-1]
                for subject in order:
                    row = _phase(subject, connections, seconds)
                    runs[subject.name].append(row)
                    progress(f"{subject.name} x{connections} ({repeat + 1}/{repeats}): "
                             f"{row['per_second']}/s, "
                             f"{row.get('cpu_ms_per_send', {}).get('total')} ms CPU per send")
            level: dict[str, Any] = {"connections": connections}
            level.update({name: {**_median(rows), "repeats": rows}
                          for name, rows in runs.items()})
            level["ratios"] = _ratios(level)
            if connections == 1 and subjects[0].database is not None:
                # one send per transaction: the pages of the last ones, by table and index
                level["waypost"]["wal_pages_per_send"] = wal_pages(subjects[0].database)
            results.append(level)
        progress("one more phase of the reference under strace…")
        traced = traced_phase(subjects[0], max(levels), seconds)
        raw = raw_fsync_rate(Path(work))
        schema = None
        if floor and 1 in levels and subjects[0].database is not None:
            progress("what the schema alone costs a send, without a server…")
            schema = _schema_floor(subjects[0], Path(work), results[levels.index(1)])
    return {"benchmark": "send", "machine": {**machine(), "load_average_before": load_before,
                                             "load_average_after": os.getloadavg()},
            "client": client if client == "python" else client_name(),
            "seconds_per_phase": seconds, "repeats": repeats,
            "server": {"synchronous": "full"}, "floor": floor, "levels": results,
            "traced": traced if traced is not None else "strace is not installed (Debian: "
                                                        "apt-get install strace)",
            "raw_fsync_transactions": raw, "schema_floor": schema,
            "targets": _verdicts(results, traced, schema)}


#: What a cheaper send must not cost elsewhere (docs/performance.md), measured in the same run.
ELSEWHERE = {"describe_p99_over_rest_p50_during_downloads": 5.0,
             "rss_growth_mib_downloads_and_manifests": 64.0,
             "feed_p50_40k_over_2k": 1.5}


def bench_elsewhere(progress: Callable[[str], None]) -> dict[str, Any]:
    """``bench blobs`` (4 slow 64 MiB downloads, manifests at and over the limit) and ``bench
    feed`` at 2,000 and 40,000 items, each beside its target."""
    from waypost.bench.load import bench_blobs, bench_feed

    progress("describe during 4 slow 64 MiB downloads and refused manifests…")
    blobs = bench_blobs(4, 64, 0.02)
    progress("feed pages at 2,000 and 40,000 items…")
    feed = bench_feed([2_000, 40_000], 300)
    growths = [blobs[part]["server_peak_rss_growth_mib"] for part in ("downloads", "manifests")]
    growth = None if None in growths else max(growths)
    measured = {
        "describe_p99_over_rest_p50_during_downloads": blobs["downloads"]["p99_over_rest_p50"],
        "rss_growth_mib_downloads_and_manifests": growth,
        "feed_p50_40k_over_2k": feed["ratio_p50_largest_over_smallest"]}
    return {"blobs": blobs, "feed": feed, "targets": {
        name: {"measured": value, "at_most": ELSEWHERE[name],
               "met": None if value is None else value <= ELSEWHERE[name]}
        for name, value in measured.items()}}
