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

import secrets
import socket
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from waypost.bench.kit import machine
from waypost.conformance.targets import ServerProcess

#: How often the normal client asks again after a 503.
RETRY_SECONDS = 0.25
#: The longest the normal client keeps asking.
GIVE_UP_SECONDS = 120.0


class _Slow:
    """One slow client on its own thread: a head at once, then a byte every ``every`` s."""

    def __init__(self, port: int, admin: str, every: float, stop: threading.Event) -> None:
        self.status = 0
        self.seconds = 0.0
        self._socket = socket.create_connection(("127.0.0.1", port))
        self._socket.settimeout(GIVE_UP_SECONDS)
        self._socket.sendall(
            f"POST /admin/v1/spaces HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer {admin}\r\n"
            f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n".encode())
        self._started = time.perf_counter()
        self._sender = threading.Thread(target=self._trickle, args=(every, stop), daemon=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._sender.start()
        self._reader.start()

    def _trickle(self, every: float, stop: threading.Event) -> None:
        while not stop.wait(every):
            try:
                self._socket.send(b" ")
            except OSError:
                return

    def _read(self) -> None:
        answer = b""
        try:
            while chunk := self._socket.recv(4096):
                answer += chunk
        except OSError:
            pass
        self.seconds = time.perf_counter() - self._started
        if answer.startswith(b"HTTP/1.1 "):
            self.status = int(answer[9:12])

    def end(self) -> None:
        self._socket.close()
        self._reader.join(timeout=GIVE_UP_SECONDS)


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
        slow: list[_Slow] = []
        try:
            slow = [_Slow(server.port, admin, every, stop) for _ in range(count)]
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
