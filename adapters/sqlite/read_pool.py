"""The SQLite driver's read threads: each runs read functions taken from one queue, on its own
connection, and settles its caller's future on the caller's event loop (:mod:`.waiters`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from waypost.adapters.sqlite.jobs import JobQueue
from waypost.adapters.sqlite.waiters import LoopWaiter, Waiter, settle

T = TypeVar("T")


class ReadPool:
    """``size`` threads named ``{name}_{n}``; :meth:`close` lets them finish what is queued,
    and a read asked after it is refused (``StorageUnavailable``), never left waiting."""

    def __init__(self, size: int, name: str) -> None:
        self._queue: JobQueue[tuple[Callable[[], Any], Waiter]] = JobQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}_{n}", daemon=True)
                         for n in range(size)]
        for thread in self._threads:
            thread.start()

    async def run(self, function: Callable[[], T]) -> T:
        """``function()`` on a read thread, awaited on this event loop."""
        waiter = LoopWaiter.here()
        self._queue.put((function, waiter))
        result: T = await waiter.future
        return result

    def call(self, function: Callable[[], T]) -> T:
        """``function()`` on a read thread, waited for (callers without an event loop)."""
        future: Future[T] = Future()
        self._queue.put((function, future))
        return future.result()

    def close(self) -> None:
        self._queue.close(workers=len(self._threads))
        for thread in self._threads:
            thread.join()

    def _work(self) -> None:
        while (job := self._queue.get()) is not None:
            function, waiter = job
            try:
                result = function()
            except BaseException as exc:  # the caller gets it; the thread goes on
                settle([(waiter, None, exc)])
            else:
                settle([(waiter, result, None)])
