"""Connection limits (protocol §12; docs/spec.md "Connection limits"): a slow client is cut off,
the others are served.

- :class:`LimitedH11` is uvicorn's h11 protocol with a deadline for each request head: from
  the connection's start, or from the first byte of a next request, the head must be complete
  within ``header_seconds`` or the connection closes (uvicorn has no such setting); past
  ``max_connections`` open connections a new one is answered ``503`` and closed.
- :class:`BodyTimeout` is ASGI middleware: each chunk of a request body must arrive within
  ``body_seconds`` of the previous one, or the request ends without an answer and the
  connection closes.
- uvicorn's own ``timeout_keep_alive`` closes an idle keep-alive connection.

:class:`LimitedH11` also hands the socket each answer in one write (:class:`CorkedTransport`):
uvicorn writes the head and the body separately, two system calls per answer, each a release
and re-acquisition of the interpreter lock that the storage threads hold meanwhile.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from waypost.reference.domain.errors import Unavailable
from waypost.reference.domain.faults import Abandoned


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits ``waypost serve`` runs with (each a command-line option)."""

    header_seconds: float = 10.0
    body_seconds: float = 30.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 1000


class LimitedH11(H11Protocol):
    """h11 with a request-head deadline and a cap on open connections (class attributes, set
    by :func:`limited_protocol`). A connection past the cap is answered ``503 UNAVAILABLE`` in
    the error envelope and closed."""

    header_seconds = ConnectionLimits.header_seconds
    max_connections = ConnectionLimits.max_connections

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        transport = cast(asyncio.Transport, CorkedTransport(transport, self.loop))
        super().connection_made(transport)
        self._head_deadline: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections:
            transport.write(_TOO_MANY)
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # a request head has begun and is incomplete
            if self._head_deadline is None:
                self._arm()
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._head_deadline = self.loop.call_later(self.header_seconds, self._too_slow)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _too_slow(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE:
            self.transport.close()


class CorkedTransport:
    """A transport whose writes made in one step of the event loop reach the socket together,
    at the end of that step (an answer's head and body: one system call instead of two).
    Once a step has written the wrapped transport's high-water mark, what is held goes to it at
    once, so that it can pause the writer as before (a streamed download holds no more than a
    chunk or two). Everything else is the wrapped transport's; ``close`` and ``write_eof`` send
    what is pending first."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport, self._loop = transport, loop
        self._pending: list[bytes] = []
        self._held = 0
        self._mark = transport.get_write_buffer_limits()[1]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data if isinstance(data, bytes) else bytes(data))
        self._held += len(data)
        if self._held >= self._mark:
            self._flush()

    def writelines(self, chunks: Iterable[bytes | bytearray | memoryview]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._held = 0
            self._transport.write(data)

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._held = 0
        self._transport.abort()


def _refusal() -> bytes:
    body = json.dumps(Unavailable("the server has too many open connections; retry").envelope(),
                      separators=(",", ":")).encode()
    head = ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n")
    return head.encode() + body


_TOO_MANY = _refusal()


def limited_protocol(limits: ConnectionLimits) -> type[LimitedH11]:
    """The protocol class for uvicorn's ``http=`` with these limits."""
    return type("LimitedH11Protocol", (LimitedH11,), {
        "header_seconds": limits.header_seconds, "max_connections": limits.max_connections})


class BodyTimeout:
    """ASGI middleware: a request body that stalls for ``seconds`` between chunks ends the
    request without an answer (the connection closes, see ``CloseOnAbandon``)."""

    def __init__(self, app: Any, seconds: float = ConnectionLimits.body_seconds) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        complete = False

        async def timed() -> Any:
            nonlocal complete
            if complete:  # later calls wait for a disconnect (streamed answers, long polls)
                return await receive()
            try:
                async with asyncio.timeout(self.seconds):  # no task per chunk, as wait_for makes
                    message = await receive()
            except TimeoutError:
                raise Abandoned("request body read timeout") from None
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        await self.app(scope, timed, send)
