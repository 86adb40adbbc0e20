"""The D1 driver: each commit plan is exactly one D1 ``batch``, sent to the gateway Worker.

D1 has no interactive transactions (it rejects ``BEGIN``); a batch is atomic, and a failing
statement rolls the whole batch back. So a plan's guard, guarded writes, outcome read and cleanup
travel together, and the outcome is read back from the rows, never from ``changes``.

Across the gateway's JSON, BLOBs travel as ``{"b64": …}`` and integers beyond 2^53−1 as
``{"int": "<decimal>"}``; the shared statements cast such parameters with ``CAST(… AS INTEGER)``
and read 64-bit columns with ``CAST(… AS TEXT)``. An integer column that arrives as a number
beyond 2^53−1 has lost precision in JavaScript: that is refused, never decoded.
"""

from __future__ import annotations

import base64
import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from waypost.adapters.d1.http import gateway_client, send
from waypost.reference.storage.migrations import LEDGER, RECORD, all_migrations
from waypost.reference.storage.plan import CommitPlan, Row, SqlValue, Statement

MAX_SAFE_INTEGER = 2**53 - 1
_QUERY = re.compile(r"\s*(SELECT|WITH)\b", re.IGNORECASE)


@dataclass(frozen=True)
class D1Budget:
    """D1's per-invocation limits (Workers Free), which every batch must fit."""

    queries_per_batch: int = 50
    parameters_per_statement: int = 100
    statement_bytes: int = 100_000
    value_bytes: int = 2_000_000


class D1Error(Exception):
    """D1 refused a batch (an SQL error, a constraint); nothing of the batch was written."""


class BudgetExceeded(D1Error):
    """A batch would break D1's limits; it was not sent. Published limits keep requests below
    this, so it means a limit or a plan is wrong."""


def encode(value: SqlValue) -> Any:
    """One parameter as gateway JSON."""
    if isinstance(value, bytes):
        return {"b64": base64.b64encode(value).decode()}
    if isinstance(value, int) and not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return {"int": str(value)}
    return value


def decode(value: Any) -> SqlValue:
    """One column value from gateway JSON."""
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and abs(value) > MAX_SAFE_INTEGER:
        raise D1Error(f"a 64-bit value ({value}) crossed JavaScript as a number and may have "
                      "lost precision; read it with CAST(… AS TEXT)")
    column: SqlValue = value  # text, a number, or null: what JSON carried
    return column


def split_statements(sql: str) -> list[str]:
    """A migration script as single statements (a D1 batch takes one statement each);
    semicolons inside triggers, strings and comments do not split."""
    statements, pending = [], ""
    for part in sql.split(";"):
        pending += part + ";"
        if sqlite3.complete_statement(pending):
            code = [line for line in pending.splitlines() if not line.strip().startswith("--")]
            if "".join(code).strip(" \t;"):
                statements.append(pending.strip())
            pending = ""
    return statements


class ColumnShapes:
    """The column names SQLite gives each query, from an empty in-memory copy of the schema.

    D1 returns rows as JavaScript objects: two columns of one name collapse into one and
    integer-like names move first. Each query's names are checked once, before it is first
    sent: a clash is refused with the query named, instead of a row silently one column short."""

    def __init__(self) -> None:
        self.scratch = sqlite3.connect(":memory:")
        self.scratch.execute(LEDGER)
        for migration in all_migrations():
            self.scratch.executescript(migration.sql)
        self.checked: set[str] = set()

    def check(self, statement: Statement) -> None:
        """Refuse a query whose result columns would not survive; other statements pass."""
        if statement.sql in self.checked or not _QUERY.match(statement.sql):
            return
        cursor = self.scratch.execute(statement.sql, statement.params)
        names = [column[0] for column in cursor.description or ()]
        cursor.close()
        clashes = sorted({n for n in names if names.count(n) > 1 or n.isdigit()})
        if clashes:
            raise D1Error(f"columns {clashes} would not survive D1's row objects; alias them in:"
                          f"\n{statement.sql}")
        self.checked.add(statement.sql)

    def close(self) -> None:
        self.scratch.close()


class D1Driver:
    """Runs plans and reads on D1 through the gateway at ``url``. Its :attr:`client` serves
    the R2 blob store too; :meth:`aclose` closes it."""

    name = "d1"

    def __init__(self, url: str, secret: str, *, budget: D1Budget | None = None,
                 timeout: float = 60.0) -> None:
        self.budget = budget or D1Budget()
        self.client = gateway_client(url, secret, timeout=timeout)
        self.batches = 0  # round trips so far (``waypost bench d1`` reports them)
        #: called with every batch before it is sent (tests and the benchmark watch the SQL)
        self.on_batch: Callable[[Sequence[Statement]], None] | None = None
        self.shapes = ColumnShapes()

    def check(self, statements: Sequence[Statement]) -> None:
        """Refuse, before sending, a batch D1 could not run within its limits."""
        budget = self.budget
        if len(statements) > budget.queries_per_batch:
            raise BudgetExceeded(f"{len(statements)} statements in one batch "
                                 f"(D1 allows {budget.queries_per_batch})")
        for statement in statements:
            if len(statement.params) > budget.parameters_per_statement:
                raise BudgetExceeded(f"{len(statement.params)} bound parameters in one statement")
            if len(statement.sql.encode()) > budget.statement_bytes:
                raise BudgetExceeded("an SQL statement longer than D1 allows")
            for value in statement.params:
                size = len(value.encode()) if isinstance(value, str) else \
                    len(value) if isinstance(value, bytes) else 0
                if size > budget.value_bytes:
                    raise BudgetExceeded("a bound value larger than D1 allows")
            self.shapes.check(statement)

    async def batch(self, statements: Sequence[Statement]) -> list[list[Row]]:
        """Send one batch; rows per statement, in order, each row in column order."""
        self.check(statements)
        if self.on_batch is not None:
            self.on_batch(statements)
        payload = {"statements": [{"sql": s.sql, "params": [encode(v) for v in s.params]}
                                  for s in statements]}
        try:
            response = await send(self.client, "POST", "/d1/batch", json=payload)
        finally:
            self.batches += 1
        if response.status_code != 200:
            raise D1Error(f"D1 gateway answered {response.status_code}: {_reason(response)}")
        return [[tuple(decode(v) for v in row) for row in result["rows"]]
                for result in response.json()["results"]]

    async def run(self, plan: CommitPlan) -> list[Row]:
        return (await self.batch(plan.statements))[plan.outcome_index]

    async def read(self, statements: Sequence[Statement]) -> list[list[Row]]:
        return await self.batch(statements)

    async def migrate(self) -> list[int]:
        """Each migration with its ``schema_migrations`` row in one batch: all or nothing."""
        _, done = await self.batch([
            Statement(LEDGER),
            Statement("SELECT version FROM schema_migrations")])
        versions = {row[0] for row in done}
        applied = []
        for migration in all_migrations():
            if migration.version in versions:
                continue
            record = Statement(RECORD, (migration.version, migration.name))
            await self.batch([*(Statement(sql) for sql in split_statements(migration.sql)), record])
            applied.append(migration.version)
        return applied

    async def aclose(self) -> None:
        self.shapes.close()
        await self.client.aclose()


def _reason(response: httpx.Response) -> str:
    """The gateway's error message, or the start of whatever else answered."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:500]
