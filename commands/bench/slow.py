"""``waypost bench slow-clients``: how many slow clients it takes to delay a normal request, and
by how much (docs/spec.md, "Connection limits").

For each level, a fresh ``waypost serve --max-connections SLOTS`` (default limits otherwise)
gets that many clients that send a request head at once and then its body one byte every
``--every`` seconds, as the probe of issue "The server keeps its connections" did. Then a normal
client asks ``GET /v1/describe``, retrying every 0.25 s while it is refused with ``503``; the
figure is how long until it is answered, beside the same request with no slow client (the
baseline, measured in the same run), and how the slow clients ended: ``408`` once cut off, or
still open when the normal request was answered (the bench then closes them).
"""

from __future__ import annotations

import itertools
import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.machine import machine
from waypost.conformance.targets import ServerProcess

#: How often the normal client asks again after a 503.
RETRY_SECONDS = 0.25
#: The longest the normal client keeps asking.
GIVE_UP_SECONDS = 120.0


class SlowClient:
    """A slow client of a server on loopback, on threads of its own: ``head`` at once, then
    ``body`` one byte every ``every`` s until it is all sent or ``stop`` is set; meanwhile it
    reads what the server sends until the server closes the connection (``answer``, and
    ``seconds`` from the head to the close)."""

    def __init__(self, port: int, head: bytes, body: Iterable[int], every: float,
                 stop: threading.Event | None = None) -> None:
        self.answer = b""
        self.seconds = 0.0
        self.connection = socket.create_connection(("127.0.0.1", port))
        self.connection.settimeout(GIVE_UP_SECONDS)
        self.connection.sendall(head)
        self._started = time.perf_counter()
        self._stop = stop if stop is not None else threading.Event()
        self._sender = threading.Thread(target=self._trickle, args=(body, every), daemon=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._sender.start()
        self._reader.start()

    @property
    def status(self) -> int:
        """The status the server answered with; 0 while it has not."""
        return int(self.answer[9:12]) if self.answer.startswith(b"HTTP/1.1 ") else 0

    def _trickle(self, body: Iterable[int], every: float) -> None:
        for byte in body:
            if self._stop.wait(every):
                return
            try:
                self.connection.send(bytes([byte]))
            except OSError:
                return

    def _read(self) -> None:
        try:
            while chunk := self.connection.recv(65536):
                self.answer += chunk
        except OSError:
            pass
        self.seconds = time.perf_counter() - self._started

    def wait(self) -> bytes:
        """What the server sent, once it has closed the connection; the client then stops."""
        self._reader.join()
        self._stop.set()
        self._sender.join()
        self.connection.close()
        return self.answer

    def end(self) -> None:
        """Close the connection now (the server may not have answered)."""
        self.connection.close()
        self._reader.join(timeout=GIVE_UP_SECONDS)


def _slow_client(port: int, admin: str, every: float, stop: threading.Event) -> SlowClient:
    """The bench's slow client: a space to create, its body spaces until ``stop``."""
    head = (f"POST /admin/v1/spaces HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer {admin}\r\n"
            f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n").encode()
    return SlowClient(port, head, itertools.repeat(ord(" ")), every, stop)


def _normal_request(url: str) -> tuple[float, int]:
    """Seconds until ``GET /v1/describe`` is answered ``200``, and how many ``503`` before."""
    started, refused = time.perf_counter(), 0
    while time.perf_counter() - started < GIVE_UP_SECONDS:
        try:
            answer = httpx.get(f"{url}/v1/describe", timeout=GIVE_UP_SECONDS)
        except httpx.TransportError:
            answer = None
        if answer is not None and answer.status_code == 200:
            return time.perf_counter() - started, refused
        refused += 1
        threading.Event().wait(RETRY_SECONDS)
    return time.perf_counter() - started, refused


def _level(slots: int, count: int, every: float) -> dict[str, Any]:
    admin = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="waypost-bench-slow-") as data_dir:
        server = ServerProcess(Path(data_dir) / "data", admin, "--no-access-log",
                               "--max-connections", str(slots))
        stop = threading.Event()
        slow: list[SlowClient] = []
        try:
            slow = [_slow_client(server.port, admin, every, stop) for _ in range(count)]
            seconds, refused = _normal_request(server.url)
        finally:
            stop.set()
            for client in slow:
                client.end()
            server.stop()
    statuses = sorted({client.status for client in slow if client.status})
    unanswered = sum(1 for client in slow if not client.status)
    held = [client.seconds for client in slow]
    return {"slow_clients": count, "normal_request_seconds": round(seconds, 3),
            "refused_503": refused, "slow_client_answers": statuses,
            "slow_clients_still_open_at_the_end": unanswered,
            "slow_client_held_seconds_max": round(max(held), 2) if held else 0.0}


def bench_slow_clients(slots: int, levels: Sequence[int], every: float) -> dict[str, Any]:
    """The JSON of ``waypost bench slow-clients``."""
    baseline = _level(slots, 0, every)
    rows = [_level(slots, count, every) for count in levels if count]
    delayed = [row for row in rows
               if row["normal_request_seconds"] > baseline["normal_request_seconds"] + 1.0]
    return {"benchmark": "slow-clients", "machine": machine(),
            "server": {"max_connections": slots, "limits": "the defaults of waypost serve"},
            "slow_client": {"sends": "a head, then a byte every", "every_seconds": every},
            "baseline": baseline, "levels": rows,
            "first_delaying_level": delayed[0]["slow_clients"] if delayed else None,
            "worst_delay_seconds": round(max(
                (row["normal_request_seconds"] for row in rows), default=0.0)
                - baseline["normal_request_seconds"], 3)}
