"""The SQLite driver: WAL, foreign keys on, ``synchronous=FULL``; nothing of it on the event loop.

Writes go to one writer thread with group commit (:mod:`.writer`): the plans waiting together
share one ``BEGIN IMMEDIATE … COMMIT`` (a plan that raises: each then runs again alone).
Reads run on a small pool of threads (:mod:`.read_pool`), each with its own read-only
connection, every read one snapshot (``BEGIN … COMMIT`` around several statements; one
statement is a snapshot by itself). The event loop only awaits futures, which the threads settle on it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import apsw

from waypost.adapters.sqlite.read_pool import ReadPool
from waypost.adapters.sqlite.writer import GroupStats, GroupWriter, mapped
from waypost.reference.storage.migrations import LEDGER, RECORD, all_migrations
from waypost.reference.storage.plan import CommitPlan, Row, Statement

T = TypeVar("T")
#: The writer's own ``commit_guards`` (see :func:`_open`).
GUARDS_IN_MEMORY = ("CREATE TEMP TABLE IF NOT EXISTS commit_guards "
                    "(plan_id TEXT PRIMARY KEY, verdict TEXT NOT NULL) WITHOUT ROWID")
#: Read threads: enough to overlap a few reads with the writer on a small machine.
READERS = 4


def open_connection(path: Path, *, synchronous: str | None = None,
                    vfs: str | None = None) -> apsw.Connection:
    """A connection as the driver's threads open it: the writer's with ``synchronous`` (WAL,
    foreign keys, statement journals and verdict rows in memory), a reader's without
    (``query_only``)."""
    connection = apsw.Connection(str(path), vfs=vfs) if vfs else apsw.Connection(str(path))
    connection.set_busy_timeout(5000)
    # apsw's SQLite is built with SQLITE_ENABLE_STAT4: a statement whose plan looked at a
    # bound parameter is compiled again after every new binding, so cached statements were
    # re-planned at each use (a send's guard took ~6 x as long). The query planner stability
    # guarantee keeps each statement's first plan (there are no ANALYZE statistics anyway).
    connection.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
    if synchronous is None:
        connection.pragma("query_only", True)
    else:
        connection.pragma("journal_mode", "wal")
        connection.pragma("foreign_keys", True)
        # Plans guard the feed counter themselves (RESOURCE_LIMIT), so FULL here means the disk.
        connection.pragma("synchronous", synchronous)
        # A statement that may write several rows keeps a statement journal of the prior
        # content of every page it changes, to undo itself alone: on disk, a temp file
        # (~130 KiB per send when each plan also had a savepoint). In memory it is a copy.
        connection.pragma("temp_store", "memory")
        # A plan's verdict row lives from its guard to its cleanup, inside one transaction:
        # never durable. A temp table of the same name comes first in name resolution, so the
        # plans' SQL (shared with D1) puts it in memory here instead of in the WAL.
        connection.execute(GUARDS_IN_MEMORY)
    return connection


class SqliteDriver:
    """Runs plans (grouped, on the writer thread) and reads (on the read pool) on a SQLite file.
    ``on_durable`` runs on the writer thread after each group's COMMIT, before any answer."""

    name = "sqlite"

    def __init__(self, path: Path, *, synchronous: str = "FULL",
                 on_durable: Callable[[], None] | None = None, readers: int = READERS,
                 vfs: str | None = None) -> None:
        self.path = path
        self.vfs = vfs  # a test deployment's power-cut simulator (commands/power_cut.py)
        self.writer = GroupWriter(
            lambda: open_connection(path, synchronous=synchronous, vfs=vfs), on_durable)
        self._readers = ReadPool(readers, "waypost-sqlite-read")
        self._local = threading.local()
        self._opened: list[apsw.Connection] = []
        self._opened_lock = threading.Lock()

    @property
    def stats(self) -> GroupStats:
        """How plans were grouped into transactions so far."""
        return self.writer.stats

    async def run(self, plan: CommitPlan) -> list[Row]:
        return await self.writer.run(plan)

    async def read(self, statements: Sequence[Statement]) -> list[list[Row]]:
        return await self._readers.run(lambda: self._read(statements))

    async def migrate(self) -> list[int]:
        applied: list[int] = await asyncio.wrap_future(self.writer.call(_migrate))
        return applied

    def call_writer(self, function: Callable[[apsw.Connection], T]) -> T:
        """Run ``function(connection)`` on the writer thread and wait (maintenance, tests)."""
        result: T = self.writer.call(function).result()
        return result

    @contextmanager
    def held(self) -> Iterator[None]:
        """Plans submitted while held run as one group afterwards (tests of grouping)."""
        with self.writer.held():
            yield

    def explain(self, statement: Statement) -> list[str]:
        """The ``EXPLAIN QUERY PLAN`` detail lines of a statement (for index tests)."""
        explain = Statement("EXPLAIN QUERY PLAN " + statement.sql, statement.params)
        (rows,) = self._readers.call(lambda: self._read([explain]))
        return [str(row[3]) for row in rows]

    def _connection(self) -> apsw.Connection:
        connection: apsw.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = open_connection(self.path, vfs=self.vfs)
            with self._opened_lock:
                self._opened.append(connection)
        return connection

    def _read(self, statements: Sequence[Statement]) -> list[list[Row]]:
        connection = self._connection()
        try:
            if len(statements) == 1:  # one statement is one snapshot without BEGIN … COMMIT
                return [list(connection.execute(statements[0].sql, statements[0].params))]
            connection.execute("BEGIN")
            try:
                return [list(connection.execute(s.sql, s.params)) for s in statements]
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")
        except BaseException as exc:
            raise mapped(exc) from None

    def close(self) -> None:
        """Finish queued writes, stop the writer and the read pool, close every connection."""
        self.writer.close()
        self._readers.close()
        with self._opened_lock:
            for connection in self._opened:
                connection.close()
            self._opened.clear()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def _migrate(connection: apsw.Connection) -> list[int]:
    """Apply pending migrations, each with its record in one transaction."""
    connection.execute(LEDGER)
    done = {row[0] for row in connection.execute("SELECT version FROM schema_migrations")}
    applied = []
    for migration in all_migrations():
        if migration.version in done:
            continue
        with connection:  # one savepoint-transaction per migration, with its record
            connection.execute(migration.sql)
            connection.execute(RECORD, (migration.version, migration.name))
        applied.append(migration.version)
    return applied

