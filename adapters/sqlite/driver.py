"""The SQLite driver: one apsw connection, WAL, foreign keys on, ``synchronous=FULL``.

A commit plan runs inside ``BEGIN IMMEDIATE … COMMIT``; any error rolls the whole plan back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import apsw

from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.storage.migrations import LEDGER, RECORD, all_migrations
from waypost.reference.storage.plan import CommitPlan, Row, Statement

# Plans guard the feed counter themselves (RESOURCE_LIMIT), so FULL here means the disk.
_TEMPORARY = (apsw.BusyError, apsw.LockedError, apsw.IOError, apsw.CantOpenError, apsw.FullError)


class SqliteDriver:
    """Runs plans and reads on a local SQLite file."""

    name = "sqlite"

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self.path = path
        self.connection = apsw.Connection(str(path))
        self.connection.set_busy_timeout(5000)
        self.connection.pragma("journal_mode", "wal")
        self.connection.pragma("foreign_keys", True)
        self.connection.pragma("synchronous", synchronous)

    def _rows(self, statement: Statement) -> list[Row]:
        return list(self.connection.execute(statement.sql, statement.params))

    def _in_transaction(self, begin: str, statements: Sequence[Statement]) -> list[list[Row]]:
        try:
            self.connection.execute(begin)
            try:
                results = [self._rows(statement) for statement in statements]
                self.connection.execute("COMMIT")
            except BaseException:
                if not self.connection.in_transaction:
                    raise
                self.connection.execute("ROLLBACK")
                raise
        except _TEMPORARY as exc:
            raise StorageUnavailable(str(exc)) from None
        return results

    async def run(self, plan: CommitPlan) -> list[Row]:
        return self._in_transaction("BEGIN IMMEDIATE", plan.statements)[plan.outcome_index]

    async def read(self, statements: Sequence[Statement]) -> list[list[Row]]:
        return self._in_transaction("BEGIN", statements)

    async def migrate(self) -> list[int]:
        self.connection.execute(LEDGER)
        done = {row[0] for row in self.connection.execute("SELECT version FROM schema_migrations")}
        applied = []
        for migration in all_migrations():
            if migration.version in done:
                continue
            with self.connection:  # one savepoint-transaction per migration, with its record
                self.connection.execute(migration.sql)
                self.connection.execute(RECORD, (migration.version, migration.name))
            applied.append(migration.version)
        return applied

    def explain(self, statement: Statement) -> list[str]:
        """The ``EXPLAIN QUERY PLAN`` detail lines of a statement (for index tests)."""
        rows = self.connection.execute("EXPLAIN QUERY PLAN " + statement.sql, statement.params)
        return [str(row[3]) for row in rows]

    def close(self) -> None:
        self.connection.close()

    async def aclose(self) -> None:
        self.close()
