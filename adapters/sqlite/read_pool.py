"""The SQLite driver's read threads: each runs read functions taken from one queue, on its own
connection, and settles its caller's future on the caller's event loop (:mod:`.waiters`)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from waypost.adapters.sqlite.waiters import LoopWaiter, Waiter, settle
from waypost.reference.domain.errors import StorageUnavailable

T = TypeVar("T")


class ReadPool:
    """``size`` threads named ``{name}_{n}``; :meth:`close` lets them finish what is queued,
    and a read asked after it is refused (``StorageUnavailable``), never left waiting."""

    def __init__(self, size: int, name: str) -> None:
        self._queue: queue.SimpleQueue[tuple[Callable[[], Any], Waiter] | None] = (
            queue.SimpleQueue())
        self._closed = False
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{n}", daemon=True)
                         for n in range(size)]
        for thread in self._threads:
            thread.start()

    async def run(self, function: Callable[[], T]) -> T:
        """``function()`` on a read thread, awaited on this event loop."""
        waiter = LoopWaiter.here()
        self._put(function, waiter)
        result: T = await waiter.future
        return result

    def call(self, function: Callable[[], T]) -> T:
        """``function()`` on a read thread, waited for (callers without an event loop)."""
        future: Future[T] = Future()
        self._put(function, future)
        return future.result()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for _ in self._threads:
                self._queue.put(None)
        for thread in self._threads:
            thread.join()

    def _put(self, function: Callable[[], Any], waiter: Waiter) -> None:
        with self._lock:  # a read is either queued before the stops, or refused
            if self._closed:
                raise StorageUnavailable("the storage is closed (restarting); retry")
            self._queue.put((function, waiter))

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            function, waiter = job
            try:
                result = function()
            except BaseException as exc:  # the caller gets it; the thread goes on
                settle([(waiter, None, exc)])
            else:
                settle([(waiter, result, None)])
