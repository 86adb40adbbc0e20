"""RFC 8785 (JCS) canonical JSON and the SHA-256 digests built on it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from json import encoder
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value, e.g. ``{"b":1,"a":[]}`` → ``{"a":[],"b":1}``.

    Raises ValueError for values JSON cannot carry exactly (floats beyond I-JSON, non-str keys).
    """
    # same bytes, several times faster (tests/reference/domain/test_values.py compares)
    if _plain(value):
        return _sorted_compact(value).encode()
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(str(exc)) from None


def digest(value: Any) -> bytes:
    """SHA-256 over the canonical form: the fingerprint of a normalised value (32 bytes)."""
    return hashlib.sha256(canonical_json(value)).digest()


_SAFE_INTEGER = 2**53 - 1


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"))`` for plain values, with the
    C encoder made once instead of per call (half the time of a small body's encoding). Plain
    values are parsed JSON or built from it: no cycles to look for, nothing to default."""
    make: Callable[..., Callable[[Any, int], Any]] | None = getattr(encoder, "c_make_encoder", None)
    if make is None:  # a Python without the C accelerator
        return json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    encode = make(None, None, encoder.encode_basestring_ascii, None, ":", ",", True, False, True)
    return lambda value: "".join(encode(value, 0))


_sorted_compact = _compact_encoder()


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` gives the JCS bytes: strings and keys of printable ASCII or
    control characters but not DEL (so escaping and key order agree), integers within
    ±(2^53−1), no floats. Iterative, so deep nesting cannot exhaust the stack here."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() or "\x7f" in item:
                return False
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not -_SAFE_INTEGER <= item <= _SAFE_INTEGER:
                return False
        elif isinstance(item, dict):
            for key, member in item.items():
                if not isinstance(key, str) or not key.isascii() or "\x7f" in key:
                    return False
                stack.append(member)
        elif isinstance(item, list):
            stack.extend(item)
        else:
            return False
    return True
