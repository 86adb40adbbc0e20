"""Hostile framing over a raw connection (protocol.md WP-LOAD-7, WP-LOAD-8): what an HTTP
client library will not send. An answer that comes before the body was read closes its
connection; ``Transfer-Encoding`` with ``Content-Length`` is refused with ``400`` and closed,
and the request pipelined behind it is never answered.

The connection is the target's own (TLS for ``https``), bounded in time
(:data:`WIRE_SECONDS` in all) and in bytes read (:data:`WIRE_BYTES`)."""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from waypost.properties.hostile.probes import Finding, HostileCheck, Probe, invalid
from waypost.properties.wire.untrusted import visible

#: The longest one exchange may take, its closing included.
WIRE_SECONDS = 15.0
#: The most bytes read of one exchange.
WIRE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Answer:
    """One HTTP answer read off the wire: status, headers (names in lower case), body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Exchange:
    """What came back: the answers read, and whether the server closed the connection."""

    answers: list[Answer]
    closed: bool


def _connect(probe: Probe) -> socket.socket:
    url = urlsplit(str(probe.client.base_url))
    secure = url.scheme == "https"
    host = url.hostname or "127.0.0.1"
    raw = socket.create_connection((host, url.port or (443 if secure else 80)),
                                   timeout=WIRE_SECONDS)
    if secure:
        return ssl.create_default_context().wrap_socket(raw, server_hostname=host)
    return raw


def reachable(probe: Probe) -> bool:
    """Whether the target's URL takes a raw connection (a kit run through an in-process
    transport, as the test suite makes, has no socket to reach)."""
    try:
        with _connect(probe):
            return True
    except (OSError, ValueError):
        return False


def _host(probe: Probe) -> str:
    return urlsplit(str(probe.client.base_url)).netloc


def _read(connection: socket.socket) -> tuple[bytes, bool]:
    """What the server sends until it closes (True) or the time or byte bound ends (False)."""
    received, deadline = b"", time.monotonic() + WIRE_SECONDS
    while len(received) < WIRE_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return received, False
        connection.settimeout(left)
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            return received, False
        except (ConnectionResetError, ssl.SSLError):
            return received, True
        if not chunk:
            return received, True
        received += chunk
    return received, False


def answers(raw: bytes) -> list[Answer]:
    """The answers a server sent on one connection, read off ``raw``: each whose head came
    whole, at most ten (each with ``Content-Length``; an answer without it is the last, its
    body the rest). Bytes that do not start an HTTP answer are a :class:`Finding`."""
    found: list[Answer] = []
    while b"\r\n\r\n" in raw and len(found) < 10:
        head, _, rest = raw.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            raise Finding(f"not an HTTP answer: {visible(lines[0][:80])!r}")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        size = headers.get("content-length", "")
        if not size.isdigit():
            found.append(Answer(int(parts[1]), headers, rest))
            break
        found.append(Answer(int(parts[1]), headers, rest[:int(size)]))
        raw = rest[int(size):]
    return found


def exchange(probe: Probe, request: bytes) -> Exchange:
    """Send ``request`` as raw bytes on a new connection and read what comes back (kept, its
    start, in the probe's trail)."""
    probe.requests += 1
    entry: dict[str, object] = {"raw request": request[:600].decode("latin-1"),
                                "raw answer": None, "closed": None}
    probe.trail.append(entry)
    try:
        with _connect(probe) as connection:
            connection.sendall(request)
            raw, closed = _read(connection)
    except OSError as error:
        entry["raw answer"] = f"no answer: {type(error).__name__}"
        raise Finding(f"the raw connection failed: {type(error).__name__}: "
                      f"{visible(str(error))[:200]}") from None
    entry["raw answer"], entry["closed"] = raw[:1200].decode("latin-1"), closed
    return Exchange(answers(raw), closed)


def _closes(answer: Answer, what: str) -> None:
    if "close" not in answer.headers.get("connection", "").lower():
        raise Finding(f"{what}: the answer ({answer.status}) does not carry Connection: close")


def early_answers(probe: Probe) -> int:
    """A refused credential on a 1 MB body of which 1 KiB is sent: the answer comes, says
    ``Connection: close`` and the server closes without waiting for the rest (WP-LOAD-7)."""
    what = "a 401 before the body (WP-LOAD-7)"
    head = (f"POST /v1/messages HTTP/1.1\r\nHost: {_host(probe)}\r\nAuthorization: Bearer "
            f"not-a-token\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n"
            f"\r\n").encode()
    seen = exchange(probe, head + b" " * 1024)
    if not seen.answers:
        raise Finding(f"{what}: no answer within {WIRE_SECONDS:g} s while the body was "
                      "still owed")
    answer = seen.answers[0]
    if answer.status != 401:
        raise Finding(f"{what}: answered {answer.status}, expected 401")
    _closes(answer, what)
    if not seen.closed:
        raise Finding(f"{what}: the connection stayed open after the answer")
    return 1


def ambiguous_framing(probe: Probe) -> int:
    """``Transfer-Encoding`` with ``Content-Length``, a request pipelined behind it: one
    ``400 INVALID_REQUEST`` naming ``headers`` that says ``Connection: close``, then the
    connection closes (WP-LOAD-8)."""
    what = "Transfer-Encoding with Content-Length (WP-LOAD-8)"
    host = _host(probe)
    seen = exchange(probe, (
        f"POST /v1/messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
        f"{probe.tokens['alice']}\r\nContent-Type: application/json\r\nTransfer-Encoding: "
        f"chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
        f"GET /v1/describe HTTP/1.1\r\nHost: {host}\r\n\r\n").encode())
    if not seen.answers:
        raise Finding(f"{what}: no answer within {WIRE_SECONDS:g} s")
    answer = seen.answers[0]
    if answer.status != 400:
        raise Finding(f"{what}: answered {answer.status}, expected 400")
    invalid(httpx.Response(400, content=answer.body,
                           headers={"content-type": answer.headers.get("content-type", "")}),
            what, "headers")
    _closes(answer, what)
    if len(seen.answers) > 1:
        raise Finding(f"{what}: the request pipelined behind it was answered too "
                      f"({seen.answers[1].status})")
    if not seen.closed:
        raise Finding(f"{what}: the connection stayed open after the answer")
    return 1


CHECKS = (
    HostileCheck("early_answers", "a 401 sent before a 1 MB body arrives carries Connection: "
                 "close and the connection closes (a raw connection)",
                 ("WP-LOAD-7", "WP-ERR-1"), early_answers, needs="a raw connection"),
    HostileCheck("ambiguous_framing", "Transfer-Encoding with Content-Length, a request "
                 "pipelined behind it: one 400 with Connection: close, then the connection "
                 "closes (a raw connection)", ("WP-LOAD-8", "WP-ERR-1"), ambiguous_framing,
                 needs="a raw connection"),
)
