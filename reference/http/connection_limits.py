"""Connection limits (protocol.md §12; docs/spec.md "Connection limits"): a client that is slow,
or that frames its request ambiguously, is cut off; the others are served.

:class:`LimitedH11` is uvicorn's h11 protocol with these rules (the arithmetic of the defaults
is in docs/spec.md):

- **Reading a request.** Its head must be complete ``header_seconds`` after the connection's
  start or its first byte. Its body gets ``body_grace_seconds``; after that every window of the
  same length must bring ``body_min_rate`` bytes a second, no gap between chunks may exceed
  ``body_seconds``, and head and body together must arrive within ``request_seconds``. Time the
  server itself holds the reading (its buffer is full, or it has not asked for a
  ``100-continue`` body yet) does not count. A client cut off this way gets ``408
  REQUEST_TIMEOUT`` in the error envelope, if no answer has begun, and the connection closes.
- **Early answers.** An answer that begins before the request's body has arrived carries
  ``Connection: close``, and the connection closes after it: the server reads no more of a body
  nobody uses than :data:`LINGER_BYTES` during :data:`LINGER_SECONDS` (a lingering close, so
  that the client reads the answer instead of a reset).
- **Writing an answer.** An answer the client takes nothing of for ``send_seconds`` is
  abandoned and its connection closed.
- **Framing** (:mod:`.framing`): ``Transfer-Encoding`` with ``Content-Length`` is refused with
  ``400``; other heads two parsers could read two ways are answered, then closed.
- Past ``max_connections`` open connections a new one is answered ``503`` and closed; uvicorn's
  own ``timeout_keep_alive`` closes an idle keep-alive connection.
- An exception that escapes the app is answered ``500 INTERNAL`` in the envelope (uvicorn's
  own answer is plain text); a client that disconnects costs one line at info level.
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any, cast

import h11
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol

from waypost.reference.domain.errors import (
    InvalidRequest,
    RequestTimeout,
    Unavailable,
    WaypostError,
    internal_error,
)
from waypost.reference.http.corked import CorkedTransport
from waypost.reference.http.endpoints import error_response
from waypost.reference.http.framing import HeadScan, refusal

#: A lingering close reads and drops at most this much of a body nobody uses…
LINGER_BYTES = 65536
#: …for at most this long, then closes.
LINGER_SECONDS = 2.0


@dataclass(frozen=True)
class ConnectionLimits:
    """The limits ``waypost serve`` runs with (each a command-line option)."""

    header_seconds: float = 10.0
    body_seconds: float = 30.0
    body_grace_seconds: float = 5.0
    body_min_rate: int = 500
    request_seconds: float = 300.0
    send_seconds: float = 15.0
    keep_alive_seconds: float = 5.0
    max_connections: int = 1000


def _answer(status: str, error: WaypostError, *extra: str) -> bytes:
    """A whole HTTP answer with ``error``'s envelope that closes the connection."""
    body = json.dumps(error.envelope(), separators=(",", ":")).encode()
    head = "".join([f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n",
                    f"content-length: {len(body)}\r\n", *(f"{line}\r\n" for line in extra),
                    "connection: close\r\n\r\n"])
    return head.encode() + body


_TOO_MANY = _answer("503 Service Unavailable", Unavailable(
    "the server has too many open connections; retry"), "retry-after: 1")
_CLOSE = (b"connection", b"close")


class _Flow(FlowControl):
    """uvicorn's flow control, telling its protocol when the server holds the reading."""

    def __init__(self, transport: asyncio.Transport, protocol: LimitedH11) -> None:
        super().__init__(transport)
        self._protocol = protocol

    def pause_reading(self) -> None:
        if not self.read_paused:
            self._protocol.reading_held(True)
        super().pause_reading()

    def resume_reading(self) -> None:
        if self.read_paused:
            self._protocol.reading_held(False)
        super().resume_reading()


class LimitedH11(H11Protocol):
    """h11 with the limits of this module (class attributes, set by :func:`limited_protocol`)."""

    limits = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._inner, self.app = self.app, self._serve
        self._real = cast(asyncio.Transport, None)  # the socket's transport, once connected
        self._timer: asyncio.TimerHandle | None = None
        self._send_timer: asyncio.TimerHandle | None = None
        self._held_since: float | None = None
        self._lingering = False
        self._cut = False  # this connection's request was cut off: its end is logged
        self._dropped = 0
        self._scan = HeadScan()
        self._head_open = False  # a head has begun and is not complete
        self._ambiguous = False  # the current request's head was ambiguous
        # The clocks of the request being read (loop time):
        self._started = self._last = self._window = 0.0
        self._window_bytes = 0
        self._in_grace = True

    # ----- the connection ---------------------------------------------------------------

    # uvicorn's protocol declares the base transport; a TCP server always hands a full one
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._real = transport
        corked = cast(asyncio.Transport, CorkedTransport(transport, self.loop, self._closing))
        super().connection_made(corked)
        self.flow = _Flow(corked, self)
        if len(self.connections) > self.limits.max_connections:
            transport.write(_TOO_MANY)
            transport.close()
            return
        self._head_open, self._started = True, self.loop.time()  # a first head must come
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._timer, self._send_timer):
            if timer is not None:
                timer.cancel()
        self._timer = self._send_timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self._real.close()
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            if not self._head_open:
                self._head_open, self._started, self._scan = True, self.loop.time(), HeadScan()
            self._scan.feed(data)
        elif state is h11.SEND_BODY:
            self._last = self.loop.time()
            self._window_bytes += len(data)
        super().data_received(data)

    def handle_events(self) -> None:
        before = self.conn.their_state
        super().handle_events()
        after = self.conn.their_state
        if before is h11.IDLE and after is not h11.IDLE:  # a head is complete
            now = self.loop.time()
            if not self._head_open:  # pipelined: its first byte was not seen arrive
                self._started = now
            self._head_open, self._ambiguous, self._scan.ambiguous = \
                False, self._scan.ambiguous, False
            self._last = self._window = now
            self._window_bytes, self._in_grace = 0, True
            if self._timer is not None:  # it was the head's
                self._timer.cancel()
                self._timer = None
        elif after is h11.IDLE and not self._head_open and self.conn.trailing_data[0]:
            self._head_open, self._started = True, self.loop.time()  # a pipelined head
        self._watch()

    def eof_received(self) -> None:
        if self._lingering:
            self._real.close()
        return None

    # ----- reading deadlines ------------------------------------------------------------

    def _reading(self) -> str | None:
        """What is being read under a deadline: ``"head"``, ``"body"`` or nothing."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return "body"
        if state is h11.IDLE and self._head_open:
            return "head"
        return None

    def _limits_of(self, reading: str) -> list[tuple[float, str]]:
        """The deadlines of what is read, each with why a client past it is cut off (the
        minimum rate's window is apart: passing its end is a check, not a cut-off)."""
        limits = self.limits
        if reading == "head":
            return [(self._started + limits.header_seconds, "its head was not complete in time")]
        return [(self._started + limits.request_seconds, "it was not complete in time"),
                (self._last + limits.body_seconds, "its body stalled")]

    def _deadline(self, reading: str) -> float:
        window = self.limits.body_grace_seconds if self.limits.body_min_rate > 0 else math.inf
        return min(*(when for when, _ in self._limits_of(reading)),
                   self._window + window if reading == "body" else math.inf)

    def _watch(self) -> None:
        reading = self._reading()
        if reading is None or self._held_since is not None or self._lingering:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        elif self._timer is None:
            self._timer = self.loop.call_at(self._deadline(reading), self._expired)

    def reading_held(self, held: bool) -> None:
        """The server stops (``True``) or resumes reading: the time between does not count."""
        now = self.loop.time()
        if held:
            self._held_since = now
        elif self._held_since is not None:
            pause, self._held_since = now - self._held_since, None
            self._started += pause
            self._last += pause
            self._window += pause
        self._watch()

    def _expired(self) -> None:
        self._timer = None
        reading = self._reading()
        if reading is None:
            return
        now = self.loop.time()
        if reading == "body" and self.cycle is not None and self.cycle.waiting_for_100_continue:
            self._last = self._window = now  # the client waits for the server's go-ahead
        elif now < self._deadline(reading):
            pass  # data came meanwhile
        elif passed := [why for when, why in self._limits_of(reading) if now >= when]:
            self._cut_off(passed[0])
            return
        elif not self._in_grace and self._window_bytes < self.limits.body_min_rate * (
                now - self._window):
            self._cut_off("its body came slower than the minimum rate")
            return
        else:
            self._window, self._window_bytes, self._in_grace = now, 0, False
        self._watch()

    def _cut_off(self, why: str) -> None:
        """End a request that is read too slowly: ``408`` if no answer has begun, then close."""
        head = self._reading() == "head"
        if head and not self.conn.trailing_data[0]:
            self._real.close()  # nothing was sent: an idle connection, closed in silence
            return
        cycle = None if head else self.cycle
        self.logger.info("%s - request cut off (408): %s", self._peer(), why)
        self._cut = True
        if cycle is None or not cycle.response_started:
            self._real.write(_TIMEOUT)
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()

    # ----- closing and writing ----------------------------------------------------------

    def _closing(self) -> None:
        """Close the connection; while the client may still be sending, linger first."""
        state = self.conn.their_state
        sending = state is h11.SEND_BODY or state is h11.ERROR or (
            state is h11.IDLE and self._head_open and bool(self.conn.trailing_data[0]))
        if self._lingering or not sending or self._real.is_closing():
            self._real.close()
            return
        self._lingering = True
        self._watch()
        self._real.write_eof()
        self._real.resume_reading()
        self.loop.call_later(LINGER_SECONDS, self._real.close)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._send_timer is None:
            self._send_timer = self.loop.call_later(self.limits.send_seconds, self._stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._send_timer is not None:
            self._send_timer.cancel()
            self._send_timer = None

    def _stalled(self) -> None:
        self._send_timer = None
        self.logger.info("%s - answer abandoned: the client took none of it for %g s",
                         self._peer(), self.limits.send_seconds)
        self._real.abort()

    def _peer(self) -> str:
        return f"{self.client[0]}:{self.client[1]}" if self.client else "unknown"

    # ----- the app, as this connection serves it ----------------------------------------

    async def _serve(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        why = refusal(scope)
        if why is not None:
            await _closing_error(InvalidRequest(why, field="headers"), scope, receive, send)
            return
        ambiguous, answered = self._ambiguous, False

        async def sending(message: Any) -> None:
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
                if ambiguous or self.conn.their_state is h11.SEND_BODY:
                    message = {**message, "headers": [*message.get("headers", ()), _CLOSE]}
            await send(message)

        try:
            await self._inner(scope, receive, sending)
        except ClientDisconnect:
            if not self._cut:
                self.logger.info("%s - the client left before its request was read",
                                 self._peer())
        except Exception:
            self.logger.exception("internal error")
            if not answered:
                await _closing_error(internal_error(), scope, receive, send)
            else:
                self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot parse: ``400`` in the envelope, then close (uvicorn has
        logged one line)."""
        self.transport.write(_INVALID)
        self.transport.close()


async def _closing_error(error: WaypostError, scope: Any, receive: Any, send: Any) -> None:
    """``error`` in the envelope, as every endpoint answers it, with ``Connection: close``."""
    response = error_response(error)
    response.headers["connection"] = "close"
    await response(scope, receive, send)


_TIMEOUT = _answer("408 Request Timeout", RequestTimeout(
    "the request was not received in time; the connection closes"))
_INVALID = _answer("400 Bad Request", InvalidRequest(
    "the request is not valid HTTP/1.1", field="headers"))


def limited_protocol(limits: ConnectionLimits) -> type[LimitedH11]:
    """The protocol class for uvicorn's ``http=`` with these limits."""
    return type("LimitedH11Protocol", (LimitedH11,), {"limits": limits})
