"""The SQLite writer under failure (adapters/sqlite/writer.py; written against the surviving
mutants of that module, docs/mutation.md): a transaction's bound, functions between groups, a
database that cannot be opened or is locked, SQLite ending a group's transaction itself, a key
broken at COMMIT. Real SQLite files through apsw, a writer over its own connection (a short busy
timeout); a held writer makes the plans submitted meanwhile one group. Plans reach the writer as
the driver hands them (``GroupWriter.run`` on an event loop: ``tests/support/writer.py``)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support.writer import Submitter
from waypost.adapters.sqlite.writer import GroupStats, GroupWriter
from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.storage.plan import CommitPlan, Statement

SCHEMA = """
CREATE TABLE notes (n INTEGER NOT NULL);
CREATE TABLE doomed (n INTEGER);
CREATE TRIGGER doom BEFORE INSERT ON doomed BEGIN SELECT RAISE(ROLLBACK, 'whole transaction'); END;
CREATE TABLE parent (id INTEGER PRIMARY KEY);
CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
"""


def _connect(path: Path) -> Callable[[], apsw.Connection]:
    def connect() -> apsw.Connection:
        connection = apsw.Connection(str(path))
        connection.set_busy_timeout(50)
        connection.pragma("journal_mode", "wal")
        connection.pragma("foreign_keys", True)
        return connection
    return connect


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "db.sqlite3"


@pytest.fixture
def writer(path: Path) -> Iterator[GroupWriter]:
    opened = GroupWriter(_connect(path))
    opened.call(lambda connection: connection.execute(SCHEMA)).result()
    yield opened
    opened.close()


def _plan(sql: str, n: int) -> CommitPlan:
    return CommitPlan("test", f"p{n}", (Statement(sql, (n,)),),
                      Statement("SELECT count(*) FROM notes WHERE n = ?1", (n,)))


def _note(n: int) -> CommitPlan:
    return _plan("INSERT INTO notes (n) VALUES (?1)", n)


def _notes(connection: apsw.Connection) -> list[int]:
    return [int(row[0]) for row in connection.execute("SELECT n FROM notes ORDER BY n")]


def _fails(future: Any) -> BaseException:
    error: BaseException | None = future.exception(timeout=60)
    assert error is not None
    return error


@pytest.mark.parametrize(("error", "answered"), [
    (apsw.CantOpenError("no such disk"), StorageUnavailable), (ValueError("bad path"), ValueError)])
def test_a_writer_that_cannot_open_its_database_answers_every_caller(
        error: Exception, answered: type[BaseException], submit: Submitter) -> None:
    def connect() -> apsw.Connection:
        raise error

    failed = GroupWriter(connect)
    try:
        assert isinstance(_fails(submit(failed.run, _note(1))), answered)
        assert isinstance(_fails(failed.call(_notes)), answered)
    finally:
        failed.close()


def test_one_transaction_holds_at_most_256_plans(writer: GroupWriter, submit: Submitter) -> None:
    with writer.held():
        futures = [submit(writer.run, _note(n)) for n in range(300)]
    assert [future.result() for future in futures] == [[(1,)]] * 300
    assert writer.stats == GroupStats(groups=2, plans=300, largest=256, last=44)


def test_a_process_that_never_closes_its_writer_still_exits(path: Path) -> None:
    script = ("import apsw\nfrom waypost.adapters.sqlite.writer import GroupWriter\n"
              f"GroupWriter(lambda: apsw.Connection({str(path)!r})).call(lambda c: 1).result()\n")
    assert subprocess.run([sys.executable, "-c", script], timeout=60).returncode == 0


def test_a_writer_that_ran_nothing_counts_nothing(writer: GroupWriter) -> None:
    assert writer.stats == GroupStats(0, 0, 0, 0)


def test_close_runs_the_plans_queued_before_it_then_stops(writer: GroupWriter, path: Path,
                                                          submit: Submitter) -> None:
    closer = threading.Thread(target=writer.close, daemon=True)
    with writer.held():  # the writer waits at its gate; close() queues its stop behind these
        futures = [submit(writer.run, _note(1))]
        closer.start()
        while True:  # until close() has queued its stop: from then on plans are refused
            try:
                futures.append(submit(writer.run, _note(len(futures) + 1)))
            except StorageUnavailable:
                break
    closer.join(timeout=60)
    assert not closer.is_alive()
    # Every plan queued before the stop was committed before close() returned; its answer,
    # handed to the caller's event loop by then, arrives there.
    committed = apsw.Connection(str(path))
    try:
        assert _notes(committed) == list(range(1, len(futures) + 1))
    finally:
        committed.close()
    assert [future.result(timeout=60) for future in futures] == [[(1,)]] * len(futures)


def test_a_function_runs_alone_between_the_groups_in_queue_order(writer: GroupWriter,
                                                                 submit: Submitter) -> None:
    with writer.held():
        before = submit(writer.run, _note(1))
        seen = writer.call(_notes)
        after = submit(writer.run, _note(2))
    assert seen.result() == [1]
    assert (before.result(), after.result()) == ([(1,)], [(1,)])
    assert (writer.stats.groups, writer.stats.largest) == (2, 1)


def test_a_function_that_fails_is_answered_with_its_error(writer: GroupWriter,
                                                          submit: Submitter) -> None:
    def busy(connection: apsw.Connection) -> None:
        raise apsw.BusyError("locked")

    def broken(connection: apsw.Connection) -> None:
        raise KeyError("broken")

    assert isinstance(_fails(writer.call(busy)), StorageUnavailable)
    assert isinstance(_fails(writer.call(broken)), KeyError)
    assert submit(writer.run, _note(1)).result() == [(1,)]


def test_a_plan_that_ends_the_groups_transaction_fails_alone(
        writer: GroupWriter, submit: Submitter) -> None:
    """RAISE(ROLLBACK) rolls the whole transaction back, the plans before it too: none of them
    is reported committed from it. The group runs again, each plan alone, so only the plan that
    raised fails (an error of the disk, which ends a transaction too, is everyone's)."""
    with writer.held():
        futures = [submit(writer.run, _note(1)),
                   submit(writer.run, _plan("INSERT INTO doomed VALUES (?1)", 2)),
                   submit(writer.run, _note(3))]
    error = _fails(futures[1])
    assert isinstance(error, apsw.ConstraintError)
    assert "whole transaction" in str(error)
    assert [futures[0].result(), futures[2].result()] == [[(1,)], [(1,)]]
    assert writer.call(_notes).result() == [1, 3]
    assert writer.stats.retried == 1
    assert submit(writer.run, _note(4)).result() == [(1,)]


def test_a_plan_alone_that_ends_the_transaction_fails_with_its_own_error(
        writer: GroupWriter, submit: Submitter) -> None:
    error = _fails(submit(writer.run, _plan("INSERT INTO doomed VALUES (?1)", 1)))
    assert isinstance(error, apsw.ConstraintError)
    assert "whole transaction" in str(error)
    assert submit(writer.run, _note(2)).result() == [(1,)]
    assert writer.call(_notes).result() == [2]


def test_a_database_locked_elsewhere_is_unavailable_and_the_writer_goes_on(
        writer: GroupWriter, path: Path, submit: Submitter) -> None:
    other = apsw.Connection(str(path))
    try:
        other.execute("BEGIN IMMEDIATE")
        assert isinstance(_fails(submit(writer.run, _note(1))), StorageUnavailable)
        other.execute("ROLLBACK")
    finally:
        other.close()
    assert submit(writer.run, _note(2)).result() == [(1,)]
    assert writer.call(_notes).result() == [2]


@pytest.mark.parametrize("after", [(), (2,)], ids=["pair", "three"])
def test_a_key_broken_at_commit_fails_only_its_plan(writer: GroupWriter, after: tuple[int, ...],
                                                    submit: Submitter) -> None:
    orphan = _plan("INSERT INTO child (parent_id) VALUES (?1)", 7)
    assert isinstance(_fails(submit(writer.run, orphan)), apsw.ConstraintError)  # alone
    with writer.held():
        futures = [submit(writer.run, _note(1)), submit(writer.run, orphan),
                   *(submit(writer.run, _note(n)) for n in after)]
    assert isinstance(_fails(futures.pop(1)), apsw.ConstraintError)
    assert [future.result() for future in futures] == [[(1,)]] * (1 + len(after))
    assert writer.call(_notes).result() == [1, *after]
    assert writer.call(lambda c: list(c.execute("SELECT count(*) FROM child"))).result() == [(0,)]
