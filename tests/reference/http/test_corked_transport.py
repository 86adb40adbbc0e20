"""The server hands each answer to the socket in one write (reference/http/corked.py,
``CorkedTransport``): what is written in one step of the event loop goes out in one system call
at its end, and closing sends what is pending first. A real socket pair and asyncio's own
socket transport; the socket counts its ``send`` calls."""

from __future__ import annotations

import asyncio
import socket

from waypost.reference.http.corked import CorkedTransport


class CountingSocket(socket.socket):
    """A real socket that counts the ``send`` system calls made on it."""

    sends = 0

    def send(self, data: object, flags: int = 0) -> int:
        CountingSocket.sends += 1
        return super().send(data, flags)


async def _pair() -> tuple[CorkedTransport, socket.socket]:
    ours, theirs = socket.socketpair()
    counted = CountingSocket(ours.family, ours.type, fileno=ours.detach())
    transport, _ = await asyncio.get_running_loop().connect_accepted_socket(
        asyncio.Protocol, counted)
    theirs.setblocking(False)
    return CorkedTransport(transport, asyncio.get_running_loop()), theirs


async def _received(peer: socket.socket) -> bytes:
    loop = asyncio.get_running_loop()
    received = b""
    while chunk := await loop.sock_recv(peer, 65536):
        received += chunk
    return received


def test_writes_of_one_step_reach_the_socket_in_one_call() -> None:
    async def scenario() -> tuple[int, bytes]:
        corked, peer = await _pair()
        CountingSocket.sends = 0
        corked.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        corked.write(b"")
        corked.write(bytearray(b"{}"))
        assert CountingSocket.sends == 0  # nothing before the step ends
        await asyncio.sleep(0)  # one step of the loop: the flush runs
        sends = CountingSocket.sends
        corked.close()
        return sends, await _received(peer)

    sends, received = asyncio.run(scenario())
    assert sends == 1
    assert received == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"


def test_close_sends_what_is_pending_first() -> None:
    async def scenario() -> bytes:
        corked, peer = await _pair()
        corked.write(b"last words")
        corked.close()
        assert corked.is_closing()  # the wrapped transport's own state
        return await _received(peer)

    assert asyncio.run(scenario()) == b"last words"


def test_abort_drops_what_is_pending() -> None:
    async def scenario() -> bytes:
        corked, peer = await _pair()
        corked.write(b"never sent")
        corked.abort()
        return await _received(peer)

    assert asyncio.run(scenario()) == b""


class Pausable(asyncio.Protocol):
    """Records the transport's back-pressure, as uvicorn's flow control does."""

    paused = False

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False


def test_a_step_writing_past_the_mark_hands_it_over_so_the_writer_is_paused() -> None:
    """A streamed download writes chunk after chunk in one step and stops once paused: held
    back until the step ends, nothing would ever pause it."""

    async def scenario() -> tuple[int, int, int]:
        ours, theirs = socket.socketpair()  # the peer never reads: a slow client
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_accepted_socket(Pausable, ours)
        corked = CorkedTransport(transport, loop)
        mark = transport.get_write_buffer_limits()[1]
        chunks = 0
        while not protocol.paused and chunks < 1024:
            corked.write(b"x" * 65536)
            chunks += 1
        buffered = transport.get_write_buffer_size()
        corked.abort()
        theirs.close()
        return chunks, buffered, mark

    chunks, buffered, mark = asyncio.run(scenario())
    assert chunks < 1024  # paused long before 64 MiB
    assert buffered <= 2 * mark  # what the server holds for the slow client stays bounded
