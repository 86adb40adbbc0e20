"""The one writer thread of a SQLite database, with group commit.

Callers put commit plans on a queue. The thread takes every plan waiting and runs them in one
``BEGIN IMMEDIATE … COMMIT``. A plan refuses by its verdict, not by an error, so a plan that
raises is a defect: the transaction is then rolled back and each plan of the group runs again
alone, so its neighbours go on (an error of the disk is every caller's answer at once). No plan
pays for a SAVEPOINT in case it might fail (its journal copied every page the plan touched).
Every caller is answered only after the shared COMMIT returned (with ``synchronous=FULL``,
after its fsync). One fsync thus serves a whole group, however many senders wait, and one
wake-up of the event loop answers them all (:mod:`.waiters`).

Plain functions over the connection (migrations, maintenance) run alone, between groups.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import apsw

from waypost.adapters.sqlite.jobs import JobQueue
from waypost.adapters.sqlite.waiters import Answer, LoopWaiter, Waiter, settle
from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.storage.plan import CommitPlan, Row

#: Errors that mean "try again later" (the disk, a lock), answered as 503, never as a defect.
TEMPORARY = (apsw.BusyError, apsw.LockedError, apsw.IOError, apsw.CantOpenError, apsw.FullError)
#: The most plans one transaction holds (a bound on what one failure of the COMMIT costs).
MAX_GROUP = 256


def mapped(exc: BaseException) -> BaseException:
    """A temporary SQLite error as :class:`StorageUnavailable`; anything else as it is."""
    return StorageUnavailable(str(exc)) if isinstance(exc, TEMPORARY) else exc


@dataclass(frozen=True)
class _Job:
    """A plan to run in a group, or a function to run alone; who waits for its answer."""

    waiter: Waiter
    plan: CommitPlan | None = None
    function: Callable[[apsw.Connection], Any] | None = None


@dataclass
class GroupStats:
    """How the writer has grouped plans so far (tests and benchmarks read it)."""

    groups: int = 0
    plans: int = 0
    largest: int = 0
    last: int = 0
    #: groups whose plans ran again one by one after one of them raised or the COMMIT failed
    retried: int = 0


class GroupWriter:
    """The writer thread: ``connect`` opens its connection inside the thread; ``on_durable``
    (if given) runs after each group's COMMIT and before any of its callers is answered."""

    def __init__(self, connect: Callable[[], apsw.Connection],
                 on_durable: Callable[[], None] | None = None) -> None:
        self._connect = connect
        self._on_durable = on_durable
        self._queue: JobQueue[_Job] = JobQueue()
        self._gate = threading.Lock()
        self.stats = GroupStats()
        self._thread = threading.Thread(target=self._loop, name="waypost-sqlite-writer",
                                        daemon=True)
        self._thread.start()

    async def run(self, plan: CommitPlan) -> list[Row]:
        """Queue a plan and await its outcome rows (settled on this event loop)."""
        waiter = LoopWaiter.here()
        self._queue.put(_Job(waiter, plan=plan))
        rows: list[Row] = await waiter.future
        return rows

    def call(self, function: Callable[[apsw.Connection], Any]) -> Future[Any]:
        """Run ``function(connection)`` on the writer thread, alone (no transaction is open)."""
        future: Future[Any] = Future()
        self._queue.put(_Job(future, function=function))
        return future

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the writer between groups: plans submitted meanwhile run as one group after."""
        with self._gate:
            yield

    def close(self) -> None:
        """Finish what is queued, then stop the thread and close its connection; a plan
        submitted after is refused (``StorageUnavailable``), never left waiting."""
        self._queue.close(workers=1)
        self._thread.join()

    def _loop(self) -> None:
        try:
            connection = self._connect()
        except BaseException as exc:  # every caller learns why, none waits forever
            self._fail_all(exc)
            return
        try:
            running = True
            while running:
                first = self._queue.get()
                if first is None:
                    break
                with self._gate:
                    jobs, running = self._drain(first)
                    self._run(connection, jobs)
        finally:
            connection.close()

    def _drain(self, first: _Job) -> tuple[list[_Job], bool]:
        """``first`` and everything waiting behind it (up to :data:`MAX_GROUP`)."""
        jobs = [first]
        while len(jobs) < MAX_GROUP:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                return jobs, False
            jobs.append(job)
        return jobs, True

    def _run(self, connection: apsw.Connection, jobs: list[_Job]) -> None:
        """Consecutive plans as groups; functions alone, in queue order."""
        group: list[_Job] = []
        for job in jobs:
            if job.plan is not None:
                group.append(job)
                continue
            if group:
                self._group(connection, self._counted(group))
                group = []
            self._function(connection, job)
        if group:
            self._group(connection, self._counted(group))

    def _function(self, connection: apsw.Connection, job: _Job) -> None:
        assert job.function is not None
        try:
            result = job.function(connection)
        except BaseException as exc:
            settle([(job.waiter, None, mapped(exc))])
        else:
            settle([(job.waiter, result, None)])

    def _group(self, connection: apsw.Connection, jobs: list[_Job]) -> None:
        """One transaction for every plan of the group; answers after the durable COMMIT. A
        plan that raises (a defect: a refusal is a verdict, not an error) ends the transaction,
        and the plans of the group run again, each alone: only the culprit fails."""
        stuck = _rolled_back(connection)  # one a failed ROLLBACK left open: this one may work
        if stuck is not None:
            _answer_all(jobs, mapped(stuck))
            return
        try:
            connection.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            _answer_all(jobs, mapped(exc))
            return
        answers: list[Answer] = []
        for job in jobs:
            assert job.plan is not None
            try:
                rows = run_statements(connection, job.plan)
            except BaseException as exc:
                undone = _rolled_back(connection)
                if undone is not None or len(jobs) == 1 or isinstance(exc, TEMPORARY):
                    _answer_all(jobs, mapped(undone or exc))  # alone, or the disk: all alike
                else:
                    self._each_alone(connection, jobs)
                return
            answers.append((job.waiter, rows, None))
        try:
            connection.execute("COMMIT")
        except BaseException as exc:
            undone = _rolled_back(connection)
            if undone is None and isinstance(exc, apsw.ConstraintError) and len(jobs) > 1:
                # A deferred foreign key is checked at COMMIT: nothing was written, so run
                # each plan alone and let only the culprit fail.
                self._each_alone(connection, jobs)
                return
            _answer_all(jobs, mapped(undone or exc))
            return
        try:
            if self._on_durable is not None:
                self._on_durable()  # a fault point: a crash here leaves only durable plans
        except BaseException as exc:
            _answer_all(jobs, mapped(exc))
            return
        settle(answers)

    def _each_alone(self, connection: apsw.Connection, jobs: list[_Job]) -> None:
        """Nothing of the group was written: each plan runs again in a transaction of its own,
        in the group's order (a fsync each: counted in :attr:`GroupStats.retried`)."""
        self.stats.retried += 1
        for job in jobs:
            self._group(connection, [job])

    def _counted(self, group: list[_Job]) -> list[_Job]:
        stats, size = self.stats, len(group)
        stats.groups, stats.plans, stats.last = stats.groups + 1, stats.plans + size, size
        stats.largest = max(stats.largest, size)
        return group

    def _fail_all(self, exc: BaseException) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            settle([(job.waiter, None, mapped(exc))])


def run_statements(connection: apsw.Connection, plan: CommitPlan) -> list[Row]:
    """Run a plan's statements in order, inside the caller's transaction; the rows of its
    outcome read."""
    cursor = connection.cursor()  # one for all: a cursor made per statement cost as much again
    results = [list(cursor.execute(statement.sql, statement.params))
               for statement in plan.statements]
    return results[plan.outcome_index]


def _rolled_back(connection: apsw.Connection) -> BaseException | None:
    """End the open transaction, if SQLite has not ended it; the error of a ROLLBACK that failed
    (every caller of the group then gets it: the writer thread goes on)."""
    try:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
    except BaseException as exc:
        return exc
    return None


def _answer_all(jobs: list[_Job], exc: BaseException) -> None:
    settle([(job.waiter, None, exc) for job in jobs])
