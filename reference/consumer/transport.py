"""The consumer's HTTP transport: every call ends by its deadline, however the server answers.

httpx bounds each socket read, not a whole call: a server that sends one byte every two
seconds, in its headers or its body, never trips a 30-second read timeout. This transport
gives each read and write at most the time left to the deadline of the call in progress on the
thread (:func:`deadline`), so a call ends when its time is up, byte by byte or not.

It connects directly: proxies named in the environment are not used (the consumer talks to the
one server its file belongs to). Redirects are never followed (httpx's default, kept): an
answer's ``Location`` could send the bearer token to another origin.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import certifi
import httpcore
import httpx

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every read and write of this thread inside the block ends ``seconds`` from now."""
    outer = getattr(_local, "at", None)
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = outer


def _bounded(timeout: float | None, timeout_error: type[Exception]) -> float | None:
    """``timeout`` cut to the time left to the thread's deadline; past it, ``timeout_error``."""
    at: float | None = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise timeout_error("the call's total time is up")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self.stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.stream.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.stream.write(buffer, _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.stream.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self.stream.start_tls(ssl_context, server_hostname,
                                             _bounded(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self.backend.connect_tcp(
            host, port, _bounded(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)


class BoundedTransport(httpx.HTTPTransport):
    """httpx's own transport over a connection pool whose streams keep the deadline."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        # httpx builds its pool with the default network backend and has no option for
        # another; the pool is rebuilt with the same defaults and the bounded backend.
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl.create_default_context(cafile=certifi.where()),
            max_connections=10, max_keepalive_connections=5, keepalive_expiry=5.0,
            network_backend=_Backend())
