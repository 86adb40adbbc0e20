"""Cursor integrity beyond single changed characters (P07; written against the surviving mutants
of reference/domain/cursor.py, docs/mutation.md): memory cursors, the kind that keeps feed and
memory cursors apart, one spelling per cursor, payloads of every length, immutable values."""

from __future__ import annotations

import dataclasses

import pytest

from waypost.reference.domain import cursor
from waypost.reference.domain.errors import CursorInvalid

KEY = bytes(range(32))
FEED = cursor.FeedCursor("s1", "alice", "alice-inbox", 3, "ab" * 32, "cd" * 32, 41)
MEMORY = cursor.MemoryCursor("s1", "alice", "notes", 4, True, "item-9")


def test_a_memory_cursor_round_trips_and_any_changed_character_is_rejected() -> None:
    text = cursor.encode(KEY, MEMORY)
    assert cursor.decode_memory(KEY, text) == MEMORY
    for index in range(len(text)):
        tampered = text[:index] + ("B" if text[index] == "A" else "A") + text[index + 1:]
        with pytest.raises(CursorInvalid):
            cursor.decode_memory(KEY, tampered)
    with pytest.raises(CursorInvalid):
        cursor.decode_memory(bytes(32), text)


def test_a_cursor_of_one_kind_is_never_read_as_the_other() -> None:
    """Even signed with the right key and shaped like the other kind's fields."""
    with pytest.raises(CursorInvalid):
        cursor.decode_memory(KEY, cursor.encode(KEY, FEED))
    with pytest.raises(CursorInvalid):
        cursor.decode(KEY, cursor.encode(KEY, MEMORY))
    with pytest.raises(CursorInvalid):
        cursor.decode(KEY, cursor.encode(KEY, dataclasses.replace(FEED, kind="memory")))
    with pytest.raises(CursorInvalid):
        cursor.decode_memory(KEY, cursor.encode(KEY, dataclasses.replace(MEMORY, kind="feed")))


@pytest.mark.parametrize("sample", [FEED, MEMORY], ids=["feed", "memory"])
def test_a_cursor_has_one_spelling(sample: cursor.FeedCursor | cursor.MemoryCursor) -> None:
    """Other spellings of the same bytes (characters the decoder skips, extra padding) and an
    extra part are refused: one cursor, one text."""
    read = cursor.decode if isinstance(sample, cursor.FeedCursor) else cursor.decode_memory
    version, payload, tag = cursor.encode(KEY, sample).split(".")
    spellings = [f"{version}.****{payload}.{tag}", f"{version}.{payload}====.{tag}",
                 f"{version}.{payload}.****{tag}", f"{version}.{payload}.{tag}====",
                 f"{version}.{payload}.{tag}.", f"{version}.{payload}.{tag}.{tag}"]
    for spelling in spellings:
        with pytest.raises(CursorInvalid):
            read(KEY, spelling)


def test_cursors_of_every_payload_length_round_trip() -> None:
    """Base64 without padding: every length modulo 4 of the encoded parts decodes."""
    for extra in range(8):
        feed = dataclasses.replace(FEED, consumer_id="c" * (1 + extra), position=10**extra)
        assert cursor.decode(KEY, cursor.encode(KEY, feed)) == feed
        memory = dataclasses.replace(MEMORY, position="p" * (1 + extra))
        assert cursor.decode_memory(KEY, cursor.encode(KEY, memory)) == memory


def test_a_decoded_cursor_is_an_immutable_value() -> None:
    for sample in (FEED, MEMORY):
        assert {sample, dataclasses.replace(sample)} == {sample}
        with pytest.raises(dataclasses.FrozenInstanceError):
            sample.position = 0
