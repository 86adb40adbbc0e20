"""Commit plans (reference/storage/plan.py; written against the surviving mutants of that module,
docs/mutation.md): a guard's verdict decides every write, the outcome is read from the rows
written, the verdict row is gone afterwards; ``:name`` parameters bind once each. Plans run on
a real SQLite file through the SQLite driver."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.storage.plan import (
    GUARD_OK,
    CommitPlan,
    Statement,
    Verdict,
    guard,
    guarded,
    json_list,
    new_plan_id,
    plan,
    stmt,
    verdict_from,
    verdict_read,
    with_plan,
)
from waypost.reference.storage.rules import Rule


@pytest.fixture
def driver(tmp_path: Path) -> Iterator[SqliteDriver]:
    opened = SqliteDriver(tmp_path / "db.sqlite3")
    asyncio.run(opened.migrate())
    opened.call_writer(lambda c: c.execute("CREATE TABLE notes (id TEXT PRIMARY KEY, n INTEGER)"))
    yield opened
    opened.close()


def _note(note_id: str, n: int, *, refuse_existing: bool = True) -> CommitPlan:
    """Insert a note unless (when ``refuse_existing``) it exists; the outcome is the verdict and
    the note's ``n`` as stored."""
    plan_id = new_plan_id()
    params = {"id": note_id, "n": n}
    rules = [Rule("EXISTS", "EXISTS (SELECT 1 FROM notes WHERE id = :id)", None, "", "",
                  "the note stays")] if refuse_existing else []
    writes = [guard(plan_id, rules, params), guarded(
        plan_id, f"INSERT OR REPLACE INTO notes (id, n) SELECT :id, :n WHERE {GUARD_OK}", params)]
    outcome = verdict_read(plan_id, Verdict, "LEFT JOIN notes n ON n.id = :id", params,
                           state="CAST(n.n AS TEXT)")
    return plan("note", plan_id, writes, outcome)


def _run(driver: SqliteDriver, commit: CommitPlan) -> Verdict:
    return verdict_from(asyncio.run(driver.run(commit)))


def _rows(driver: SqliteDriver, sql: str) -> list[tuple[object, ...]]:
    (rows,) = asyncio.run(driver.read([Statement(sql)]))
    return rows


def test_the_guard_decides_every_write_and_the_outcome_reads_what_was_written(
        driver: SqliteDriver) -> None:
    assert _run(driver, _note("a", 1)) == Verdict("ok", "1")
    assert _run(driver, _note("a", 2)) == Verdict("EXISTS", "1")  # refused: nothing written
    assert _run(driver, _note("a", 3, refuse_existing=False)) == Verdict("ok", "3")
    assert _rows(driver, "SELECT id, n FROM notes") == [("a", 3)]
    # verdict rows live in the writer's own TEMP table: only the writer sees them
    assert driver.call_writer(lambda c: c.execute(
        "SELECT count(*) FROM commit_guards").fetchall()) == [(0,)]


def test_a_verdict_is_an_immutable_value(driver: SqliteDriver) -> None:
    verdict = _run(driver, _note("a", 1))
    assert {verdict, Verdict("ok", "1")} == {verdict}
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.verdict = "EXISTS"


def test_a_plan_runs_its_writes_then_its_outcome_then_its_cleanup() -> None:
    commit = _note("a", 1)
    assert commit.statements == (*commit.writes, commit.outcome, *commit.cleanup)
    assert commit.statements[commit.outcome_index] == commit.outcome
    assert commit.cleanup == (Statement("DELETE FROM commit_guards WHERE plan_id = ?1",
                                        (commit.plan_id,)),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        commit.name = "other"


def test_named_parameters_are_numbered_and_bound_once_each() -> None:
    found = stmt("SELECT :b, :a, :b, CAST(:a AS TEXT), 'x::y'", {"a": 1, "b": 2, "unused": 3})
    assert found == Statement("SELECT ?1, ?2, ?1, CAST(?2 AS TEXT), 'x::y'", (2, 1))
    assert stmt("SELECT 1") == Statement("SELECT 1", ())
    with pytest.raises(KeyError, match="parameter :c not given"):
        stmt("SELECT :a, :c", {"a": 1})
    with pytest.raises(KeyError, match="parameter :a not given"):
        stmt("SELECT :a")


def test_numbered_parameters_bind_in_sqlite() -> None:
    connection = apsw.Connection(":memory:")
    found = stmt("SELECT :x + :y, :y", {"x": 40, "y": 2})
    assert list(connection.execute(found.sql, found.params)) == [(42, 2)]
    expanded = stmt("SELECT group_concat(value, ',') FROM json_each(:ids)",
                    {"ids": json_list(("a", "b", "c"))})
    assert list(connection.execute(expanded.sql, expanded.params)) == [("a,b,c",)]


def test_a_write_without_the_guard_condition_is_refused() -> None:
    with pytest.raises(ValueError, match="GUARD_OK"):
        guarded("p1", "INSERT INTO notes (id) VALUES (:id)", {"id": "a"})


def test_the_plan_id_is_bound_without_copying_a_mapping_that_has_it() -> None:
    shared = {"plan": "p1", "id": "a"}
    assert with_plan(shared, "p1") is shared
    other = with_plan(shared, "p2")
    assert other == {"plan": "p2", "id": "a"}
    assert shared["plan"] == "p1"
    assert with_plan({"id": "a"}, "p3") == {"id": "a", "plan": "p3"}


def test_plan_ids_are_fresh_hex_digits() -> None:
    ids = {new_plan_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(int(found, 16) >= 0 for found in ids)
