"""The kit's own fingerprints (properties/protocol/fingerprints.py, P04) agree with every vector: sends,
acks and grants as well as publishes (written against the surviving mutants of that module,
docs/mutation.md; tests/properties/protocol/test_vectors.py checks publishes, states and manifests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from waypost.properties.protocol import fingerprints

VECTORS = Path(__file__).resolve().parents[3] / "conformance" / "vectors"


def _vectors(name: str, operation: str | None = None) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads((VECTORS / name).read_text())["vectors"]
    return [case for case in found if operation is None or case["operation"] == operation]


def test_the_kit_reproduces_send_fingerprints() -> None:
    cases = _vectors("request_fingerprints.json", "message.send")
    assert len(cases) >= 5
    for case in cases:
        assert fingerprints.send_fingerprint(case["request"]) == case["sha256"], case["description"]


def test_the_kit_reproduces_ack_fingerprints() -> None:
    cases = _vectors("request_fingerprints.json", "receipt.ack")
    assert {case["checkpoint_position"] is None for case in cases} == {True, False}
    for case in cases:
        position = case["checkpoint_position"]
        found = fingerprints.ack_fingerprint(case["request"],
                                             None if position is None else int(position))
        assert found == case["sha256"], case["description"]


def test_the_kit_reproduces_grant_fingerprints() -> None:
    cases = _vectors("grant_fingerprints.json")
    assert {case["request"]["recipients"]["mode"] for case in cases} == {"any", "listed"}
    for case in cases:
        grants = case["request"]
        found = fingerprints.grant_fingerprint(grants["scopes"], grants["recipients"],
                                               grants["collections"], grants["blob_references"])
        assert found == case["sha256"], case["description"]


def test_the_kit_reproduces_state_fingerprints_of_entries_read_from_json() -> None:
    """Entries as a server's answers carry them: parsed strings, not the code's literals."""
    cases = _vectors("memory_states.json")
    assert any(entry["state"] == "tombstone" for case in cases for entry in case["entries"])
    for case in cases:
        entries = {entry["item_id"]: entry for entry in case["entries"]}
        found = fingerprints.state_fingerprint(entries)
        assert found == case["state_fingerprint"], case["description"]


def test_a_state_fingerprint_reads_missing_metadata_as_empty() -> None:
    entry = {"state": "active", "path": "a.md", "blob_id": "blb_1"}
    assert fingerprints.state_fingerprint({"a": entry}) == fingerprints.state_fingerprint(
        {"a": {**entry, "metadata": {}}})
    assert fingerprints.state_fingerprint({"a": entry}) != fingerprints.state_fingerprint(
        {"a": {**entry, "metadata": {"k": 1}}})
