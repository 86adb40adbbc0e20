"""Connection limits over real HTTP (protocol §12): slow clients are cut off at the head or body
deadline while a normal client is served; past the connection cap a new connection is answered
``503`` in the error envelope. A uvicorn child process; raw sockets play the slow clients."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack, closing
from pathlib import Path

import httpx
import pytest

from waypost.conformance.targets import ServerProcess

ADMIN = "limits-admin"


def _socket(server: ServerProcess) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", server.port))
    connection.settimeout(60)  # a safety net only: the server's deadline ends the wait
    return connection


def _until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "data", ADMIN, "--no-access-log", "--header-timeout", "1",
                            "--body-timeout", "1")
    try:
        yield process
    finally:
        process.stop()


def test_two_hundred_slow_heads_do_not_starve_a_normal_client(server: ServerProcess) -> None:
    with ExitStack() as stack:
        slow = [stack.enter_context(closing(_socket(server))) for _ in range(200)]
        for connection in slow:
            connection.sendall(b"GET /v1/describe HTTP/1.1\r\nHost: slow\r\n")  # never ends
        answer = httpx.get(f"{server.url}/v1/describe", timeout=30)
        assert answer.status_code == 200
        assert all(_until_closed(connection) == b"" for connection in slow)


def test_a_connection_that_sends_nothing_is_closed(server: ServerProcess) -> None:
    with closing(_socket(server)) as idle:
        assert _until_closed(idle) == b""


def test_a_stalled_body_is_cut_off(server: ServerProcess) -> None:
    with closing(_socket(server)) as stalled:
        stalled.sendall(b"POST /admin/v1/spaces HTTP/1.1\r\nHost: slow\r\n"
                        b"Authorization: Bearer " + ADMIN.encode() + b"\r\n"
                        b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\":")
        received = _until_closed(stalled)
    assert not received.startswith(b"HTTP/1.1 2")
    assert not received.startswith(b"HTTP/1.1 4")  # no answer was made of half a body
    assert httpx.get(f"{server.url}/v1/describe", timeout=30).status_code == 200


def test_past_the_connection_cap_a_new_connection_is_refused_in_the_envelope(
        tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", ADMIN, "--no-access-log", "--max-connections", "3")
    try:
        with ExitStack() as stack:
            held = [stack.enter_context(closing(_socket(server))) for _ in range(3)]
            for connection in held:  # each is open and served: the server counts it
                connection.sendall(b"GET /v1/describe HTTP/1.1\r\nHost: held\r\n\r\n")
                assert connection.recv(65536).startswith(b"HTTP/1.1 200")
            refused = httpx.get(f"{server.url}/v1/describe", timeout=30)
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "UNAVAILABLE"
    finally:
        server.stop()
