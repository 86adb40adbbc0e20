"""The bench's latency proxy puts a server at a distance: every byte arrives, in order, and a
round trip takes at least the distance asked for, with jitter too."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from waypost.bench.latency_proxy import at_distance

BODY = bytes(range(256)) * 8192  # 2 MiB: many chunks each way


class Echo(BaseHTTPRequestHandler):
    """Answers a POST with the SHA-256 of its body, a GET with BODY."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers["Content-Length"]))
        digest = hashlib.sha256(data).hexdigest().encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(digest)))
        self.end_headers()
        self.wfile.write(digest)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(("rtt", "jitter"), [(40, 0), (10, 30)])
def test_every_byte_arrives_in_order_a_round_trip_away(server: str, rtt: float,
                                                       jitter: float) -> None:
    with at_distance(server, rtt, jitter, seed=3) as url, httpx.Client(base_url=url) as client:
        assert url != server
        client.get("/").raise_for_status()  # the connection is open: a round trip is one
        started = time.monotonic()
        answer = client.get("/")
        took = time.monotonic() - started
        sent = client.post("/", content=BODY)
    assert answer.content == BODY
    assert sent.text == hashlib.sha256(BODY).hexdigest()
    assert took >= rtt / 1000  # a lower bound: the distance asked for is there


def test_no_distance_is_the_server_itself(server: str) -> None:
    with at_distance(server, 0) as url:
        assert url == server
