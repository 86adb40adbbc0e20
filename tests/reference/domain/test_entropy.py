"""Server-generated ids draw from a pooled CSPRNG: distinct, 128 bits, never repeated by a fork."""

from __future__ import annotations

import os
import re

from waypost.reference.domain.entropy import BLOCK, random_bytes
from waypost.reference.domain.values import OBJECT_ID_PATTERN, new_id


def test_ids_are_distinct_across_many_refills_and_keep_their_grammar() -> None:
    ids = [new_id("msg") for _ in range(3 * BLOCK // 16)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(OBJECT_ID_PATTERN, i) and len(i) == len("msg_") + 22 for i in ids)


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
