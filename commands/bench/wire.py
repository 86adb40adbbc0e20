"""What the load benchmarks share: a lean keep-alive HTTP/1.1 client (so the client costs less
than the server it measures), the server as a child process, percentiles, memory, the disk's
raw fsync'd transaction rate."""

from __future__ import annotations

import asyncio
import json
import math
import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.publish import filesystem, memory_kib
from waypost.bootstrap import provision
from waypost.conformance.targets import ServerProcess


class Connection:
    """One keep-alive connection; answers must carry a Content-Length (the reference's do)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def request(self, method: str, path: str, token: str | None = None,
                      body: Any = None) -> tuple[int, bytes]:
        data = b"" if body is None else json.dumps(body).encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: bench\r\nContent-Length: {len(data)}\r\n"
        if token:
            head += f"Authorization: Bearer {token}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        self.writer.write(head.encode() + b"\r\n" + data)
        lines = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        length = next(int(line.split(":", 1)[1]) for line in lines
                      if line.lower().startswith("content-length:"))
        return int(lines[0].split()[1]), await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def percentile(values: list[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(math.ceil(share * len(ordered)) - 1, 0)]


def millis(values: list[float]) -> dict[str, float]:
    return {"count": len(values), "p50_ms": round(1000 * statistics.median(values), 3),
            "p99_ms": round(1000 * percentile(values, 0.99), 3),
            "max_ms": round(1000 * max(values), 3)}


@dataclass
class Served:
    """The server under test with its data directory and a provisioned space's tokens."""

    server: ServerProcess
    data_dir: Path
    admin_token: str
    tokens: dict[str, str]

    def rss_mib(self) -> dict[str, float | None]:
        memory = memory_kib(self.server.process.pid)
        return {name: None if name not in memory else round(memory[name] / 1024, 1)
                for name in ("VmRSS", "VmHWM")}


@contextmanager
def served(synchronous: str = "full", env: dict[str, str] | None = None) -> Iterator[Served]:
    """The embedded reference, durable by default, in a temporary directory; space ``bench``;
    ``env`` adds to its environment."""
    admin_token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="waypost-bench-") as work:
        data_dir = Path(work) / "data"
        server = ServerProcess(data_dir, admin_token, "--no-access-log", "--synchronous",
                               synchronous, env=env)
        try:
            with httpx.Client(base_url=server.url, timeout=60,
                              headers={"Authorization": f"Bearer {admin_token}"}) as client:
                tokens = provision(client, "bench")
            yield Served(server, data_dir, admin_token,
                         {k: v for k, v in tokens.items() if v is not None})
        finally:
            server.stop()


def thread_cpu_seconds(pid: int) -> dict[str, float] | None:
    """CPU seconds (user + system) a process has used so far: its main thread (the server's
    event loop) and its other threads together (the SQLite writer and read pool, a thread
    pool's workers: those that have ended too, as the process's total counts them); None where
    Linux' /proc is missing."""
    tick = os.sysconf("SC_CLK_TCK")

    def seconds(path: str) -> float:
        stat = Path(path).read_text()
        user, system = stat[stat.rindex(")") + 2:].split()[11:13]
        return (int(user) + int(system)) / tick
    try:
        main, total = seconds(f"/proc/{pid}/task/{pid}/stat"), seconds(f"/proc/{pid}/stat")
    except (OSError, ValueError):
        return None
    return {"event_loop": main, "other_threads": total - main}


def cpu_per_request(before: dict[str, float] | None, after: dict[str, float] | None,
                    requests: int) -> dict[str, float] | None:
    """Milliseconds of server CPU per request between two :func:`thread_cpu_seconds`."""
    if before is None or after is None or not requests:
        return None
    spent = {name: 1000 * (after[name] - before[name]) / requests for name in after}
    return {**{name: round(ms, 3) for name, ms in spent.items()},
            "total": round(sum(spent.values()), 3)}


def raw_fsync_rate(directory: Path, seconds: float = 2.0) -> dict[str, Any]:
    """Single-row transactions per second on ``directory``'s disk: SQLite, WAL,
    ``synchronous=FULL`` (one fsync each), the same settings as the server's."""
    with tempfile.TemporaryDirectory(dir=directory) as work:
        connection = sqlite3.connect(Path(work) / "raw.sqlite3", isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)")
        done, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO t (v) VALUES ('x')")
            connection.execute("COMMIT")
            done += 1
        elapsed = time.perf_counter() - started
        connection.close()
    return {"transactions": done, "seconds": round(elapsed, 3),
            "per_second": round(done / elapsed, 1), "filesystem": filesystem(directory)}
