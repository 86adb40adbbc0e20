"""The metadata limit is enforced without encoding a far larger value: a lower bound of the
canonical length, counted until it passes the limit (reference/domain/values.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waypost.reference.domain import values
from waypost.reference.domain.canonical import canonical_json
from waypost.reference.domain.errors import ResourceLimit

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53 + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, width=32) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=5),
    max_leaves=30)


@given(st.dictionaries(st.text(max_size=5), JSON, max_size=6))
def test_the_bound_never_exceeds_the_canonical_length(value: dict[str, Any]) -> None:
    assert values._canonical_at_least(value, 10**9) <= len(canonical_json(value))


@given(st.dictionaries(st.text(max_size=5), JSON, max_size=6))
def test_metadata_within_the_limit_is_judged_by_its_canonical_length(
        value: dict[str, Any]) -> None:
    if len(canonical_json(value)) <= values.MAX_METADATA_BYTES:
        assert values.metadata(value) == value


@pytest.mark.parametrize("value", [
    {"x": [0.5] * 300_000},  # a 1 MiB float array
    {"x": [{}] * 300_000},
    {f"k{n}": n for n in range(100_000)},
])
def test_a_far_larger_value_is_refused_after_a_few_thousand_elements(value: dict[str, Any]) -> None:
    assert values._canonical_at_least(value, values.MAX_METADATA_BYTES + 1) \
        > values.MAX_METADATA_BYTES
    with pytest.raises(ResourceLimit):
        values.metadata(value)
