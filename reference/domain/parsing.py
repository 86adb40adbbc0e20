"""Strict parsing of request bodies: unknown fields are rejected, every error names its field."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

from waypost.reference.domain import stepwise_json
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit

T = TypeVar("T")


def json_body(raw: bytes) -> Any:
    """Decode a request body as JSON (UTF-8, no NaN/Infinity, no duplicate keys)."""
    try:
        value = DECODER.decode(raw.decode("utf-8"))
        if b"\\u" in raw:
            _utf8_only(value)
    except (UnicodeError, ValueError, RecursionError):  # ValueError: also 4300+ digit numbers
        raise InvalidRequest("request body must be JSON text in UTF-8", field="body") from None
    return value


def json_body_steps(raw: bytes, window: int = stepwise_json.WINDOW) -> Generator[None, None, Any]:
    """:func:`json_body` in bounded steps (:mod:`.stepwise_json`), yielding between them: the
    same value, or the same refusal."""
    try:
        check = _utf8_only if b"\\u" in raw else None
        return (yield from stepwise_json.steps(raw.decode("utf-8"), DECODER, check, window))
    except (UnicodeError, ValueError, RecursionError):
        raise InvalidRequest("request body must be JSON text in UTF-8", field="body") from None


def _utf8_only(value: Any) -> None:
    """A lone surrogate (``"\\ud800"``) is valid JSON but no UTF-8 text: refuse it. UTF-8
    input cannot hold one, so only a ``\\u`` escape can bring it."""
    json.dumps(value, ensure_ascii=False).encode("utf-8")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise InvalidRequest("request body repeats a key", field="body")
    return value


def _no_constant(name: str) -> Any:
    raise InvalidRequest(f"{name} is not JSON", field="body")


#: The request bodies' decoder: a repeated key or ``NaN``/``Infinity`` is refused.
DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def fields(value: Any, field: str, required: Iterable[str], optional: Iterable[str] = ()) -> dict[str, Any]:
    """A JSON object with exactly the given required keys and any of the optional ones."""
    where = field or "body"
    if not isinstance(value, dict):
        raise InvalidRequest(f"{where} must be a JSON object", field=where)
    required, optional = list(required), list(optional)
    for key in value:
        if key not in required and key not in optional:
            raise InvalidRequest(f"unknown field {_join(field, key)}", field=_join(field, key))
    for key in required:
        if key not in value:
            raise InvalidRequest(f"{_join(field, key)} is required", field=_join(field, key))
    return value


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def at(field: str, key: str) -> str:
    """The path of a member: ``at("body", "text") == "body.text"``."""
    return _join(field, key)


def items(value: Any, field: str, parse: Callable[[Any, str], T], *, low: int = 0,
          high: int | None = None, limit: str | None = None) -> list[T]:
    """A JSON array whose elements ``parse`` accepts; its length within ``[low, high]``.
    When ``high`` is the published limit named ``limit``, exceeding it is RESOURCE_LIMIT."""
    if not isinstance(value, list):
        raise InvalidRequest(f"{field} must be an array", field=field)
    if limit is not None and high is not None and len(value) > high:
        raise ResourceLimit(f"{field} holds more than {high} elements", field=field, limit=limit,
                            max=high)
    if len(value) < low or (high is not None and len(value) > high):
        bound = f"{low} to {high}" if high is not None else f"at least {low}"
        raise InvalidRequest(f"{field} must hold {bound} elements", field=field, max=high)
    return [parse(element, f"{field}[{index}]") for index, element in enumerate(value)]


def one_of(value: Any, field: str, choices: Iterable[str]) -> str:
    """A string from a closed set."""
    options = list(choices)
    if not isinstance(value, str) or value not in options:
        raise InvalidRequest(f"{field} must be one of {', '.join(options)}", field=field)
    return value

