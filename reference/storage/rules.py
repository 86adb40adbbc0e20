"""Named rules of a one-plan operation: the plan's guard checks them in order, its outcome
read tells what broke the first one that failed, and the rule gives the client's error.

A send (``storage/messages.py``) and an ACK (``storage/acks.py``) are each one plan that claims
its key and does its work at once, so no Python copy of a rule runs before or after it: the
database decides, and the verdict names the rule (seed 003's house style).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from waypost.reference.domain.errors import WaypostError, credential_refused, from_code
from waypost.reference.storage.authority import authority_cases
from waypost.reference.storage.plan import guard_sql

#: The key is another attempt's, or already final: nothing is written, the outcome reads it.
KEY_TAKEN = "KEY_TAKEN"


class Rule(NamedTuple):
    """One rule a plan's guard checks: the verdict that names it, the SQL condition that breaks
    it, what the outcome read tells of the breach (an SQL expression of a JSON object, e.g. the
    first recipient at fault, or None), and the error a client gets (protocol.md §7: its code,
    ``details.field`` and message; details the outcome read tells win over ``field``)."""

    verdict: str
    condition: str
    details: str | None
    code: str
    field: str
    message: str

    def error(self, details: dict[str, Any]) -> WaypostError:
        """The error of this breach, with what the outcome read found."""
        if self.code == "UNAUTHENTICATED":
            return credential_refused()
        return from_code(self.code, self.message,
                         {"field": self.field, **details} if self.field else details)


def authority_rules(scope: str) -> list[Rule]:
    """The token first (live, then holding ``scope``): an operation may start from a principal checked
    before (``domain/remembered.py``), and its token then answers 401 here, replay or not, as a
    check before the plan would have."""
    (live, unauthenticated), (scoped, forbidden) = authority_cases()
    return [Rule(unauthenticated, live, None, "UNAUTHENTICATED", "", ""),
            Rule(forbidden, scoped, None, "FORBIDDEN", "scope",
                 f"the token lacks the {scope} scope")]


#: The key (:func:`...submissions.key_params`) exists: it is the holder's, final or in flight.
KEY_HELD = Rule(KEY_TAKEN, "EXISTS (SELECT 1 FROM submissions WHERE space_id = :space_id"
                " AND producer_id = :producer_id AND operation = :operation"
                " AND request_id = :request_id)", None, "", "", "the key's holder answers")


def guard_of(rules: Sequence[Rule]) -> str:
    """The guard statement's SQL: the verdict of the first rule broken, else ``'ok'``."""
    return guard_sql([(rule.condition, rule.verdict) for rule in rules])


def details_of(rules: Sequence[Rule]) -> str:
    """A select-list expression ``details``: what the outcome read tells of the broken rule."""
    told = "\n".join(f"        WHEN '{rule.verdict}' THEN {rule.details}" for rule in rules
                     if rule.details is not None)
    return f"CASE g.verdict\n{told}\n    END AS details" if told else "NULL AS details"


def first(items: str, broken: str, told: str) -> str:
    """SQL: the JSON object ``told`` of the first row of ``items`` (a ``json_each`` source
    aliased ``j``, in order) for which ``broken`` holds."""
    return f"(SELECT {told} FROM {items} WHERE {broken} ORDER BY j.key LIMIT 1)"
