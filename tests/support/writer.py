"""Plans handed to the SQLite writer the way the server hands them (``SqliteDriver.run``, which
awaits ``GroupWriter.run`` on an event loop), from tests that run no loop of their own: a
:class:`Submitter` keeps one on its own thread. A test holds the writer (``held()``), submits
plans, and they run as one group once it lets go; each submission returns once its plan is
queued, with a future of its outcome rows."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any

from waypost.reference.storage.plan import CommitPlan, Row

#: ``GroupWriter.run`` or ``SqliteDriver.run``.
Run = Callable[[CommitPlan], Coroutine[Any, Any, list[Row]]]


class Submitter:
    """An event loop on its own thread, through which synchronous tests submit plans."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="test-submitter",
                                        daemon=True)
        self._thread.start()

    def __call__(self, run: Run, plan: CommitPlan) -> Future[list[Row]]:
        """Start ``run(plan)`` on the loop and return once the plan is queued; the future holds
        its outcome rows (or its error). A writer that refuses the plan (closed) raises here."""
        task = asyncio.run_coroutine_threadsafe(_queued(run, plan), self._loop).result()
        return asyncio.run_coroutine_threadsafe(_outcome(task), self._loop)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


async def _queued(run: Run, plan: CommitPlan) -> asyncio.Task[list[Row]]:
    task = asyncio.ensure_future(run(plan))
    # One turn of the loop: the task's first step queues the plan (or is refused), then waits.
    await asyncio.sleep(0)
    if task.done():
        task.result()  # refused: raise it to the caller
    return task


async def _outcome(task: asyncio.Task[list[Row]]) -> list[Row]:
    return await task
