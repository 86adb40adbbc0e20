"""Canonical JSON's fast path (reference/domain/canonical.py; written against the surviving
mutants of that module, docs/mutation.md). tests/reference/domain/test_values.py shows the bytes
equal RFC 8785's whichever path is taken; here, which values take the fast path: exactly those whose
``json.dumps`` is their JCS form (a narrower test costs the speed of every fingerprint, a wider
one the bytes)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import rfc8785

from waypost.reference.domain.canonical import _plain, canonical_json, digest

SAFE = 2**53 - 1


@pytest.mark.parametrize("value", [
    None, True, False, 0, SAFE, -SAFE, "", "plain ascii \x00\x1f\"\\", [], {},
    {"a": [1, "b", None, {"c": False}], "d": {"e": [[]]}},
], ids=repr)
def test_plain_values_take_the_fast_path(value: Any) -> None:
    assert _plain(value)


@pytest.mark.parametrize("value", [
    SAFE + 1, -SAFE - 1, 1.5, 0.0, "é", "\x7f", {"é": 1}, {"\x7f": 1}, {1: "a"},
    ("a",), b"a", [1, [2, ["é"]]], {"a": {"b": 2**60}}, [None, 1.0],
], ids=repr)
def test_values_json_dumps_would_spell_otherwise_take_the_rfc8785_path(value: Any) -> None:
    assert not _plain(value)


def test_both_paths_give_the_rfc8785_bytes_and_their_digest() -> None:
    for value in ({"b": [SAFE, "x"], "a": None}, {"é": [-SAFE, 1.5, "\x7f"]}):
        expected = bytes(rfc8785.dumps(value))
        assert canonical_json(value) == expected
        assert digest(value) == hashlib.sha256(expected).digest()


def test_a_value_json_cannot_carry_is_refused_with_a_reason() -> None:
    for value in ({1.5: "a"}, float("nan"), {"a": object()}):
        with pytest.raises(ValueError, match=r"\S"):
            canonical_json(value)
