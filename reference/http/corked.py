"""A transport that hands each answer to the socket in one write.

uvicorn writes an answer's head and body separately, two system calls per answer, each a release
and re-acquisition of the interpreter lock that the storage threads hold meanwhile.
:class:`CorkedTransport` joins the writes made in one step of the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any


class CorkedTransport:
    """A transport whose writes made in one step of the event loop reach the socket together,
    at the end of that step (an answer's head and body: one system call instead of two).
    Once a step has written the wrapped transport's high-water mark, what is held goes to it at
    once, so that it can pause the writer as before (a streamed download holds no more than a
    chunk or two). Everything else is the wrapped transport's; ``close`` and ``write_eof`` send
    what is pending first. ``closing``, when given, is called instead of the wrapped
    transport's ``close`` (the connection's owner decides how it ends); after it,
    ``is_closing`` is true."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop,
                 closing: Callable[[], None] | None = None) -> None:
        self._transport, self._loop, self._closing = transport, loop, closing
        self._pending: list[bytes] = []
        self._held = 0
        self._mark = transport.get_write_buffer_limits()[1]
        self._closed = False

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

    def is_closing(self) -> bool:
        return self._closed or self._transport.is_closing()

    def close(self) -> None:
        self._flush()
        if self._closing is not None and not self._closed:
            self._closed = True
            self._closing()
        else:
            self._closed = True
            self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._held = 0
        self._closed = True
        self._transport.abort()
