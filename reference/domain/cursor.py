"""Opaque, versioned, HMAC-SHA256-protected cursors (protocol.md §3, P07).

Encoding v1: ``"v1." + base64url(payload) + "." + base64url(tag)`` without padding, where
``payload`` is the canonical JSON of the binding fields plus the position and
``tag = HMAC-SHA256(key, "waypost-cursor-v1" || 0x00 || payload)``. The same key signs feed cursors
and memory item cursors; the ``kind`` field keeps them apart.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
from dataclasses import dataclass, fields
from typing import Any

from waypost.reference.domain.canonical import canonical_json
from waypost.reference.domain.errors import CursorInvalid

VERSION = "v1"
_CONTEXT = b"waypost-cursor-v1\x00"


@dataclass(frozen=True)
class FeedCursor:
    """Where a consumer's page ends, and everything that page was computed for."""

    space_id: str
    actor_id: str
    consumer_id: str
    view_revision: int
    filter_fingerprint: str
    grant_fingerprint: str
    position: int
    kind: str = "feed"
    #: the server's claim that nothing of this view followed ``position`` when it was minted
    #: (``origin.touches.token_id``, see ``service/wakeups.py``); "" makes none, and is not
    #: encoded
    seen: str = ""


@dataclass(frozen=True)
class MemoryCursor:
    """Where an item page of one fixed revision ends (after ``position``, an ``item_id``)."""

    space_id: str
    actor_id: str
    collection_id: str
    revision: int
    include_tombstones: bool
    position: str
    kind: str = "memory"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _tag(key: bytes, payload: bytes) -> bytes:
    # a copy of the keyed state: a herd of long polls checks and mints thousands of cursors at
    # once, and a one-shot HMAC looks its algorithm up in OpenSSL each time (~10 µs in the server)
    mac = _keyed(key).copy()
    mac.update(payload)
    return mac.digest()


@functools.lru_cache(maxsize=4)
def _keyed(key: bytes) -> hmac.HMAC:
    return hmac.new(key, _CONTEXT, hashlib.sha256)


_NAMES = {kind: tuple(f.name for f in fields(kind)) for kind in (FeedCursor, MemoryCursor)}


def encode(key: bytes, cursor: FeedCursor | MemoryCursor) -> str:
    """Sign a cursor; the result is opaque to callers."""
    values = {name: getattr(cursor, name) for name in _NAMES[type(cursor)]}
    values["position"] = str(cursor.position)
    if not values.get("seen", True):
        del values["seen"]
    payload = canonical_json(values)
    return f"{VERSION}.{_b64(payload)}.{_b64(_tag(key, payload))}"


def _verified(key: bytes, text: str, kind: str) -> dict[str, Any]:
    parts = text.split(".")
    if len(parts) != 3 or parts[0] != VERSION:
        raise ValueError("not a cursor")
    payload, tag = _unb64(parts[1]), _unb64(parts[2])
    if _b64(payload) != parts[1] or _b64(tag) != parts[2]:
        raise ValueError("non-canonical base64")  # would give two spellings of one cursor
    if not hmac.compare_digest(_tag(key, payload), tag):
        raise ValueError("the tag does not match")
    fields: dict[str, Any] = json.loads(payload)
    if fields.get("kind") != kind:
        raise ValueError("another kind of cursor")
    return fields


def decode(key: bytes, text: str) -> FeedCursor:
    """Verify and decode; any modified byte, unknown version or wrong shape is CURSOR_INVALID."""
    try:
        fields = _verified(key, text, "feed")
        fields["position"] = int(fields["position"])
        if not isinstance(fields.get("seen", ""), str):
            raise TypeError("seen is not text")
        return FeedCursor(**fields)
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise CursorInvalid("cursor is invalid", field="cursor") from None


def decode_memory(key: bytes, text: str) -> MemoryCursor:
    """Like :func:`decode`, for item pages of a fixed revision."""
    try:
        return MemoryCursor(**_verified(key, text, "memory"))
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise CursorInvalid("cursor is invalid", field="cursor") from None
