"""The commit-plan type both drivers execute (docs/d1.md "A commit plan is one batch", docs/schema.md).

A plan is an ordered list of parameterised statements. Its first statement records a verdict in
``commit_guards`` from the live database state; every business write is conditioned on that
verdict being ``'ok'``; a final read decodes the outcome from the rows actually written; the last
statement removes the verdict row. The SQLite driver runs a plan inside ``BEGIN IMMEDIATE``; the
D1 driver sends the same statements as one ``batch``. Nothing is inferred from "rows changed".

Statements are written with ``:name`` parameters for readability and compiled to numbered ``?N``
parameters (the only kinds D1 binds), each distinct name bound once. The builders here make
statements; a plan that composes its texts once per shape (a send, an ACK) takes the text
builders' (``*_sql``) output instead and binds it with :func:`stmt`.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from textwrap import dedent
from typing import Any, NamedTuple

from waypost.reference.domain.entropy import random_bytes
from waypost.reference.storage.rows import decode, only, select_list
from waypost.reference.storage.rules import Rule

SqlValue = int | str | bytes | float | None
Row = tuple[Any, ...]  # decoded where it is read: SQL values are dynamically typed

_NAME = re.compile(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)")

#: The feed sequence of ``feed_items f`` as decimal text. Sequences may pass 2^53, so they never
#: cross a JavaScript number (D1): read as text, decoded with ``int``; bound via ``CAST(… AS INTEGER)``.
SEQUENCE = "CAST(f.sequence AS TEXT)"

#: Condition that a plan's guard said yes; use inside a write's WHERE clause.
GUARD_OK = "EXISTS (SELECT 1 FROM commit_guards WHERE plan_id = :plan AND verdict = 'ok')"


class Statement(NamedTuple):
    """One SQL statement with its numbered parameters, e.g. ``("… WHERE id = ?1", ("a",))``
    (a named tuple: a send builds a dozen, and a frozen dataclass costs more to make)."""

    sql: str
    params: tuple[SqlValue, ...] = ()


def stmt(sql: str, params: Mapping[str, SqlValue] | None = None) -> Statement:
    """Compile ``:name`` parameters to ``?N``. Every name used must be given; names given but
    not used are ignored, so the statements of one plan can share one parameter mapping."""
    sql_text, values = _compile(sql)
    try:
        return Statement(sql_text, values(params or {}))
    except KeyError as missing:
        raise KeyError(f"parameter :{missing.args[0]} not given") from None


def _no_values(_: Mapping[str, SqlValue]) -> tuple[SqlValue, ...]:
    return ()


@functools.lru_cache(maxsize=1024)
def _compile(sql: str) -> tuple[str, Callable[[Mapping[str, SqlValue]], tuple[SqlValue, ...]]]:
    """``:name`` → ``?N`` once per distinct SQL text (plans reuse a few dozen texts), with the
    function that takes a mapping's values in that order (an ``itemgetter``: C, not a loop)."""
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in order:
            order.append(name)
        return f"?{order.index(name) + 1}"

    text = _NAME.sub(number, dedent(sql).strip())
    if not order:
        return text, _no_values
    if len(order) == 1:
        one = order[0]
        return text, lambda given: (given[one],)
    return text, operator.itemgetter(*order)


@dataclass(frozen=True)
class CommitPlan:
    """An atomic business operation: guard, guarded writes, outcome read, guard cleanup; and
    the rules its guard checks, which turn a verdict into its error (:func:`...rules.refusal`)."""

    name: str
    plan_id: str
    writes: tuple[Statement, ...]
    outcome: Statement
    cleanup: tuple[Statement, ...] = field(default=())
    rules: tuple[Rule, ...] = field(default=())

    @property
    def statements(self) -> tuple[Statement, ...]:
        """Everything in execution order; the outcome is the one read the caller decodes."""
        return (*self.writes, self.outcome, *self.cleanup)

    @property
    def outcome_index(self) -> int:
        return len(self.writes)


def json_list(values: Sequence[Any]) -> str:
    """A list bound as one JSON parameter and expanded with ``json_each`` (one bound value)."""
    return json.dumps(list(values)) if values else "[]"


def new_plan_id() -> str:
    """A fresh id for one plan execution's verdict row."""
    return random_bytes(12).hex()


def plan(name: str, plan_id: str, writes: Sequence[Statement], outcome: Statement,
         rules: Sequence[Rule] = ()) -> CommitPlan:
    """Assemble a plan whose guard (its first write) checks ``rules``; the cleanup that drops
    its verdict row is added here, once."""
    cleanup = stmt("DELETE FROM commit_guards WHERE plan_id = :plan", {"plan": plan_id})
    return CommitPlan(name, plan_id, tuple(writes), outcome, (cleanup,), tuple(rules))


def with_plan(params: Mapping[str, SqlValue], plan_id: str) -> Mapping[str, SqlValue]:
    """``params`` with ``:plan`` bound to ``plan_id``; a plan that puts it in its shared
    mapping once saves a copy of the mapping per statement."""
    if params.get("plan") == plan_id:
        return params
    return {**params, "plan": plan_id}


def guard_sql(rules: Sequence[Rule]) -> str:
    """The guard's SQL: it records the verdict of the first rule broken, else ``'ok'``."""
    whens = "\n".join(f"    WHEN {rule.condition} THEN '{rule.verdict}'" for rule in rules)
    verdict = f"CASE\n{whens}\n    ELSE 'ok' END" if rules else "'ok'"
    return f"INSERT INTO commit_guards (plan_id, verdict)\nSELECT :plan, {verdict}"


def guard(plan_id: str, rules: Sequence[Rule], params: Mapping[str, SqlValue]) -> Statement:
    """The guard statement of :func:`guard_sql`, bound to ``params``."""
    return stmt(guard_sql(rules), with_plan(params, plan_id))


def guarded_sql(sql: str) -> str:
    """``sql`` once checked to be a guarded write (it uses :data:`GUARD_OK`)."""
    if GUARD_OK not in sql:
        raise ValueError("a plan write must be conditioned on GUARD_OK")
    return sql


def guarded(plan_id: str, sql: str, params: Mapping[str, SqlValue] | None = None) -> Statement:
    """A write that happens only if the plan's verdict is ``'ok'``; its SQL must use
    :data:`GUARD_OK` (checked, so no write is ever left unguarded)."""
    return stmt(guarded_sql(sql), with_plan(params or {}, plan_id))


def outcome_sql(columns: str, joins: str) -> str:
    """The outcome read's SQL: ``columns`` (a select list over ``commit_guards g`` and what
    ``joins`` finds) of this plan's verdict row."""
    return f"SELECT {columns}\nFROM commit_guards g\n{joins}\nWHERE g.plan_id = :plan"


def verdict_read(plan_id: str, shape: type[Any], joins: str, params: Mapping[str, SqlValue],
                 **expressions: str) -> Statement:
    """The outcome read of ``shape`` (a dataclass whose first field is ``verdict``), its other
    columns given by ``expressions`` over what ``joins`` finds."""
    return stmt(outcome_sql(select_list(shape, verdict="g.verdict", **expressions), joins),
                with_plan(params, plan_id))


@dataclass(frozen=True)
class Verdict:
    """The outcome of most plans: what the guard decided and the state of the row written."""

    verdict: str
    state: str | None


def verdict_from(rows: Sequence[Row]) -> Verdict:
    """Decode the outcome read of a plan whose shape is :class:`Verdict`."""
    return decode(Verdict, only(rows))
