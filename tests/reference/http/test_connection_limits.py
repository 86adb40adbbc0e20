"""Connection limits over real HTTP (protocol §12, WP-LOAD-4 and WP-LOAD-6 to WP-LOAD-9): slow
clients are cut off with ``408`` while a normal client is served, early answers close their
connection, ambiguous framing is refused or closed, an answer nobody takes is abandoned, and the
log gets one line, never a traceback. A ``waypost serve`` child process; raw sockets play the
clients (the slow ones are ``waypost bench slow-clients``' own), and what they got back is read
as the kit reads a raw connection (``properties/hostile/wire.py``). Nothing waits on a clock:
slow clients pace themselves with an event's timeout, and the tests wait for the server's
answer or poll its log with a deadline."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.api import ADMIN_TOKEN, Api
from waypost.bench.slow import SlowClient
from waypost.conformance.targets import ServerProcess
from waypost.properties.hostile.wire import answers

ADMIN = ADMIN_TOKEN
#: Small limits, so that each rule shows in about a second.
QUICK = ("--header-timeout", "1", "--body-grace", "0.5", "--body-min-rate", "100",
         "--send-timeout", "1")


def _socket(server: ServerProcess, receive_buffer: int = 0) -> socket.socket:
    connection = socket.socket()
    if receive_buffer:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    connection.connect(("127.0.0.1", server.port))
    connection.settimeout(60)  # a safety net only: the server's deadline ends the wait
    return connection


def _until_closed(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    return received


def _error_code(body: bytes) -> str:
    code: str = json.loads(body)["error"]["code"]
    return code


def _port(connection: socket.socket) -> str:
    """How the server's log names this client: ``127.0.0.1:<port>``."""
    return f"127.0.0.1:{connection.getsockname()[1]} "


def _logged(server: ServerProcess, text: str, count: int = 1, client: str = "") -> list[str]:
    """The lines of the server's log holding ``text`` (and ``client``, when given), once there
    are ``count`` of them (a deadline of 30 s, polled: another process writes the log)."""
    deadline = time.monotonic() + 30
    while True:
        found = [line for line in list(server.log) if text in line and client in line]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        threading.Event().wait(0.05)


def _post_head(path: str, length: int, token: str = ADMIN) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: slow\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode()


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One server with the QUICK limits and the dashboard, shared by the tests that need
    nothing else (each finds its own lines in the log by its client's port)."""
    process = ServerProcess(tmp_path_factory.mktemp("quick") / "data", ADMIN, "--dashboard",
                            *QUICK)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(*extra: str) -> ServerProcess:
        process = ServerProcess(tmp_path / f"data{len(started)}", ADMIN, *extra)
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in started:
            process.stop()


def _no_tracebacks(server: ServerProcess) -> None:
    assert not [line for line in server.log if "Traceback" in line], "".join(server.log)


def test_two_hundred_slow_heads_do_not_starve_a_normal_client(quick: ServerProcess) -> None:
    server = quick
    with ExitStack() as stack:
        slow = [stack.enter_context(closing(_socket(server))) for _ in range(200)]
        for connection in slow:
            connection.sendall(b"GET /v1/describe HTTP/1.1\r\nHost: slow\r\n")  # never ends
        answer = httpx.get(f"{server.url}/v1/describe", timeout=30)
        assert answer.status_code == 200
        for connection in slow:
            [answer] = answers(_until_closed(connection))
            assert (answer.status, answer.headers["connection"]) == (408, "close")
            assert _error_code(answer.body) == "REQUEST_TIMEOUT"
    _no_tracebacks(server)


def test_a_connection_that_sends_nothing_is_closed_in_silence(quick: ServerProcess) -> None:
    server = quick
    with closing(_socket(server)) as idle:
        assert _until_closed(idle) == b""


def test_a_stalled_body_gets_408_and_one_line_in_the_log(quick: ServerProcess) -> None:
    server = quick
    with closing(_socket(server)) as stalled:
        client = _port(stalled)
        stalled.sendall(_post_head("/admin/v1/spaces", 100) + b'{"a":')
        [answer] = answers(_until_closed(stalled))
    assert (answer.status, answer.headers["connection"], _error_code(answer.body)) == (
        408, "close", "REQUEST_TIMEOUT")
    assert len(_logged(server, "request cut off (408)", client=client)) == 1
    assert httpx.get(f"{server.url}/v1/describe", timeout=30).status_code == 200
    assert [line for line in server.log if client in line] == _logged(server, "(408)",
                                                                      client=client)
    _no_tracebacks(server)


def test_a_body_slower_than_the_minimum_rate_is_cut_off(quick: ServerProcess) -> None:
    """One byte every 0.1 s never stalls long, but is far below 100 bytes a second."""
    server = quick
    slow = SlowClient(server.port, _post_head("/admin/v1/spaces", 400), b" " * 400, every=0.1)
    client = _port(slow.connection)
    [answer] = answers(slow.wait())
    assert (answer.status, _error_code(answer.body)) == (408, "REQUEST_TIMEOUT")
    assert "minimum rate" in _logged(server, "request cut off (408)", client=client)[0]
    _no_tracebacks(server)


def test_a_request_past_its_total_deadline_is_cut_off(
        serve: Callable[..., ServerProcess]) -> None:
    """No minimum rate, no stall; but the whole request must come within --request-timeout."""
    server = serve("--body-min-rate", "0", "--request-timeout", "1")
    slow = SlowClient(server.port, _post_head("/admin/v1/spaces", 400), b" " * 400, every=0.02)
    [answer] = answers(slow.wait())
    assert (answer.status, _error_code(answer.body)) == (408, "REQUEST_TIMEOUT")
    assert "not complete in time" in _logged(server, "request cut off (408)")[0]


@pytest.mark.slow
def test_eight_slow_clients_do_not_keep_a_ninth_out(serve: Callable[..., ServerProcess]) -> None:
    """All 8 slots are held by clients sending a byte every 0.2 s; a normal client that
    retries on 503 as told is served once they are cut off."""
    server = serve("--no-access-log", "--max-connections", "8", *QUICK)
    slow = [SlowClient(server.port, _post_head("/admin/v1/spaces", 100), b" " * 100, every=0.2)
            for _ in range(8)]
    statuses = []
    with httpx.Client(base_url=server.url, timeout=30) as client:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            answer = client.get("/v1/describe", headers={"Connection": "close"})
            statuses.append(answer.status_code)
            if answer.status_code != 503:
                break
            threading.Event().wait(float(answer.headers["retry-after"]) / 10)
    assert statuses[-1] == 200, statuses
    assert [answers(client.wait())[0].status for client in slow] == [408] * 8


def test_an_early_answer_closes_the_connection(quick: ServerProcess) -> None:
    """A refused token on a 10 MB body: 401 at once with Connection: close, then the server
    closes; it does not read the rest."""
    server = quick
    with closing(_socket(server)) as connection:
        connection.sendall(_post_head("/v1/messages", 10_000_000, token="nope") + b"x" * 1000)
        [answer] = answers(_until_closed(connection))
        assert (answer.status, answer.headers["connection"], _error_code(answer.body)) == (
            401, "close", "UNAUTHENTICATED")
        with pytest.raises((BrokenPipeError, ConnectionResetError)):  # it stopped reading
            connection.sendall(b"x" * 10_000_000)


def test_transfer_encoding_with_content_length_is_refused_and_closed(quick: ServerProcess) -> None:
    server = quick
    with closing(_socket(server)) as connection:
        connection.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked"
                           b"\r\nContent-Length: 5\r\n\r\n0\r\n\r\n"
                           b"GET /v1/describe HTTP/1.1\r\nHost: a\r\n\r\n")  # pipelined
        [answer] = answers(_until_closed(connection))
    assert (answer.status, answer.headers["connection"]) == (400, "close")
    assert json.loads(answer.body)["error"]["details"] == {"field": "headers"}


@pytest.mark.parametrize("head", [
    b"GET /v1/describe HTTP/1.1\nHost: a\n\n",  # bare LF
    b"GET /v1/describe HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n",  # a folded line
    b"GET /v1/describe HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
    b"GET /v1/describe HTTP/1.1\r\nHost: a\r\nContent-Length: 00\r\n\r\n",
    b"GET /v1/describe HTTP/1.1\r\nHost: a\r\nX-A: \x1b[2J\r\n\r\n",
], ids=["bare-lf", "folded", "two-lengths", "leading-zero", "control"])
def test_an_ambiguous_head_is_answered_then_closed(quick: ServerProcess,
                                                   head: bytes) -> None:
    server = quick
    with closing(_socket(server)) as connection:
        connection.sendall(head + b"GET /v1/describe HTTP/1.1\r\nHost: a\r\n\r\n")
        answered = answers(_until_closed(connection))
    assert [(answer.status, answer.headers["connection"]) for answer in answered] == [
        (200, "close")]


def test_an_answer_nobody_takes_is_abandoned(quick: ServerProcess) -> None:
    """A download of 16 MiB by a client that reads nothing: after --send-timeout the server
    abandons it (one line in the log) and the client never gets the whole blob."""
    server = quick
    content = b"w" * (16 << 20)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        api = Api(client)  # an httpx client to a real server
        api.space("s1", ("alice",))
        from tests.support.api import sealed_blob
        blob_id = sealed_blob(api, "s1/alice", content)
        token = api.tokens["s1/alice"]
    with closing(_socket(server, receive_buffer=4096)) as reader:
        reader.sendall(f"GET /v1/blobs/{blob_id}/content HTTP/1.1\r\nHost: a\r\n"
                       f"Authorization: Bearer {token}\r\n\r\n".encode())
        assert len(_logged(server, "answer abandoned", client=_port(reader))) == 1
        assert len(_until_closed(reader)) < len(content)
    _no_tracebacks(server)


def _sign_in_form(client: httpx.Client, forwarded: str) -> httpx.Response:
    from tests.support.dashboard_client import csrf_of
    form = client.get("/dashboard/sign-in")
    return client.post("/dashboard/sign-in", headers={"X-Forwarded-For": forwarded}, data={
        "csrf": csrf_of(form.text), "admin_token": "wrong"})


def test_forwarded_addresses_are_not_trusted_by_default(
        serve: Callable[..., ServerProcess]) -> None:
    """Twelve wrong tokens from one peer, each claiming another X-Forwarded-For: the sign-in
    limit counts the peer, so they end in 429."""
    server = serve("--dashboard")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        statuses = [_sign_in_form(client, f"203.0.113.{n}").status_code for n in range(12)]
    assert statuses[0] == 401
    assert statuses[-1] == 429
    assert not [line for line in server.log if "203.0.113." in line]


def test_forwarded_addresses_count_from_a_proxy_the_operator_names(
        serve: Callable[..., ServerProcess]) -> None:
    server = serve("--dashboard", "--forwarded-allow-ips", "127.0.0.1")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        statuses = [_sign_in_form(client, f"203.0.113.{n}").status_code for n in range(12)]
    assert set(statuses) == {401}  # each address failed once
    assert _logged(server, "203.0.113.11:")


def test_a_client_that_leaves_mid_form_costs_one_line(quick: ServerProcess) -> None:
    server = quick
    with closing(_socket(server)) as leaving:
        client = _port(leaving)
        leaving.sendall(b"POST /dashboard/sign-in HTTP/1.1\r\nHost: a\r\nContent-Type: "
                        b"application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
                        b"csrf=abc&admin")
        leaving.shutdown(socket.SHUT_WR)
        _until_closed(leaving)
    assert len(_logged(server, "left before its request was read", client=client)) == 1
    assert len([line for line in server.log if client in line]) == 1
    assert httpx.get(f"{server.url}/v1/describe", timeout=30).status_code == 200
    _no_tracebacks(server)


def test_past_the_connection_cap_a_new_connection_is_refused_in_the_envelope(
        serve: Callable[..., ServerProcess]) -> None:
    server = serve("--no-access-log", "--max-connections", "3")
    with ExitStack() as stack:
        held = [stack.enter_context(closing(_socket(server))) for _ in range(3)]
        for connection in held:  # each is open and served: the server counts it
            connection.sendall(b"GET /v1/describe HTTP/1.1\r\nHost: held\r\n\r\n")
            assert connection.recv(65536).startswith(b"HTTP/1.1 200")
        refused = httpx.get(f"{server.url}/v1/describe", timeout=30)
    assert refused.status_code == 503
    assert refused.json()["error"]["code"] == "UNAVAILABLE"


def test_an_exception_that_escapes_the_app_is_a_500_in_the_envelope() -> None:
    """Whatever an app lets escape, the server's answer is well formed: ``500 INTERNAL`` in
    the envelope, telling nothing of the failure (uvicorn's own answer is plain text)."""
    from tests.support.threaded_server import serving_app
    from waypost.reference.http.connection_limits import ConnectionLimits, limited_protocol

    async def broken(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("a secret detail")

    with serving_app(broken, http=limited_protocol(ConnectionLimits()), lifespan="off") as url:
        answer = httpx.get(f"{url}/anything", timeout=30)
    assert answer.status_code == 500
    assert answer.json() == {"error": {"code": "INTERNAL", "message": "internal error",
                                       "details": {}}}
    assert answer.headers["connection"] == "close"
