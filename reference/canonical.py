"""RFC 8785 (JCS) canonical JSON and the SHA-256 digests built on it."""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical bytes of a JSON value, e.g. ``{"b":1,"a":[]}`` → ``{"a":[],"b":1}``.

    Raises ValueError for values JSON cannot carry exactly (floats beyond I-JSON, non-str keys).
    """
    try:
        return bytes(rfc8785.dumps(value))
    except (rfc8785.CanonicalizationError, TypeError) as exc:
        raise ValueError(str(exc)) from None


def digest(value: Any) -> bytes:
    """SHA-256 over the canonical form: the fingerprint of a normalised value (32 bytes)."""
    return hashlib.sha256(canonical_json(value)).digest()
