"""What the fuzz phase does to every generated body before it is sent (declared in
``fuzz_rules.BODY_RULES``): rules of Waypost that a JSON Schema cannot state, and the run's real
ids in place of generated ones, so that requests reach stored objects rather than 404."""

from __future__ import annotations

import itertools
import json
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
        changed: dict[str, Any] = {}
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


MAX_BYTES = "x-waypost-max-bytes"


class MaxBytes:
    """The ``x-waypost-max-bytes`` keyword: a text's UTF-8 bytes, or an object's bytes as
    compact JSON with sorted keys (metadata's canonical form, near enough for a bound)."""

    def __init__(self, parent_schema: dict[str, Any], value: Any,
                 schema_path: list[str | int]) -> None:
        self.limit = int(value)

    def validate(self, instance: Any) -> None:
        if isinstance(instance, str):
            size = len(instance.encode("utf-8", "surrogatepass"))
        elif isinstance(instance, dict):
            size = len(json.dumps(instance, sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False).encode("utf-8", "surrogatepass"))
        else:
            return
        if size > self.limit:
            raise ValueError(f"{size} bytes, more than {self.limit}")


def _bytes_not_characters(node: Any) -> Any:
    """The document with ``maxLength`` dropped wherever ``x-waypost-max-bytes`` states the
    real limit."""
    if isinstance(node, list):
        return [_bytes_not_characters(member) for member in node]
    if not isinstance(node, dict):
        return node
    return {key: _bytes_not_characters(value) for key, value in node.items()
            if not (key == "maxLength" and MAX_BYTES in node)}


class ByteExact:
    """A ``filter_failure`` hook: an "invalid request accepted" whose body breaks only a
    ``maxLength`` (a character bound) and is within its byte limit was a valid request
    (declared in ``fuzz_rules.BODY_RULES``); every other failure is kept."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = _bytes_not_characters(document)
        self.validators: dict[str, Any] = {}

    def __call__(self, context: Any, failure: Any, case: Any, response: Any) -> bool:
        from schemathesis.core.failures import AcceptedNegativeData

        if not isinstance(failure, AcceptedNegativeData):
            return True
        data = getattr(getattr(case.meta, "phase", None), "data", None)
        location = getattr(getattr(data, "parameter_location", None), "name", None)
        if location not in (None, "BODY") or not isinstance(case.body, dict | list):
            return True
        operation = case.operation.definition.raw
        if location is None and not self.query_valid(operation, case.query or {}):
            return True
        return not self.body_valid(operation, case.body)

    def body_valid(self, operation: dict[str, Any], body: Any) -> bool:
        import jsonschema_rs

        op_id = operation.get("operationId", "")
        if op_id not in self.validators:
            schema = operation.get("requestBody", {}).get("content", {}).get(
                "application/json", {}).get("schema")
            self.validators[op_id] = None if schema is None else jsonschema_rs.validator_for(
                {**schema, "components": self.document["components"]},
                keywords={MAX_BYTES: MaxBytes})
        validator = self.validators[op_id]
        return validator is not None and bool(validator.is_valid(body))

    def query_valid(self, operation: dict[str, Any], query: dict[str, Any]) -> bool:
        import jsonschema_rs

        known = {p["name"]: p["schema"] for p in operation.get("parameters", [])
                 if p["in"] == "query"}
        for name, value in query.items():
            if name not in known:
                return False
            schema = known[name]
            if schema.get("type") == "integer":
                if not (isinstance(value, str) and value.isdigit()):
                    return False
                value = int(value)
            if not jsonschema_rs.validator_for(schema).is_valid(value):
                return False
        return True
