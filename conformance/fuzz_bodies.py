"""What the fuzz phase does to every generated body before it is sent (declared in
``fuzz_rules.BODY_RULES``): rules of Waypost that a JSON Schema cannot state, and the run's real
ids in place of generated ones, so that requests reach stored objects rather than 404."""

from __future__ import annotations

import itertools
import re
from typing import Any

REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
OBJECT_ID = re.compile(r"[A-Za-z0-9_-]{1,96}")

#: Members whose (first) id is replaced by a real one of the run, by member name -> fixture.
#: Only a well-formed generated id is replaced, by another well-formed one: an invalid
#: request stays invalid, a valid one stays valid.
REAL_IDS = {"recipient_ids": "actor_id", "actor_ids": "actor_id", "attachment_ids": "blob_id",
            "blob_id": "blob_id", "manifest_blob_id": "blob_id", "thread_id": "thread_id",
            "in_reply_to": "message_id", "source_actor_id": "actor_id"}


class BodyRules:
    """A ``map_body`` hook: integers written without a fraction (JSON Schema's ``integer``
    admits ``1.0``, WP-VAL-7 refuses it), a well-formed ``request_id`` made unique (so that a
    write is performed rather than answered as a conflict with an earlier generated one), and
    the run's real ids in the members of :data:`REAL_IDS`, every other body."""

    def __init__(self, run_id: str, ids: dict[str, str]) -> None:
        self.prefix, self.ids, self.count = run_id, ids, itertools.count(1)

    def __call__(self, context: Any, body: Any) -> Any:
        body = _whole_numbers(body)
        number = next(self.count)
        if isinstance(body, dict) and isinstance(body.get("request_id"), str) \
                and REQUEST_ID.fullmatch(body["request_id"]):
            suffix = f".{self.prefix}.{number}"
            body = {**body, "request_id": body["request_id"][:128 - len(suffix)] + suffix}
        return self.real(body) if number % 2 else body

    def real(self, value: Any) -> Any:
        """``value`` with the real ids in place of generated ones."""
        if isinstance(value, list):
            return [self.real(member) for member in value]
        if not isinstance(value, dict):
            return value
        changed = {}
        for name, member in value.items():
            fixture = self.ids.get(REAL_IDS.get(name, ""))
            if fixture and isinstance(member, str) and OBJECT_ID.fullmatch(member):
                changed[name] = fixture
            elif fixture and isinstance(member, list) and member and isinstance(member[0], str) \
                    and OBJECT_ID.fullmatch(member[0]) and fixture not in member:
                changed[name] = [fixture, *member[1:]]
            else:
                changed[name] = self.real(member)
        return changed


def _whole_numbers(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(member) for key, member in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(member) for member in value]
    return value
