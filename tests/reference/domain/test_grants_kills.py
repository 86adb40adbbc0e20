"""Token grants and their fingerprint (reference/domain/grants.py, protocol.md §4; written
against the surviving mutants of that module, docs/mutation.md): every grant vector's normalised
form and SHA-256, the refusals of grant requests, and what a grant allows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.domain.grants import parse_grants

VECTORS = Path(__file__).resolve().parents[3] / "conformance" / "vectors"


def _cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(
        (VECTORS / "grant_fingerprints.json").read_text())["vectors"]
    return cases


def _request(**changes: Any) -> dict[str, Any]:
    """A grant request as the server gets it: parsed from JSON (its strings are not the
    interned literals of the code)."""
    request: dict[str, Any] = json.loads(json.dumps({
        "scopes": ["message.send"], "recipients": {"mode": "any"}, "collections": [],
        "blob_references": [], **changes}))
    return request


def test_every_grant_vector_normalises_and_fingerprints_as_published() -> None:
    cases = _cases()
    assert len(cases) >= 3
    for case in cases:
        grants = parse_grants(case["request"])
        assert grants.normalised() == case["normalised"], case["description"]
        assert grants.fingerprint().hex() == case["sha256"], case["description"]


def test_the_same_grants_in_another_order_have_the_same_fingerprint() -> None:
    one = parse_grants(_request(scopes=["message.read", "message.send"], collections=[
        {"collection_id": "b", "actions": ["read"]}, {"collection_id": "a", "actions": ["write"]}]))
    other = parse_grants(_request(scopes=["message.send", "message.read"], collections=[
        {"collection_id": "a", "actions": ["write"]}, {"collection_id": "b", "actions": ["read"]}]))
    assert one.fingerprint() == other.fingerprint()
    assert one.fingerprint() != parse_grants(_request()).fingerprint()


@pytest.mark.parametrize(("changes", "field"), [
    ({"recipients": {"mode": "any", "actor_ids": []}}, "recipients.actor_ids"),
    ({"recipients": {"mode": "listed"}}, "recipients.actor_ids"),
    ({"recipients": {"mode": "some"}}, "recipients.mode"),
    ({"scopes": ["message.send", "admin"]}, "scopes[1]"),
    ({"collections": [{"collection_id": "notes", "actions": []}]}, "collections[0].actions"),
    ({"collections": [{"collection_id": "notes", "actions": ["delete"]}]},
     "collections[0].actions[0]"),
    ({"collections": [{"collection_id": "a b", "actions": ["read"]}]},
     "collections[0].collection_id"),
    ({"collections": [{"collection_id": "notes"}]}, "collections[0].actions"),
    ({"blob_references": ["no/id"]}, "blob_references[0]"),
], ids=["any-with-ids", "listed-without-ids", "mode", "scope", "no-action", "action",
        "collection-id", "actions-missing", "blob-reference"])
def test_a_malformed_grant_is_refused_naming_its_field(changes: dict[str, Any],
                                                        field: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_grants(_request(**changes))
    assert refused.value.details["field"] == field


def test_a_grant_allows_exactly_what_it_lists() -> None:
    listed = parse_grants(_request(
        recipients={"mode": "listed", "actor_ids": ["bob"]},
        collections=[{"collection_id": "notes", "actions": ["read"]}]))
    assert listed.may_send_to("bob")
    assert not listed.may_send_to("carol")
    assert listed.may("notes", "read")
    assert not listed.may("notes", "write")
    assert not listed.may("other", "read")
    assert parse_grants(_request()).may_send_to("anyone")
    nothing = parse_grants(_request(scopes=[], recipients={"mode": "listed", "actor_ids": []}))
    assert not nothing.may_send_to("bob")
    assert nothing.scopes == frozenset()


def test_grants_are_an_immutable_value() -> None:
    grants = parse_grants(_request())
    assert {grants, parse_grants(_request())} == {grants}
    with pytest.raises(dataclasses.FrozenInstanceError):
        grants.recipients_any = False
