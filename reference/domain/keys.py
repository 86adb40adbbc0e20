"""One key per purpose, derived from the server's one secret (its ``cursor.key``) with HKDF
(RFC 5869, SHA-256): a key that leaks, or a MAC made for one purpose, is worth nothing for
another. The purposes' labels are fixed: changing one invalidates what it signed."""

from __future__ import annotations

from typing import NamedTuple

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class Keys(NamedTuple):
    """The derived keys: feed and memory cursors' MACs, dashboard forms' CSRF tokens, and the
    digests under which dashboard sessions are stored."""

    cursors: bytes
    csrf: bytes
    sessions: bytes


def _derive(secret: bytes, purpose: str) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                info=f"waypost/1 {purpose}".encode()).derive(secret)


def derive(secret: bytes) -> Keys:
    """The keys of every purpose from the server's secret (32 random bytes)."""
    return Keys(*(_derive(secret, purpose) for purpose in Keys._fields))
