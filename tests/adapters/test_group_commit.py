"""Group commit in the SQLite driver: the plans waiting together share one transaction; a plan
that fails leaves nothing and its neighbours commit; a crash after the shared COMMIT leaves every
key resolvable (protocol §12). Real SQLite files through apsw; the writer is held so that the
plans submitted meanwhile form one group."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

import apsw
import pytest
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api
from tests.support.writer import Submitter
from waypost.adapters.sqlite.driver import SqliteDriver
from waypost.reference.domain.canonical import digest
from waypost.reference.domain.errors import StorageUnavailable
from waypost.reference.domain.faults import Abandoned
from waypost.reference.domain.requests import parse_send
from waypost.reference.server import Settings, build_app, served_context
from waypost.reference.service.auth import authenticate
from waypost.reference.service.context import Context
from waypost.reference.service.messages import new_send
from waypost.reference.storage import control
from waypost.reference.storage import messages as messages_sql
from waypost.reference.storage.plan import CommitPlan, Row, Statement


def _space_plan(space_id: str) -> CommitPlan:
    return control.create_space(("space.create", f"make-{space_id}", b"\0" * 32), 1, space_id,
                                space_id, f"https://example.test/{space_id}", "owner", "agent",
                                "owner")


def _spaces(driver: SqliteDriver) -> list[str]:
    (rows,) = asyncio.run(driver.read([Statement("SELECT space_id FROM spaces ORDER BY 1")]))
    return [str(row[0]) for row in rows]


@pytest.fixture
def driver(tmp_path: Path) -> SqliteDriver:
    opened = SqliteDriver(tmp_path / "db.sqlite3")
    asyncio.run(opened.migrate())
    return opened


def test_a_failing_plan_in_a_group_does_not_roll_back_its_neighbours(
        driver: SqliteDriver, submit: Submitter) -> None:
    fails_midway = _space_plan("b")  # its space row is written, then a statement fails
    fails_midway = replace(fails_midway, writes=(
        *fails_midway.writes, Statement("INSERT INTO spaces (space_id) VALUES (NULL)")))
    no_actor = _space_plan("d")  # a deferred foreign key: only the COMMIT finds it broken
    no_actor = replace(no_actor, writes=tuple(
        s for s in no_actor.writes if "INSERT INTO actors" not in s.sql))
    plans = [_space_plan("a"), fails_midway, _space_plan("c"), no_actor, _space_plan("e")]
    try:
        with driver.held():
            futures: list[Future[list[Row]]] = [submit(driver.run, p) for p in plans]
        outcomes = [future.exception() or future.result()[0][0] for future in futures]
        assert outcomes[0::2] == ["ok", "ok", "ok"]
        assert isinstance(outcomes[1], apsw.ConstraintError)
        assert isinstance(outcomes[3], apsw.ConstraintError)
        assert driver.stats.largest == len(plans)  # they were one group
        assert _spaces(driver) == ["a", "c", "e"]
    finally:
        driver.close()


def _count(driver: SqliteDriver, sql: str) -> int:
    (rows,) = asyncio.run(driver.read([Statement(sql)]))
    return int(rows[0][0])


@pytest.mark.parametrize("neighbours", [("a",), ("a", "c")], ids=["pair", "three"])
def test_a_plan_that_fails_midway_in_a_group_leaves_nothing_while_the_others_commit(
        driver: SqliteDriver, neighbours: tuple[str, ...], submit: Submitter) -> None:
    """Its space, actor and verdict rows were written before the failing statement: the group's
    transaction is rolled back and each plan runs again alone, so only it fails."""
    fails_midway = _space_plan("b")
    fails_midway = replace(fails_midway, writes=(
        *fails_midway.writes, Statement("INSERT INTO spaces (space_id) VALUES (NULL)")))
    plans = [_space_plan(neighbours[0]), fails_midway, *map(_space_plan, neighbours[1:])]
    try:
        with driver.held():
            futures = [submit(driver.run, p) for p in plans]
        assert isinstance(futures[1].exception(), apsw.ConstraintError)
        assert [f.result()[0][0] for f in futures if f is not futures[1]] == ["ok"] * len(neighbours)
        assert (driver.stats.groups, driver.stats.last) == (1, len(plans))  # one group
        assert driver.stats.retried == 1  # then each plan alone
        assert _spaces(driver) == sorted(neighbours)
        assert _count(driver, "SELECT count(*) FROM actors WHERE space_id = 'b'") == 0
        # verdict rows live in the writer's own TEMP table: only the writer sees them
        assert driver.call_writer(lambda c: c.execute(
            "SELECT count(*) FROM commit_guards").fetchall()) == [(0,)]
    finally:
        driver.close()


def _refuse_rollback(connection: apsw.Connection, refuse: bool) -> None:
    """apsw's exec tracer aborts a statement it answers False for: here, every ROLLBACK."""
    connection.exec_trace = (lambda _cursor, sql, _bindings: not sql.lstrip().upper()
                             .startswith("ROLLBACK")) if refuse else None


def test_a_rollback_that_fails_answers_the_group_and_the_writer_goes_on(
        driver: SqliteDriver, submit: Submitter) -> None:
    fails_midway = _space_plan("b")
    fails_midway = replace(fails_midway, writes=(
        *fails_midway.writes, Statement("INSERT INTO spaces (space_id) VALUES (NULL)")))
    try:
        driver.call_writer(lambda c: _refuse_rollback(c, True))
        with driver.held():
            futures = [submit(driver.run, p) for p in (_space_plan("a"), fails_midway)]
        for future in futures:  # answered, not left waiting: the ROLLBACK's own error
            assert isinstance(future.exception(timeout=30), apsw.ExecTraceAbort)
        driver.call_writer(lambda c: _refuse_rollback(c, False))
        assert submit(driver.run, _space_plan("c")).result(timeout=30)[0][0] == "ok"
        assert _spaces(driver) == ["c"]  # the group's transaction was ended, not committed
    finally:
        driver.close()


def test_a_plan_alone_that_fails_midway_leaves_nothing(driver: SqliteDriver,
                                                       submit: Submitter) -> None:
    fails_midway = _space_plan("b")  # its space row is written, then a statement fails
    fails_midway = replace(fails_midway, writes=(
        *fails_midway.writes, Statement("INSERT INTO spaces (space_id) VALUES (NULL)")))
    try:
        with pytest.raises(apsw.ConstraintError):
            submit(driver.run, fails_midway).result()
        assert driver.stats.last == 1  # it ran alone
        assert submit(driver.run, _space_plan("c")).result()[0][0] == "ok"
        assert _spaces(driver) == ["c"]
    finally:
        driver.close()


def test_a_closed_driver_refuses_reads_and_plans_instead_of_leaving_them_waiting(
        driver: SqliteDriver) -> None:
    """A long poll that outlives /_test/restart reads through the closed driver."""
    driver.close()
    with pytest.raises(StorageUnavailable):
        asyncio.run(driver.read([Statement("SELECT 1")]))
    with pytest.raises(StorageUnavailable):
        asyncio.run(driver.run(_space_plan("late")))


def test_statements_keep_their_first_plan(driver: SqliteDriver) -> None:
    """STAT4 (in apsw's SQLite) would re-plan a cached statement after every new binding."""
    try:
        assert driver.call_writer(
            lambda connection: connection.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, -1)) == 1
    finally:
        driver.close()


def test_every_caller_is_answered_after_the_shared_commit(driver: SqliteDriver,
                                                          submit: Submitter) -> None:
    try:
        with driver.held():
            futures = [submit(driver.run, _space_plan(f"s{n}")) for n in range(8)]
            assert not any(future.done() for future in futures)
        assert [future.result()[0][0] for future in futures] == ["ok"] * 8
        assert (driver.stats.groups, driver.stats.last) == (1, 8)
    finally:
        driver.close()


def _send(request_id: str) -> dict[str, object]:
    return {"request_id": request_id, "recipient_ids": ["bob"], "thread": {"new": True},
            "kind": "info", "subject": "grouped", "body": {"text": request_id}}


def test_a_crash_between_group_commit_and_the_answers_leaves_every_key_resolvable(
        data_dir: Path, submit: Submitter) -> None:
    keys = ["grouped-1", "grouped-2", "grouped-3"]
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN, test_hooks=True))) as client:
        api = Api(client)
        api.space("s1")
        ctx: Context = served_context(client.app)
        assert isinstance(ctx.driver, SqliteDriver)
        principal = client.portal.call(authenticate, ctx, f"Bearer {api.tokens['s1/alice']}")
        plans = [messages_sql.send_message(principal, ctx.clock.now_ms(), new_send(
            parse_send(_send(key), ctx.limits), digest(parse_send(_send(key), ctx.limits)
                                                       .normalised))) for key in keys]
        ctx.faults.arm("commit.durable", "crash", 1)
        with ctx.driver.held():
            futures = [submit(ctx.driver.run, p) for p in plans]
        for future in futures:  # the group committed; no caller heard of it
            assert isinstance(future.exception(), Abandoned)
        assert ctx.driver.stats.last == len(keys)
        tokens = dict(api.tokens)
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN))) as client:
        api = Api(client, tokens)
        for key in keys:
            lookup = api.as_("s1/alice", "GET", f"/v1/submissions/message.send/{key}")
            assert (lookup.status_code, lookup.json()["state"]) == (200, "committed")
            replayed = api.send("s1/alice", **_send(key))
            assert replayed.status_code == 201, replayed.text
            assert replayed.headers["Waypost-Replayed"] == "true"
        messages = [item["message"]["subject"] for item in api.all_items("s1/bob")
                    if item["type"] == "message"]
        assert messages == ["grouped"] * len(keys)
