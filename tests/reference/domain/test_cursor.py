"""Cursor integrity (P07): opaque, versioned, any changed byte is CURSOR_INVALID."""

from __future__ import annotations

import pytest

from waypost.reference.domain import cursor
from waypost.reference.domain.errors import CursorInvalid

KEY = bytes(range(32))
SAMPLE = cursor.FeedCursor("s1", "alice", "alice-inbox", 3, "ab" * 32, "cd" * 32, 2**63 - 1)


def test_round_trip_keeps_every_field() -> None:
    assert cursor.decode(KEY, cursor.encode(KEY, SAMPLE)) == SAMPLE


def test_every_single_character_change_is_rejected() -> None:
    text = cursor.encode(KEY, SAMPLE)
    for index in range(len(text)):
        for replacement in ("A", "_", "."):
            if text[index] == replacement:
                continue
            tampered = text[:index] + replacement + text[index + 1:]
            with pytest.raises(CursorInvalid):
                cursor.decode(KEY, tampered)


def test_another_key_or_version_or_garbage_is_rejected() -> None:
    text = cursor.encode(KEY, SAMPLE)
    for bad in (text.replace("v1.", "v2.", 1), "", "v1..", "garbage", text + "x"):
        with pytest.raises(CursorInvalid):
            cursor.decode(KEY, bad)
    with pytest.raises(CursorInvalid):
        cursor.decode(bytes(32), text)
