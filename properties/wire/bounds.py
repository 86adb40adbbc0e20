"""The kit's bounds on every answer it reads (docs/spec.md, "The kit's own limits").

The kit is pointed at other people's deployments, so every answer is untrusted input. Its
clients send through :class:`BoundedTransport`, which reads each answer whole before anyone
parses it, and stops reading, with :class:`OutOfBounds`, at the first of:

- more bytes than the cap (:data:`ANSWER_BYTES` for JSON; a request may name its own cap,
  a blob's declared size, with the :data:`CAP` extension: then a smaller ``Content-Length``
  lowers it, and the kit reads at most :data:`MARGIN` past it), or a content coding the kit
  did not ask for (it asks for none: a compressed answer could expand past any cap);
- the deadline of the call: one total time for connecting, sending, the headers and the
  body (plus the ``wait`` of a long poll), enforced on every socket read and write by a
  wrapped network backend, so a trickle of one byte per second cannot outlast it;
- a walk through pages that does not move on (``properties/wire/paging.py``).

A target whose calls missed :data:`TOO_SLOW` deadlines is too slow to check: every later call
through the same :class:`Bounds` (the run's client, the clients P17 makes) fails at once, unsent,
so that the run ends within a small multiple of ``--timeout`` instead of waiting out every call.

``OutOfBounds`` is a transport error: code that treats a dropped connection as a finding
treats it so too; the kit's session turns it into a failed check of the property the call
exercises (``properties/wire/http.py``).
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx

from waypost.properties.wire.bound_values import ANSWER_BYTES, LONGEST_WAIT, SECONDS
from waypost.properties.wire.paging import WALK_PAGES, Walks
from waypost.properties.wire.untrusted import visible

#: Request extension: the declared size of this request's answer in bytes (a blob's content).
CAP = "waypost.answer_bytes"
#: The most the kit reads past a declared size before it stops: one read of the network
#: (httpcore reads at most 64 KiB at a time); the content is refused once it is longer.
MARGIN = 64 << 10
#: Missed deadlines after which a target is too slow to check: no later call is sent.
TOO_SLOW = 3

_DEADLINE: ContextVar[float | None] = ContextVar("waypost_deadline", default=None)


class Misses:
    """The deadlines missed by the calls made within one :class:`Bounds` (one run)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> int:
        with self._lock:
            self.count += 1
            return self.count


@dataclass(frozen=True)
class Bounds:
    """How much of an answer the kit reads, and for how long; ``misses`` counts the deadlines
    missed by every call made within these bounds (:data:`TOO_SLOW`)."""

    answer_bytes: int = ANSWER_BYTES
    seconds: float = SECONDS
    walk_pages: int = WALK_PAGES
    misses: Misses = field(default_factory=Misses, compare=False, repr=False)

    def timeout(self) -> httpx.Timeout:
        """Per connect and per read, never longer than the whole call."""
        return httpx.Timeout(self.seconds, connect=min(self.seconds, 10.0))

    @property
    def too_slow(self) -> bool:
        """Whether the target missed :data:`TOO_SLOW` deadlines: no call is sent to it any
        more."""
        return self.misses.count >= TOO_SLOW

    def slow_verdict(self) -> str:
        return (f"the target is too slow: {self.misses.count} calls missed the kit's deadline "
                f"of {self.seconds:g} s (--timeout); the kit sends it nothing more")


class OutOfBounds(httpx.TransportError):
    """An answer past one of the kit's bounds: ``bound`` is ``answer_bytes``, ``deadline``,
    ``content_encoding`` or ``walk``; the kit read no further. ``too_slow``: the target
    missed :data:`TOO_SLOW` deadlines (this call's the last), and no call is sent any more."""

    def __init__(self, bound: str, request: httpx.Request, detail: str) -> None:
        self.bound, self.detail = bound, detail
        self.method, self.path = request.method, request.url.path
        super().__init__(visible(f"{request.method} {request.url.path}: {detail}"),
                         request=request)


def _remaining(timeout: float | None, error: type[Exception]) -> float | None:
    """The socket timeout left for one read or write of the current call."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every read and write ends by the current call's deadline."""

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, _remaining(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, _remaining(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self.inner.start_tls(
            ssl_context, server_hostname, _remaining(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend, its connections wrapped in :class:`_DeadlineStream`."""

    def __init__(self, inner: httpcore.NetworkBackend) -> None:
        self.inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self.inner.connect_tcp(
            host, port, _remaining(timeout, httpcore.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore.NetworkStream:
        return _DeadlineStream(self.inner.connect_unix_socket(
            path, _remaining(timeout, httpcore.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``NO_PROXY``, …)."""
    target = httpx.URL(url)
    if not target.host or urllib.request.proxy_bypass(target.host):
        return None
    return urllib.request.getproxies().get(target.scheme)


#: How long the kit keeps an idle connection for reuse: under any idle timeout a deployment
#: would set (the reference's is 5 s), so the kit seldom sends on one the server is closing.
KEEPALIVE_SECONDS = 2.0


def network_transport(url: str | None = None,
                      connections: int | None = None) -> httpx.HTTPTransport:
    """httpx's transport (through the environment's proxy for ``url``, if any) with every
    socket operation bound by the call's deadline, and at most ``connections`` open at once
    (httpx's default, 100, when None). httpx takes no network backend, so the one
    of its connection pool is wrapped in place; should a later httpx hide it, the deadline
    still holds between the chunks of a body (docs/spec.md says so)."""
    limits = httpx.Limits(max_connections=connections or 100,
                          max_keepalive_connections=connections or 20,
                          keepalive_expiry=KEEPALIVE_SECONDS)
    transport = httpx.HTTPTransport(proxy=environment_proxy(url) if url else None,
                                    limits=limits)
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        setattr(pool, "_network_backend", _DeadlineBackend(backend))  # noqa: B010
    return transport


def _wait(request: httpx.Request) -> float:
    """The ``wait`` a long poll asks the server for, as the kit sent it (0 if none)."""
    try:
        wait = float(request.url.params.get("wait", 0))
    except ValueError:
        return 0.0
    return min(max(wait, 0.0), LONGEST_WAIT) if wait == wait else 0.0  # NaN: none


class BoundedTransport(httpx.BaseTransport):
    """Forwards to ``inner`` and returns each answer read whole within the kit's bounds."""

    def __init__(self, inner: httpx.BaseTransport, bounds: Bounds | None = None) -> None:
        self.inner, self.bounds = inner, bounds or Bounds()
        self.walks = Walks(self.bounds.walk_pages)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.bounds.too_slow:  # unsent: the run ends in a small multiple of --timeout
            raise OutOfBounds("too_slow", request, self.bounds.slow_verdict())
        request.headers["Accept-Encoding"] = "identity"
        wait = _wait(request)
        seconds = self.bounds.seconds + wait
        if wait:  # a long poll's server is silent for its wait: each read may take as long
            timeouts = dict(request.extensions.get("timeout") or {})
            timeouts["read"] = seconds if timeouts.get("read") is not None else None
            request.extensions["timeout"] = timeouts
        token = _DEADLINE.set(time.monotonic() + seconds)
        try:
            answer = self._answer(request, seconds)
        finally:
            _DEADLINE.reset(token)
        if isinstance(answer, OutOfBounds):  # raised here, where no frame holds the body read
            if answer.bound == "deadline" and self.bounds.misses.add() >= TOO_SLOW:
                raise OutOfBounds("too_slow", request,
                                  f"{answer.detail}; {self.bounds.slow_verdict()}")
            raise answer
        status, headers, body, extensions = answer
        loop = self.walks.follow(request, status, body)
        if loop is not None:
            raise OutOfBounds("walk", request, loop)
        return httpx.Response(status, headers=headers, stream=httpx.ByteStream(body),
                              extensions=extensions, request=request)

    def _answer(self, request: httpx.Request, seconds: float
                ) -> tuple[int, httpx.Headers, bytes, dict[str, Any]] | OutOfBounds:
        """The answer read whole, or the bound it broke."""
        deadline = time.monotonic() + seconds
        try:
            response = self.inner.handle_request(request)
            try:
                body = self._body(request, response, deadline)
            finally:
                response.close()
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            return OutOfBounds("deadline", request, _late(seconds))
        except OutOfBounds as shown:  # the headers already showed it
            return shown
        if isinstance(body, str):
            return OutOfBounds(body, request, _late(seconds) if body == "deadline" else
                               _large(*self._cap(request, response, lowered=True)))
        return response.status_code, response.headers, body, dict(response.extensions)

    def _cap(self, request: httpx.Request, response: httpx.Response, *,
             lowered: bool = False) -> tuple[int, bool]:
        """The answer's cap in bytes, and whether it is a declared size: a request's own cap
        (:data:`CAP`; ``lowered``: by a smaller ``Content-Length``) holds for a successful
        answer; an error envelope may always take the JSON cap."""
        asked = request.extensions.get(CAP)
        if asked is None:
            return self.bounds.answer_bytes, False
        if not response.is_success:
            return max(int(asked), self.bounds.answer_bytes), False
        length = response.headers.get("content-length", "")
        if lowered and length.isdigit():
            return min(int(asked), int(length)), True
        return int(asked), True

    def _body(self, request: httpx.Request, response: httpx.Response,
              deadline: float) -> bytes | str:
        """The body, or the name of the bound reading it broke (``answer_bytes`` past the
        cap, ``deadline`` past the call's deadline). Reading stops at the first chunk past the
        cap: a declared size is read at most :data:`MARGIN` past (a read of the network)."""
        _check_headers(request, response, *self._cap(request, response))
        cap = self._cap(request, response, lowered=True)[0]
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_raw():
            size += len(chunk)
            if size > cap:
                return "answer_bytes"
            if time.monotonic() > deadline:  # a trickle, however it came through
                return "deadline"
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.inner.close()


def _large(cap: int, declared: bool) -> str:
    if declared:
        return f"the content is longer than its declared {cap} bytes (the kit read no further)"
    return f"an answer of more than {cap} bytes (the kit's cap)"


def _late(seconds: float) -> str:
    return f"no complete answer within {seconds:g} s (the kit's deadline per call)"


def _check_headers(request: httpx.Request, response: httpx.Response, cap: int,
                   declared: bool) -> None:
    """An answer the headers already show is out of bounds: a declared length over the cap
    (a blob's ``declared`` size), or a content coding (the kit asked for ``identity``)."""
    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        raise OutOfBounds("answer_bytes", request,
                          f"the content is longer than its declared {cap} bytes: its "
                          f"Content-Length says {length}" if declared else
                          f"an answer of {length} bytes, over the kit's cap of {cap}")
    coding = response.headers.get("content-encoding", "identity").strip().lower()
    if coding not in ("", "identity"):
        raise OutOfBounds("content_encoding", request,
                          f"an answer in the content coding {visible(coding)[:40]!r}: the kit "
                          "asks for identity")


def bounded_client(base_url: str, bounds: Bounds | None = None,
                   transport: httpx.BaseTransport | None = None, **options: Any) -> httpx.Client:
    """An httpx client to ``base_url`` whose every answer is read within ``bounds``;
    ``transport`` (default: the network, through the environment's proxy) is what the
    bounded transport forwards to. httpx's own proxy transports from the environment would
    bypass the bounds: the client does not make them (``trust_env`` false)."""
    bounds = bounds or Bounds()
    inner = transport if transport is not None else network_transport(base_url)
    return httpx.Client(base_url=base_url, timeout=bounds.timeout(), trust_env=False,
                        transport=BoundedTransport(inner, bounds), **options)
