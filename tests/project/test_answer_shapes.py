"""One contract for answers: the member lists of docs/protocol.md (``Name {"member", …}``, §6.3
and §13) are exactly the ``required`` members of the OpenAPI schemas they name in the document
the reference serves (and the kit carries); no answer schema forbids other members (a server
MAY add them; the error envelope's top level is the one exception, WP-ERR-1); and the kit's
route-table check judges by that document: a server answering only the required members
passes, one adding members passes, one lacking a member fails naming it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.front_ends import Answer, Scope, wrapping
from tests.support.inprocess import kit_client
from tests.support.kit import KitApp
from tools.kit_openapi import kit_document
from waypost.conformance import hostile_phase as hostile
from waypost.properties.contract import routes as contract_routes
from waypost.properties.protocol.openapi import document as kit_copy
from waypost.properties.protocol.openapi import problems, success
from waypost.reference.http import openapi

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
#: A member list: a schema's name (a component, then ``.member`` or ``.member[]`` steps) and
#: its members in braces, in one code span.
SHAPE = re.compile(r"`([A-Z][A-Za-z]*(?:\.[a-z_]+(?:\[\])?)*) \{([^`{}]*)\}`")
MEMBER = re.compile(r'"([a-z_][a-z0-9_]*)"(?::\s*(.+))?')
#: The limits of §11's table, which describe's ``limits`` holds by name (WP-HTTP-9).
LIMIT_ROW = re.compile(r"^\| `([a-z_]+)` \| \d+ \|", re.M)
Schema = dict[str, Any]
Shapes = dict[str, tuple[frozenset[str], dict[str, Any]]]


def shapes(text: str) -> Shapes:
    """Every member list of the text: name → (members, values fixed with ``"member": value``).
    A name written twice must be written alike."""
    found: Shapes = {}
    for name, inside in SHAPE.findall(re.sub(r"\s+", " ", text)):
        members: set[str] = set()
        values: dict[str, Any] = {}
        for part in inside.split(","):
            member = MEMBER.fullmatch(part.strip())
            assert member, f"{name}: {part.strip()!r} is not a member"
            members.add(member.group(1))
            if member.group(2) is not None:
                values[member.group(1)] = json.loads(member.group(2))
        shape = (frozenset(members), values)
        assert found.setdefault(name, shape) == shape, f"{name} is written two ways"
    return found


def _deref(doc: Schema, schema: Schema) -> Schema:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _unwrap(doc: Schema, schema: Schema) -> Schema:
    """The object a member holds: a nullable one (``oneOf`` with ``null``) is its object."""
    schema = _deref(doc, schema)
    for key in ("oneOf", "anyOf"):
        options = [o for o in schema.get(key, ()) if o != {"type": "null"}]
        if key in schema and len(options) == 1:
            return _deref(doc, options[0])
    return schema


def schema_of(doc: Schema, name: str) -> Schema:
    """The schema a member list names: ``SpaceDetail.actors[]`` is each element of the
    ``actors`` member of the component ``SpaceDetail``."""
    first, *steps = name.split(".")
    schema = _deref(doc, doc["components"]["schemas"][first])
    for step in steps:
        schema = _unwrap(doc, schema["properties"][step.removesuffix("[]")])
        if step.endswith("[]"):
            schema = _unwrap(doc, schema["items"])
    return schema


def answer_objects(doc: Schema) -> Iterator[tuple[str, Schema]]:
    """Every object schema an answer of ``doc`` can hold, by the name a member list gives it
    (a component's name, then ``.member`` and ``[]`` steps)."""
    seen: set[str] = set()

    def walk(schema: Schema, name: str) -> Iterator[tuple[str, Schema]]:
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[1]
            if name in seen:
                return
            seen.add(name)
            schema = _deref(doc, schema)
        for key in ("oneOf", "anyOf", "allOf"):
            for option in schema.get(key, ()):
                yield from walk(option, name)
        if schema.get("type") == "object" or "properties" in schema:
            yield name, schema
        for member, sub in schema.get("properties", {}).items():
            yield from walk(sub, f"{name}.{member}")
        for key, step in (("items", "[]"), ("additionalProperties", ".*")):
            if isinstance(schema.get(key), dict):
                yield from walk(schema[key], f"{name}{step}")

    for item in doc["paths"].values():
        for op in item.values():
            for status, answer in op["responses"].items():
                media = answer.get("content", {}).get("application/json")
                if media:
                    yield from walk(media["schema"], f"{op['operationId']} {status}")


@pytest.fixture(scope="module")
def served() -> Schema:
    return openapi.document()


# ----- protocol.md and the document ---------------------------------------------------------


def test_the_member_lists_are_the_documents_required_members(served: Schema) -> None:
    written = shapes(PROTOCOL)
    assert len(written) >= 40, sorted(written)
    for name, (members, values) in written.items():
        schema = schema_of(served, name)
        assert set(schema.get("required", ())) == members, name
        assert set(schema["properties"]) >= members, name
        for member, value in values.items():
            assert _deref(served, schema["properties"][member]).get("const") == value, \
                (name, member)


def test_every_answer_with_required_members_has_its_list_in_protocol_md(served: Schema) -> None:
    """Nothing an answer of the contract (the kit's document: no test hooks) requires is left
    out of protocol.md, and no list names a schema no answer holds."""
    required = {name: set(schema["required"]) for name, schema in
                answer_objects(kit_document(served)) if schema.get("required")}
    limits = required.pop("Describe.limits")
    assert limits == set(LIMIT_ROW.findall(PROTOCOL)), "§11's table and describe's limits"
    assert set(required) == set(shapes(PROTOCOL))


def test_no_answer_forbids_other_members(served: Schema) -> None:
    closed = [name for name, schema in answer_objects(served)
              if schema.get("additionalProperties") is False]
    assert closed == ["Error"], closed  # WP-ERR-1: exactly one member, error
    kinds = {name for name, _ in answer_objects(served)}
    assert {"Error.error", "Faults", "Describe.capabilities", "SpaceDetail.consumers[]"} <= kinds


def test_request_bodies_stay_closed(served: Schema) -> None:
    bodies = [item[method]["requestBody"]["content"]["application/json"]["schema"]
              for item in served["paths"].values() for method in item
              if "application/json" in item[method].get("requestBody", {}).get("content", {})]
    assert len(bodies) >= 15
    for body in bodies:
        schema = _deref(served, body)
        options = schema.get("oneOf", [schema])
        assert all(_deref(served, o)["additionalProperties"] is False for o in options), body


def test_the_upload_put_answers_any_2xx_with_or_without_a_body(served: Schema) -> None:
    responses = served["paths"]["/v1/uploads/{upload_id}/content"]["put"]["responses"]
    assert [status for status in responses if status.startswith("2")] == ["2XX"]
    assert "content" not in responses["2XX"]
    assert "WP-UPL-3" in responses["2XX"]["description"]
    assert "answers any `2xx`, with or without a body" in re.sub(r"\s+", " ", PROTOCOL)
    put = success("PUT", "/v1/uploads/{upload_id}/content")
    assert set(put) == set(range(200, 300))
    assert set(put.values()) == {None}


def test_the_kit_carries_the_served_contract(served: Schema) -> None:
    assert kit_copy() == kit_document(served), "stale: run python tools/kit_openapi.py"


def test_every_route_names_the_rule_of_its_shape() -> None:
    assert set(contract_routes.SHAPES) == set(contract_routes.ROUTES)
    defined = set(re.findall(r"\*\*(WP-[A-Z]+-\d+)\*\*", PROTOCOL))
    assert set(contract_routes.SHAPES.values()) <= defined


# ----- the kit's route-table check judges by the document -----------------------------------

ROUTE_PATTERNS = [(re.compile("^" + re.sub(r"\{[a-z_]+\}", "[^/]+", template) + "$"), template)
                  for template in kit_copy()["paths"]]


def _template(path: str) -> str | None:
    return next((template for pattern, template in ROUTE_PATTERNS if pattern.match(path)), None)


def _option(value: Any, schema: Schema) -> Schema:
    schema = _deref(kit_copy(), schema)
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return _option(value, next(o for o in schema[key] if not problems(value, o)))
    return schema


def reshaped(value: Any, schema: Schema, extra: bool) -> Any:
    """``value`` with only the members its schema requires, in every object the schema
    describes (and one member more in each, with ``extra``)."""
    schema = _option(value, schema)
    if isinstance(value, dict) and "properties" in schema:
        kept = {key: reshaped(value[key], schema["properties"][key], extra)
                for key in schema.get("required", ()) if key in value}
        return {**kept, "x_added": {"by": "a server"}} if extra else kept
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [reshaped(element, schema["items"], extra) for element in value]
    return value


Reshape = Callable[[str, str, int, Any], Any]


def front(reshape: Reshape) -> Callable[[Any], Any]:
    """A front end that passes each JSON success answer of a contract route through
    ``reshape(method, template, status, body)``; an upload's PUT answers 204 without a body."""
    def after(scope: Scope, request: bytes, answer: Answer) -> Answer:
        status, headers, body = answer
        template = _template(scope["path"])
        if template is None or not 200 <= status < 300:
            return answer
        if template == "/v1/uploads/{upload_id}/content":
            return 204, [(k, v) for k, v in headers if k.lower() != b"content-type"], b""
        schema = success(scope["method"], template).get(status)
        if schema is None:
            return answer
        changed = reshape(scope["method"], template, status, json.loads(body))
        return status, headers, json.dumps(changed).encode()
    return lambda app: wrapping(app, None, after)


def minimal(extra: bool) -> Reshape:
    def reshape(method: str, template: str, status: int, body: Any) -> Any:
        schema = success(method, template)[status]
        assert schema is not None
        return reshaped(body, schema, extra)
    return reshape


def lacking(where: str, member: str) -> Reshape:
    """Answers of the route ``where`` (method and template) without ``member`` (a dotted
    path into the answer)."""
    def reshape(method: str, template: str, status: int, body: Any) -> Any:
        if f"{method} {template}" == where:
            *parents, last = member.split(".")
            holder = body
            for parent in parents:
                holder = holder[parent]
            del holder[last]
        return body
    return reshape


def route_table(kit_app: KitApp, kit_admin: str, data: Path, reshape: Reshape) -> hostile.HostileRow:
    with kit_app(data) as server:
        rows = hostile.run_checks(kit_client(server, front(reshape)), kit_admin, "shape",
                                  only=("route_table",))
    return rows[0]


@pytest.mark.parametrize("extra", [False, True], ids=["required only", "and one more each"])
def test_a_server_answering_the_required_members_passes(
        kit_app: KitApp, kit_admin: str, tmp_path: Path, extra: bool) -> None:
    row = route_table(kit_app, kit_admin, tmp_path / "data", minimal(extra))
    assert (row.result, row.message) == ("pass", "")


@pytest.mark.parametrize(("where", "member", "rule"), [
    ("GET /v1/describe", "capabilities.mcp", "WP-HTTP-9"),
    ("GET /v1/collections/{collection_id}/revisions/{revision}", "state_fingerprint",
     "WP-HTTP-17"),
    ("POST /admin/v1/spaces/{space_id}/actors/{actor_id}/disable", "actor_id", "WP-CTRL-10"),
    ("GET /admin/v1/spaces/{space_id}", "threads", "WP-CTRL-16"),
])
def test_a_server_lacking_a_required_member_fails_naming_it(
        kit_app: KitApp, kit_admin: str, tmp_path: Path, where: str, member: str,
        rule: str) -> None:
    row = route_table(kit_app, kit_admin, tmp_path / "data", lacking(where, member))
    assert row.result == "fail"
    assert f"lacks {member.rsplit('.', 1)[-1]!r}" in row.message, row.message
    assert rule in row.message, row.message
