"""RFC 8785 (JCS) canonical JSON and the SHA-256 digests built on it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value, e.g. ``{"b":1,"a":[]}`` → ``{"a":[],"b":1}``.

    Raises ValueError for values JSON cannot carry exactly (floats beyond I-JSON, non-str keys).
    """
    if _plain(value):  # same bytes, several times faster (tests/test_values.py compares)
        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(str(exc)) from None


def digest(value: Any) -> bytes:
    """SHA-256 over the canonical form: the fingerprint of a normalised value (32 bytes)."""
    return hashlib.sha256(canonical_json(value)).digest()


_SAFE_INTEGER = 2**53


def _plain(value: Any) -> bool:
    """Whether ``json.dumps`` gives the JCS bytes: ASCII strings and keys (so escaping and key
    order agree), integers within ±2^53, no floats."""
    if isinstance(value, str):
        return value.isascii()
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -_SAFE_INTEGER <= value <= _SAFE_INTEGER
    if isinstance(value, dict):
        return all(isinstance(k, str) and k.isascii() and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return False
