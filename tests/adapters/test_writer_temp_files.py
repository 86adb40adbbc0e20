"""The SQLite writer opens no temp file: a statement that changes many rows keeps its statement
journal in memory, however many pages it changes (a temp file of ~130 KiB per send was written
before). SQLite's file opens are counted by a VFS that passes every call to the default
one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support.writer import Submitter
from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.storage.plan import GUARD_OK, guard, guarded, new_plan_id, plan, stmt

#: Files SQLite opens for itself rather than for a database: statement journals, temp tables.
TEMPORARY = (apsw.SQLITE_OPEN_SUBJOURNAL | apsw.SQLITE_OPEN_TEMP_JOURNAL
             | apsw.SQLITE_OPEN_TEMP_DB | apsw.SQLITE_OPEN_TRANSIENT_DB)
ROWS, ROW_BYTES = 100, 4000


class Counting(apsw.VFS):
    """The default VFS, counting the temporary files opened through it."""

    def __init__(self) -> None:
        self.temporary = 0
        self.base = apsw.vfs_names()[0]  # the default before this one
        super().__init__("counting", self.base, makedefault=True)

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        if flags[0] & TEMPORARY:
            self.temporary += 1
        return apsw.VFSFile(self.base, name, flags)


@pytest.fixture
def counting() -> Iterator[Counting]:
    vfs = Counting()
    yield vfs
    vfs.unregister()


def _fill(connection: apsw.Connection) -> None:
    connection.execute("CREATE TABLE IF NOT EXISTS pages (n INTEGER PRIMARY KEY, data BLOB)")
    with connection:
        for n in range(ROWS):
            connection.execute("INSERT OR REPLACE INTO pages VALUES (?, zeroblob(?))",
                               (n, ROW_BYTES))


def _rewrite_every_page(fill: int) -> Any:
    """A plan that changes every row (every page of the table: ~400 KiB of prior content for
    its statement journal to hold)."""
    plan_id = new_plan_id()
    params = {"fill": fill, "plan": plan_id}
    return plan("rewrite", plan_id, [
        guard(plan_id, [], params),
        guarded(plan_id, f"UPDATE pages SET data = randomblob(:fill) WHERE {GUARD_OK}", params)],
        stmt("SELECT count(*) FROM pages", params))


def test_a_group_of_large_plans_opens_no_temp_file(tmp_path: Path, counting: Counting,
                                                   submit: Submitter) -> None:
    driver = SqliteDriver(tmp_path / "db.sqlite3")
    try:
        asyncio.run(driver.migrate())
        driver.call_writer(_fill)
        before = counting.temporary
        with driver.held():  # four plans in one transaction
            futures = [submit(driver.run, _rewrite_every_page(ROW_BYTES)) for _ in range(4)]
        assert [future.result(timeout=60) for future in futures] == [[(ROWS,)]] * 4
        assert driver.stats.last == 4
        assert counting.temporary == before
    finally:
        driver.close()


def test_the_count_sees_a_statement_journal_that_spills_to_a_file(tmp_path: Path,
                                                                 counting: Counting) -> None:
    connection = apsw.Connection(str(tmp_path / "plain.sqlite3"))  # SQLite's defaults
    try:
        connection.pragma("journal_mode", "wal")
        _fill(connection)
        before = counting.temporary
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("SAVEPOINT plan")
        connection.execute("UPDATE pages SET data = randomblob(?)", (ROW_BYTES,))
        connection.execute("RELEASE plan")
        connection.execute("COMMIT")
        assert counting.temporary > before
    finally:
        connection.close()
