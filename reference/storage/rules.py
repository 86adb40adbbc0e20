"""Named rules of a plan's guard: the guard checks them in order and records the verdict of the
first one broken, the outcome read tells what broke it, and :func:`refusal` turns that verdict
into the client's error, the one way from a verdict to an error in the server.

A send (``storage/messages.py``) and an ACK (``storage/acks.py``) are each one plan that claims
its key and does its work at once, so no Python copy of a rule runs before or after it: the
database decides, and the verdict names the rule (seed 003's house style). Each plan's rules are
data beside it; ``tests/reference/storage/golden/`` shows every plan's guard as it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from waypost.reference.domain.errors import WaypostError, from_code

#: The key is another attempt's, or already final: nothing is written, the outcome reads it.
KEY_TAKEN = "KEY_TAKEN"


class Rule(NamedTuple):
    """One rule a plan's guard checks: the verdict that names it, the SQL condition that breaks
    it, what the outcome read tells of the breach (an SQL expression of a JSON object, e.g. the
    first recipient at fault, or None), and the error a client gets (protocol.md §7: its code,
    ``details.field``, message and ``details.reason``; details the outcome read tells win over
    ``field``). A rule whose code is ``""`` refuses nothing: its verdict is answered by the
    plan's caller (a replay, a recorded conflict), as ``message`` says."""

    verdict: str
    condition: str
    details: str | None
    code: str
    field: str
    message: str
    reason: str = ""


def refusal(rules: Sequence[Rule], verdict: str, details: dict[str, Any] | None = None) -> WaypostError:
    """The error of the rule of ``rules`` that ``verdict`` names, with what the outcome read
    told of the breach."""
    rule = next((rule for rule in rules if rule.verdict == verdict), None)
    if rule is None or not rule.code:
        raise AssertionError(f"the verdict {verdict} names no refusal of these rules")
    fixed: dict[str, Any] = {"field": rule.field} if rule.field else {}
    if rule.reason:
        fixed["reason"] = rule.reason
    return from_code(rule.code, rule.message, {**fixed, **(details or {})})


#: The key (:func:`...submissions.key_params`) exists: it is the holder's, final or in flight.
KEY_HELD = Rule(KEY_TAKEN, "EXISTS (SELECT 1 FROM submissions WHERE space_id = :space_id"
                " AND producer_id = :producer_id AND operation = :operation"
                " AND request_id = :request_id)", None, "", "", "the key's holder answers")


def details_of(rules: Sequence[Rule]) -> str:
    """A select-list expression ``details``: what the outcome read tells of the broken rule."""
    told = "\n".join(f"        WHEN '{rule.verdict}' THEN {rule.details}" for rule in rules
                     if rule.details is not None)
    return f"CASE g.verdict\n{told}\n    END AS details" if told else "NULL AS details"


def first(items: str, broken: str, told: str) -> str:
    """SQL: the JSON object ``told`` of the first row of ``items`` (a ``json_each`` source
    aliased ``j``, in order) for which ``broken`` holds."""
    return f"(SELECT {told} FROM {items} WHERE {broken} ORDER BY j.key LIMIT 1)"
