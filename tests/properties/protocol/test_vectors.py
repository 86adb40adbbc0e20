"""The published test vectors (``conformance/vectors/``) reproduce byte for byte (P04)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from tests.support.api import Api
from tools.make_vectors import build

VECTORS = Path(__file__).resolve().parents[3] / "conformance" / "vectors"


def _load(name: str) -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = json.loads((VECTORS / name).read_text())["vectors"]
    return vectors


FILES = ["request_fingerprints.json", "grant_fingerprints.json", "memory_states.json",
         "validation.json", "errors.json"]


def test_every_vector_file_is_listed_and_described() -> None:
    assert sorted(p.name for p in VECTORS.glob("*.json")) == sorted(FILES)
    readme = (VECTORS / "README.md").read_text()
    for name in FILES:
        assert f"`{name}`" in readme, f"{name} is not described in conformance/vectors/README.md"


@pytest.mark.parametrize("name", FILES)
def test_vector_files_are_current(name: str) -> None:
    assert json.loads((VECTORS / name).read_text()) == build()[name], (
        "stale vectors: run python tools/make_vectors.py")


@pytest.mark.parametrize("name", ["request_fingerprints.json", "grant_fingerprints.json"])
def test_every_vector_is_sha256_of_the_jcs_of_its_normalised_form(name: str) -> None:
    for case in _load(name):
        canonical = rfc8785.dumps(case["normalised"])
        assert canonical.decode() == case["canonical"], case["description"]
        assert hashlib.sha256(canonical).hexdigest() == case["sha256"], case["description"]


def test_order_insensitive_sets_and_order_sensitive_lists() -> None:
    by_id = {case["request"]["request_id"]: case["sha256"]
             for case in _load("request_fingerprints.json")}
    assert by_id["v2"] == by_id["v3"]
    assert by_id["v3"] != by_id["v4"]
    assert by_id["v1"] != by_id["v6"]


def test_the_server_reports_the_vector_fingerprint(api: Api) -> None:
    case = _load("request_fingerprints.json")[0]
    response = api.as_("s1/bob", "POST", "/v1/messages", case["request"])
    assert response.status_code == 201, response.text
    found = api.as_("s1/bob", "GET",
                    f"/v1/submissions/message.send/{case['request']['request_id']}").json()
    assert found["fingerprint"] == case["sha256"]


def test_the_server_reports_the_grant_fingerprint(api: Api) -> None:
    case = _load("grant_fingerprints.json")[0]
    issued = api.token("s1", "bob", "bob-inbox", name="vector", **{
        "scopes": case["request"]["scopes"], "recipients": case["request"]["recipients"]})
    assert issued["grant_fingerprint"] == case["sha256"]


def test_the_kit_reproduces_publish_fingerprints() -> None:
    """The kit's own computation (properties/) agrees with the vectors (and so the reference)."""
    from waypost.properties.protocol.fingerprints import publish_fingerprint

    cases = [c for c in _load("request_fingerprints.json") if c["operation"] == "memory.publish"]
    assert len(cases) >= 3
    for case in cases:
        assert publish_fingerprint(case["request"], case["collection_id"]) == case["sha256"]
    assert cases[0]["sha256"] == cases[1]["sha256"] != cases[2]["sha256"]


def test_the_kit_reproduces_memory_states_and_manifests() -> None:
    from waypost.properties.model.state import next_state
    from waypost.properties.protocol.fingerprints import manifest_bytes, state_fingerprint

    for case in _load("memory_states.json"):
        parent = {e["item_id"]: e for e in case["parent"]}
        state = next_state(parent, case["mode"], case["items"], case["delete_ids"],
                           case["revision"])
        assert not isinstance(state, str), case["description"]
        assert [state[k] for k in sorted(state)] == case["entries"], case["description"]
        assert state_fingerprint(state) == case["state_fingerprint"], case["description"]
        document = manifest_bytes(case["collection_id"], case["revision"],
                                  case["revision"] - 1, state)
        assert document.decode() == case["manifest"], case["description"]
        assert hashlib.sha256(document).hexdigest() == case["manifest_sha256"]
    empty = [c for c in _load("memory_states.json") if not c["entries"]]
    assert empty[0]["state_fingerprint"] == hashlib.sha256(b"[]").hexdigest()


def test_the_kit_reproduces_the_value_rules() -> None:
    """The kit's own grammar (properties/protocol/grammar.py) gives every validation vector's answer."""
    from waypost.properties.protocol.grammar import refusal

    cases = _load("validation.json")
    for case in cases:
        found = refusal(case["kind"], case["value"], case["field"])
        expected = case["error"]
        assert (found is None) == case["valid"], case["description"]
        if expected is None:
            continue
        assert found is not None
        shown = {"status": found.status, "code": found.code, "field": found.field}
        shown.update({k: v for k, v in (("limit", found.limit), ("max", found.max)) if v})
        assert shown == expected, f"{case['kind']}: {case['description']}"
    kinds = {case["kind"] for case in cases}
    assert kinds == {"object_id", "request_id", "sha256", "revision", "relative_path", "subject",
                     "content_type"}
    for kind in kinds:  # each kind has valid and invalid cases
        assert {case["valid"] for case in cases if case["kind"] == kind} == {True, False}, kind


def test_reference_disagreements_are_marked_and_explained() -> None:
    marked = [case for case in _load("validation.json") if "reference_disagrees" in case]
    assert all(not case["valid"] and case["reference_disagrees"] for case in marked)
    assert {case["kind"] for case in marked} <= {"relative_path", "content_type"}


def test_the_kit_reproduces_the_error_envelopes() -> None:
    from waypost.properties.protocol.grammar import REQUIRED_DETAILS, STATUS, envelope_problems

    cases = _load("errors.json")
    assert sorted(case["code"] for case in cases) == sorted(STATUS)
    for case in cases:
        assert STATUS[case["code"]] == case["status"] == case["example"]["status"], case["code"]
        assert case["example"]["body"]["error"]["code"] == case["code"]
        assert envelope_problems(case["status"], case["example"]["body"]) == [], case["code"]
        assert list(REQUIRED_DETAILS.get(case["code"], ())) == case["required_details"]
    assert envelope_problems(404, {"error": {"code": "NOT_FOUND", "message": "x"}})
    assert envelope_problems(400, {"error": {"code": "NOT_FOUND", "message": "x", "details": {}}})
    assert envelope_problems(409, {"error": {"code": "REVISION_CONFLICT", "message": "x",
                                             "details": {}}})


def test_the_server_answers_the_vectors_over_http(api: Api) -> None:
    """A sample through the reference's HTTP API: the vector's status, code and field."""
    cases = [c for c in _load("validation.json")
             if c["kind"] == "content_type" and "reference_disagrees" not in c]
    for index, case in enumerate(cases):
        body = {"request_id": f"ct{index}", "size": 0, "sha256": hashlib.sha256(b"").hexdigest(),
                "content_type": case["value"]}
        answer = api.as_("s1/bob", "POST", "/v1/blobs", body)
        if case["valid"]:
            assert answer.status_code == 201, (case["description"], answer.text)
            continue
        error = answer.json()["error"]
        assert (answer.status_code, error["code"], error["details"].get("field")) == (
            case["error"]["status"], case["error"]["code"], case["error"]["field"])
