"""A TCP proxy that puts a target at a distance: every chunk of bytes, in each direction, is
delivered ``delay`` seconds (plus a random jitter) after it arrived, in order, as a far network
would. It runs its own event loop on a thread, so a synchronous client (the kit) can use it.

Used by ``waypost bench kit --rtt`` and by the tests that run the kit at a distance."""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

CHUNK = 64 * 1024


class LatencyProxy:
    """Listens on loopback and forwards to ``upstream`` (``host:port``) with a one-way delay
    of ``delay`` seconds plus a uniform jitter in ``[0, jitter]``; a chunk never overtakes the
    one before it on the same connection."""

    def __init__(self, upstream: str, delay: float, jitter: float = 0.0, seed: int = 0) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.delay, self.jitter = delay, jitter
        self.random = random.Random(seed)
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="latency-proxy",
                                       daemon=True)
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()

    def start(self) -> str:
        """Start listening; the proxy's address as ``host:port``."""
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._connection, "127.0.0.1", 0), self.loop).result(10)
        self.port = self.server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop listening and close every connection."""
        async def close() -> None:
            if self.server is not None:
                self.server.close()
            for task in self.connections:
                task.cancel()
            await asyncio.gather(*self.connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def _due(self, previous: float) -> float:
        """When a chunk arriving now is delivered: after the delay and its jitter, never before
        the chunk ahead of it."""
        late = self.delay + (self.random.uniform(0, self.jitter) if self.jitter else 0.0)
        return max(previous, self.loop.time() + late)

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        try:
            far_reader, far_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            self.connections.discard(task)
            return
        try:
            await asyncio.gather(self._pump(reader, far_writer), self._pump(far_reader, writer))
        except asyncio.CancelledError:
            pass  # the proxy stops
        finally:
            for w in (writer, far_writer):
                w.close()
            self.connections.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Carry one direction: chunks are queued with their due time, a second task writes each
        when it is due (reading goes on meanwhile, as bytes in flight do)."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, chunk = await queue.get()
                wait = due - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not chunk:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()

        delivering = asyncio.ensure_future(deliver())
        due = 0.0
        try:
            while True:
                chunk = await reader.read(CHUNK)
                due = self._due(due)
                queue.put_nowait((due, chunk))
                if not chunk:
                    break
            await delivering
        except (ConnectionError, OSError):
            pass
        finally:
            delivering.cancel()


@contextmanager
def at_distance(url: str, rtt_ms: float, jitter_ms: float = 0.0,
                seed: int = 0) -> Iterator[str]:
    """``url`` as seen from ``rtt_ms`` away (half each way, plus up to ``jitter_ms`` more each
    way): the proxy's URL for the block. With ``rtt_ms`` 0 and no jitter, ``url`` itself."""
    if rtt_ms <= 0 and jitter_ms <= 0:
        yield url
        return
    parts = urlsplit(url)
    proxy = LatencyProxy(parts.netloc, rtt_ms / 2000, jitter_ms / 1000, seed)
    address = proxy.start()
    try:
        yield f"{parts.scheme}://{address}{parts.path}".rstrip("/")
    finally:
        proxy.stop()
