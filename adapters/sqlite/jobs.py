"""The queue between the SQLite driver's callers and its threads (the writer, the read pool):
once closed it refuses new jobs, so no caller waits on a thread that has stopped."""

from __future__ import annotations

import queue
import threading
from typing import Generic, TypeVar

from waypost.reference.domain.errors import StorageUnavailable

J = TypeVar("J")


class JobQueue(Generic[J]):
    """Jobs for worker threads; ``None`` tells a worker to stop."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[J | None] = queue.SimpleQueue()
        self._closed = False
        self._lock = threading.Lock()

    def put(self, job: J) -> None:
        """Queue ``job``; after :meth:`close` it is refused (``StorageUnavailable``)."""
        with self._lock:  # a job is either queued before the stops, or refused
            if self._closed:
                raise StorageUnavailable("the storage is closed (restarting); retry")
            self._queue.put(job)

    def close(self, workers: int) -> None:
        """Refuse new jobs; queue one stop per worker, behind what is already queued."""
        with self._lock:
            self._closed = True
            for _ in range(workers):
                self._queue.put(None)

    def get(self) -> J | None:
        return self._queue.get()

    def get_nowait(self) -> J | None:
        """The next job, or ``queue.Empty`` at once."""
        return self._queue.get_nowait()
