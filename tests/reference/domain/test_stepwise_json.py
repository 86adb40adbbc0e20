"""The stepwise JSON parser (reference/domain/stepwise_json.py) reads every text exactly as one
``json.loads`` with the same hooks would: the same value, or a refusal where it refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waypost.reference.domain.errors import InvalidRequest
from waypost.reference.domain.parsing import DECODER, json_body, json_body_steps
from waypost.reference.domain.stepwise_json import steps


def _stepwise(text: str, window: int) -> Any:
    return _driven(steps(text, DECODER, window=window))


def _driven(parse: Any) -> Any:
    try:
        while True:
            next(parse)
    except StopIteration as done:
        return done.value


def _outcome(parse: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", parse(text)
    except Exception as refused:  # which refusal is not the point: that both refuse
        return "refused", type(refused).__mro__[-2].__name__


_TEXTS = st.text(st.sampled_from([*'ab,:[]{}"\\ é\n\t', "\u2028", "\U0001f600"]),
                 max_size=12)
_SCALARS = (st.none() | st.booleans() | st.integers(-(10 ** 30), 10 ** 30)
            | st.floats(allow_nan=False, allow_infinity=False) | _TEXTS)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=6)
                       | st.dictionaries(_TEXTS, inner, max_size=6), max_leaves=60)


@given(_VALUES, st.integers(4, 64), st.sampled_from([None, 1, 2]),
       st.sampled_from([(",", ":"), (", ", ": "), (" , ", " :  ")]))
def test_any_document_reads_as_json_loads_reads_it(value: Any, window: int,
                                                   indent: int | None,
                                                   separators: tuple[str, str]) -> None:
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    assert _stepwise(text, window) == DECODER.decode(text)


@given(_VALUES, st.integers(4, 64), st.data())
def test_a_damaged_document_is_refused_where_json_loads_refuses_it(
        value: Any, window: int, data: st.DataObject) -> None:
    text = json.dumps(value, ensure_ascii=False)
    at = data.draw(st.integers(0, len(text)))
    damage = data.draw(st.sampled_from(["", ",", "]", "}", "[", "{", '"', ":", "\\", "x", "NaN",
                                        '"k": 1, "k": 2', "1e999", " "]))
    cut = data.draw(st.integers(0, 3))
    broken = text[:at] + damage + text[at + cut:]
    expected = _outcome(DECODER.decode, broken)
    assert _outcome(lambda t: _stepwise(t, window), broken)[0] == expected[0]
    if expected[0] == "value":
        assert _stepwise(broken, window) == expected[1]


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', '[NaN]', '{"x": [1, 2, {"y": Infinity}]}', '[1, 2,]', '[,1]',
    '{"a" 1}', '{"a": 1} x', '[' * 3000 + ']' * 3000, '"\\ud800"', '[1] [2]',
    '{"k": "' + "ab," * 50 + '", "k": 1}'])
def test_refusals_are_json_bodys(text: str) -> None:
    """Every text ``json_body`` refuses, the stepwise read refuses too (with a small window,
    so that it takes steps)."""
    with pytest.raises(InvalidRequest):
        json_body(text.encode())
    with pytest.raises(InvalidRequest):
        _driven(json_body_steps(text.encode(), window=8))
