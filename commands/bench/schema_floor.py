"""What the schema alone costs a send: the writer's CPU per send, with no server around it.

At one connection every send is a transaction of its own, so the durable write of its rows is
a cost no implementation of this schema can avoid. Three loops, one send per transaction,
``synchronous=FULL``, in this thread, on a copy of the bench's provisioned database:

- ``one_row``: the floor app's own transaction (:func:`~waypost.bench.floor.insert_one`), one
  row of one table, on a connection opened as the floor opens it (in a file of its own);
- ``rows``: a send's rows as plain INSERTs (eight, and the feed's sequence row), into the
  schema's tables with their keys, indexes, foreign keys and checks (no guard, no outcome
  read);
- ``plan``: the send's commit plan, as the writer runs a plan alone (its guard, the guarded
  writes, the outcome read, the cleanup of its verdict row).

What each send is given (its ids, parameters, the plan) is made before the clock starts: that
is the event loop's work, not the writer's.

The plan loop also times each of its statements (``plan_statement_us``: the mean µs of
each, by name, ``BEGIN`` and ``COMMIT`` included), to show where a send's writer time goes.

``rows − one_row`` is what the schema adds to the floor's writer, ``plan − rows`` what the
guarded plan adds to the schema. With the floor's CPU per send at one connection measured over
HTTP in the same run, ``(floor + rows − one_row) / floor`` is the lowest ratio to the floor that
any implementation of this schema on this stack reaches at one connection (docs/performance.md).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import apsw

from waypost.adapters.sqlite.driver import open_connection
from waypost.adapters.sqlite.writer import run_statements
from waypost.bench.floor import insert_one, open_floor
from waypost.reference.domain.principal import Principal
from waypost.reference.domain.values import new_id
from waypost.reference.storage import messages
from waypost.reference.storage.plan import CommitPlan
from waypost.reference.storage.submissions import decided_from
from waypost.reference.storage.tokens import token_from, token_statement

T = TypeVar("T")

#: The body every send of the loops carries, as its canonical JSON.
BODY = '{"text":"bench"}'

_ROWS = (
    """INSERT INTO submissions (submission_id, space_id, producer_id, operation, request_id,
        fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id, result_status,
        committed_at)
    VALUES (:sub, :space, :producer, 'message.send', :request, :fingerprint, 'committed', :now,
        :msg, :thr, :fi, 201, :now)""",
    "INSERT INTO threads (space_id, thread_id, created_at) VALUES (:space, :thr, :now)",
    """INSERT INTO thread_members (space_id, thread_id, actor_id, added_at)
    VALUES (:space, :thr, :producer, :now), (:space, :thr, :recipient, :now)""",
    """INSERT INTO messages (space_id, message_id, submission_id, producer_id, thread_id, kind,
        subject, body_sha256, body_size, committed_at, body)
    VALUES (:space, :msg, :sub, :producer, :thr, 'info', 'load', :sha, :size, :now, :body)""",
    """INSERT INTO message_recipients (space_id, message_id, actor_id)
    VALUES (:space, :msg, :recipient)""",
    """INSERT INTO feed_items (item_id, space_id, item_type, producer_id, thread_id, resource_id,
        committed_at)
    VALUES (:fi, :space, 'message', :producer, :thr, :msg, :now)""",
    """INSERT INTO feed_recipients (space_id, item_id, actor_id, sequence)
    VALUES (:space, :fi, :recipient, last_insert_rowid())""",
)


def _per_send(sends: int, make: Callable[[int], T], one: Callable[[T], object]) -> float:
    """Milliseconds of this thread's CPU per call of ``one``, after a warm-up; what each call
    is given is made before the clock starts (building it is the event loop's work, not the
    writer's)."""
    for number in range(min(200, sends)):
        one(make(-1 - number))
    given = [make(number) for number in range(sends)]
    started = time.thread_time_ns()
    for each in given:
        one(each)
    return round((time.thread_time_ns() - started) / sends / 1e6, 4)


def _rows_of(principal: Principal, recipient: str) -> Callable[[int], dict[str, Any]]:
    encoded = BODY.encode()

    def make(number: int) -> dict[str, Any]:
        return {"sub": new_id("sub"), "msg": new_id("msg"), "thr": new_id("thr"),
                "fi": new_id("fi"), "space": principal.space_id,
                "producer": principal.actor_id, "recipient": recipient,
                "request": f"rows-{number}-{time.time_ns()}",
                "fingerprint": secrets.token_bytes(32), "now": time.time_ns() // 1_000_000,
                "sha": hashlib.sha256(encoded).digest(), "size": len(encoded), "body": BODY}
    return make


def _rows(connection: apsw.Connection) -> Callable[[dict[str, Any]], None]:
    cursor = connection.cursor()

    def one(given: dict[str, Any]) -> None:
        with connection:  # BEGIN … COMMIT: one send's rows, one fsync
            for sql in _ROWS:
                cursor.execute(sql, given)
    return one


def _plan_of(principal: Principal, recipient: str) -> Callable[[int], CommitPlan]:
    def make(number: int) -> CommitPlan:
        send = messages.MessageSend(
            f"plan-{number}-{time.time_ns()}", secrets.token_bytes(32), new_id("sub"),
            new_id("msg"), new_id("thr"), True, new_id("fi"), (recipient,), None, "info",
            "load", BODY, (), None)
        return messages.send_message(principal, time.time_ns() // 1_000_000, send)
    return make


def _plan(connection: apsw.Connection) -> Callable[[CommitPlan], None]:
    def one(plan: CommitPlan) -> None:
        connection.execute("BEGIN IMMEDIATE")
        try:
            rows = run_statements(connection, plan)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        _refused(decided_from(rows).verdict)
    return one


def _refused(verdict: str) -> None:
    if verdict != "ok":
        raise RuntimeError(f"the send plan refused the bench's send: {verdict}")


def _statement_name(sql: str) -> str:
    """A plan statement's name in the breakdown: its verb and table, e.g. ``INSERT feed_items``
    (``INSERT INTO …``, ``DELETE FROM …``), else its verb (``SELECT``: the outcome read)."""
    words = sql.split(None, 3)
    return f"{words[0]} {words[2]}" if words[0] in ("INSERT", "DELETE") else words[0]


def _per_statement(connection: apsw.Connection, plans: list[CommitPlan]) -> dict[str, float]:
    """The mean µs of this thread's CPU per statement of the send's plan, each send alone in
    its transaction (the statements of every plan are named alike: one shape)."""
    clock = time.thread_time_ns
    cursor = connection.cursor()
    names = ["BEGIN", *(_statement_name(s.sql) for s in plans[0].statements), "COMMIT"]
    names = [name if names.index(name) == index else f"{name} #{names[:index].count(name) + 1}"
             for index, name in enumerate(names)]
    totals = [0] * len(names)
    for plan in plans:
        texts = ("BEGIN IMMEDIATE", *(s.sql for s in plan.statements), "COMMIT")
        params = ((), *(s.params for s in plan.statements), ())
        results = []
        for index, (sql, bound) in enumerate(zip(texts, params, strict=True)):
            started = clock()
            results.append(list(cursor.execute(sql, bound)))
            totals[index] += clock() - started
        _refused(decided_from(results[1 + plan.outcome_index]).verdict)
    return {name: round(total / len(plans) / 1000, 1) for name, total in zip(names, totals,
                                                                          strict=True)}


def schema_floor(database: Path, token: str, recipient: str, work: Path,
                 sends: int = 2000) -> dict[str, Any]:
    """The three loops' CPU per send on a copy of ``database`` (provisioned: ``token`` may send
    to ``recipient``), in ``work``; their differences."""
    copy = work / "schema-floor.sqlite3"
    source = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    target = apsw.Connection(str(copy))
    with target.backup("main", source, "main") as backup:
        backup.step()
    source.close()
    target.close()
    connection = open_connection(copy, synchronous="FULL")
    token_id = token.split(".", 1)[0]
    (row,) = list(connection.execute(*token_statement(token_id)))
    principal = token_from(token_id, row).principal
    one_row = open_floor(work / "one-row.sqlite3")
    try:
        measured = {
            "one_row": _per_send(sends, lambda number: f"one-{number}-{time.time_ns()}",
                                 lambda request_id: insert_one(one_row, request_id, BODY)),
            "rows": _per_send(sends, _rows_of(principal, recipient), _rows(connection)),
            "plan": _per_send(sends, _plan_of(principal, recipient), _plan(connection))}
        make = _plan_of(principal, recipient)
        statements = _per_statement(connection, [make(number) for number in range(sends)])
    finally:
        one_row.close()
        connection.close()
    return {"sends": sends, "cpu_ms_per_send": measured,
            "rows_over_one_row_ms": round(measured["rows"] - measured["one_row"], 4),
            "plan_over_rows_ms": round(measured["plan"] - measured["rows"], 4),
            "plan_statement_us": statements}
