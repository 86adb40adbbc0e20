"""The kit's OpenAPI document (``conformance/openapi/waypost-1.json``, package data) and a check
of an answer against one of its schemas, for the route-table check (WP-HTTP-8).

An answer schema's ``required`` members are exactly those protocol.md names for the answer
(§6.3, §13): an answer lacking one fails, naming it; an answer with members the document does
not name passes, since a server MAY add members. The check knows the JSON Schema keywords that
document uses (``$ref``, ``type``, ``required``, ``properties``, ``items``, ``const``, ``enum``,
``pattern``, lengths, bounds, ``oneOf`` / ``anyOf`` / ``allOf``, ``not``, ``if`` / ``then``)
and leaves ``additionalProperties`` aside (only the error envelope's top level is closed, which
``grammar.envelope_problems`` checks). It reads the answer as hostile input: bounded depth, at
most 200 elements of a list, at most 20 problems."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any

Schema = dict[str, Any]
MAX_DEPTH, MAX_ITEMS, MAX_PROBLEMS = 40, 200, 20


@cache
def document() -> dict[str, Any]:
    """The normative OpenAPI document of Waypost/1 the kit carries (never the target's)."""
    text = resources.files("waypost.conformance").joinpath("openapi", "waypost-1.json")
    loaded: dict[str, Any] = json.loads(text.read_text(encoding="utf-8"))
    return loaded


def _resolve(schema: Schema) -> Schema:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/components/schemas/"):
        return schema
    resolved: Schema = document()["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return resolved


def _same(one: Any, two: Any) -> bool:
    return json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


_TYPES = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
          "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
          "null": lambda v: v is None,
          "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool)}


def problems(instance: Any, schema: Schema, where: str = "the answer",
             depth: int = 0) -> list[str]:
    """What in ``instance`` breaks ``schema`` (an empty list: nothing)."""
    if depth > MAX_DEPTH:
        return [f"{where}: nested deeper than {MAX_DEPTH}"]
    schema = _resolve(schema)
    kinds = schema.get("type")
    if kinds is not None:
        listed = kinds if isinstance(kinds, list) else [kinds]
        if not any(_TYPES[kind](instance) for kind in listed if kind in _TYPES):
            return [f"{where} is {json.dumps(instance)[:60]}, not of type {kinds}"]
    found: list[str] = []
    if "const" in schema and not _same(instance, schema["const"]):
        found.append(f"{where} is {json.dumps(instance)[:60]}, not {schema['const']!r}")
    if "enum" in schema and not any(_same(instance, value) for value in schema["enum"]):
        found.append(f"{where} = {json.dumps(instance)[:60]} is none of {schema['enum']}")
    found += _scalar(instance, schema, where)
    if isinstance(instance, dict):
        found += [f"{where} lacks {key!r}" for key in schema.get("required", ())
                  if key not in instance]
        for key, sub in (schema.get("properties") or {}).items():
            if key in instance:
                found += problems(instance[key], sub, f"{where}.{key}", depth + 1)
    if isinstance(instance, list):
        found += _array(instance, schema, where, depth)
    found += _combined(instance, schema, where, depth)
    return found[:MAX_PROBLEMS]


def _scalar(instance: Any, schema: Schema, where: str) -> list[str]:
    found = []
    if isinstance(instance, str):
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not re.search(pattern, instance):
            found.append(f"{where} = {instance[:60]!r} does not match {pattern}")
        if len(instance) < schema.get("minLength", 0):
            found.append(f"{where} is shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            found.append(f"{where} is longer than {schema['maxLength']} characters")
    if _TYPES["number"](instance):
        if "minimum" in schema and instance < schema["minimum"]:
            found.append(f"{where} = {instance} is below {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            found.append(f"{where} = {instance} is above {schema['maximum']}")
    return found


def _array(instance: list[Any], schema: Schema, where: str, depth: int) -> list[str]:
    found = []
    if len(instance) < schema.get("minItems", 0):
        found.append(f"{where} holds fewer than {schema['minItems']} elements")
    if "maxItems" in schema and len(instance) > schema["maxItems"]:
        found.append(f"{where} holds more than {schema['maxItems']} elements")
    if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True)
                                          for v in instance}) != len(instance):
        found.append(f"{where} repeats an element")
    items = schema.get("items")
    if isinstance(items, dict):
        for index, value in enumerate(instance[:MAX_ITEMS]):
            found += problems(value, items, f"{where}[{index}]", depth + 1)
            if len(found) >= MAX_PROBLEMS:
                break
    return found


def _combined(instance: Any, schema: Schema, where: str, depth: int) -> list[str]:
    found = []
    for key in ("oneOf", "anyOf"):
        options = schema.get(key)
        if options and all(problems(instance, option, where, depth + 1) for option in options):
            first = problems(instance, options[0], where, depth + 1)[:2]
            found.append(f"{where} matches none of its {len(options)} forms (e.g. "
                         f"{'; '.join(first)})")
    for option in schema.get("allOf", ()):
        found += problems(instance, option, where, depth + 1)
    if "not" in schema and not problems(instance, schema["not"], where, depth + 1):
        found.append(f"{where} matches a form it must not")
    if "if" in schema and not problems(instance, schema["if"], where, depth + 1):
        found += problems(instance, schema.get("then", {}), where, depth + 1)
    return found


def documented(method: str, template: str) -> list[str]:
    """The statuses the kit's document gives a route, as it writes them (``2XX``: any 2xx)."""
    return list(document()["paths"][template][method.lower()]["responses"])


def success(method: str, template: str) -> dict[int, Schema | None]:
    """The success statuses the kit's document gives a route, each with its JSON schema
    (None: no JSON shape, e.g. raw bytes or a PUT's optional body). A range such as ``2XX``
    stands for each status of it that the document does not give on its own."""
    responses = document()["paths"][template][method.lower()]["responses"]
    found: dict[int, Schema | None] = {}
    for status, answer in sorted(responses.items(), key=lambda entry: -entry[0].count("X")):
        if status.startswith("2"):
            content = answer.get("content") or {}
            schema = (content.get("application/json") or {}).get("schema")
            codes = range(200, 300) if status.upper() == "2XX" else (int(status),)
            found.update(dict.fromkeys(codes, schema))
    return found
