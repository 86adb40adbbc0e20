"""Server-generated ids: the clock's milliseconds, then 104 bits from a pooled CSPRNG; distinct,
in the order they were made, never repeated by a fork."""

from __future__ import annotations

import os
import re
import time

from waypost.reference.domain.entropy import BLOCK, random_bytes
from waypost.reference.domain.values import OBJECT_ID_PATTERN, new_id


def test_ids_are_distinct_across_many_refills_and_keep_their_grammar() -> None:
    ids = [new_id("msg") for _ in range(3 * BLOCK // 16)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(OBJECT_ID_PATTERN, i) for i in ids)
    assert {len(i) for i in ids} == {len("msg_") + 38}


def test_ids_begin_with_the_clock_so_later_ids_sort_after() -> None:
    before = time.time_ns() // 1_000_000
    made = [new_id("fi") for _ in range(20_000)]
    after = time.time_ns() // 1_000_000
    stamps = [int(i[3:15], 16) for i in made]
    assert all(before <= stamp <= after for stamp in stamps)
    # an id of a later millisecond sorts after (random parts order a tie)
    later = [k for k in range(len(made) - 1) if stamps[k] < stamps[k + 1]]
    assert later
    assert all(made[k] < made[k + 1] for k in later)


def test_a_forked_child_does_not_repeat_the_parents_bytes() -> None:
    random_bytes(16)  # the pool holds unused bytes that a copied pool would hand out again
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the child reports its next bytes and ends at once
        os.write(writer, random_bytes(16))
        os._exit(0)
    os.close(writer)
    childs = os.read(reader, 16)
    os.close(reader)
    os.waitpid(child, 0)
    assert len(childs) == 16
    assert childs != random_bytes(16)
