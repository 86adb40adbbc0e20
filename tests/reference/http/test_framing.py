"""The head scan (WP-LOAD-8) gives the verdicts of the rules as regular expressions, their most
direct statement, on heads built from the bytes the rules are about."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from waypost.reference.http.framing import HeadScan, ambiguous, head_end

#: The rules as one expression each (protocol.md WP-LOAD-8; RFC 9112 §2.2, §5.2, §6.3).
_RULES = re.compile(rb"(?<!\r)\n|\n[ \t]|\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
                    rb"|\ncontent-length:[ \t]*(?:0[0-9]|[^\r\n]*,)", re.IGNORECASE)
_LENGTHS = re.compile(rb"\ncontent-length:", re.IGNORECASE)
_END = re.compile(rb"\r?\n\r?\n")

_PIECES = st.sampled_from([b"a", b"X-A", b": ", b" ", b"\t", b"\r", b"\n", b"\r\n", b"0", b"7",
                           b",", b"\x1b", b"\x7f", b"\x00", b"\ncontent-length:",
                           b"\r\nContent-Length: ", b"\r\n\r\n"])


def _by_rules(head: bytes) -> bool:
    return _RULES.search(head) is not None or len(_LENGTHS.findall(head)) > 1


@given(st.lists(_PIECES, max_size=30).map(b"".join), st.integers(min_value=0, max_value=200))
def test_the_scan_agrees_with_the_rules(data: bytes, limit: int) -> None:
    found = _END.search(data)
    assert head_end(data) == (-1 if found is None else found.end())
    within = found is not None and found.end() <= limit
    assert head_end(data, limit) == (found.end() if within and found else -1)
    if found is not None:
        head = data[:found.end()]
        assert ambiguous(head) == _by_rules(head)


@given(st.lists(_PIECES, max_size=30).map(b"".join), st.integers(min_value=1, max_value=8))
def test_a_head_fed_in_pieces_gets_the_verdict_of_the_whole(data: bytes, size: int) -> None:
    whole = b"GET / HTTP/1.1\r\nHost: a" + data + b"\r\n\r\n"
    scan = HeadScan()
    for at in range(0, len(whole), size):
        scan.feed(whole[at:at + size])
    end = _END.search(whole)
    assert end is not None
    assert scan.ambiguous == _by_rules(whole[:end.end()])


def test_a_clean_head_and_each_kind_of_ambiguity() -> None:
    clean = (b"POST /v1/messages HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
             b"Content-Length: 170\r\n\r\n")
    assert not ambiguous(clean)
    for broken in (clean.replace(b"\r\nHost", b"\nHost"),  # a bare LF
                   clean.replace(b"\r\nHost", b"\rHost"),  # a bare CR
                   clean.replace(b"\r\nHost: a", b"\r\nHost: a\r\n b"),  # a folded line
                   clean.replace(b"Host: a", b"Host: \x1b[2J"),  # a control character
                   clean.replace(b": 170", b": 0170"),  # a leading zero
                   clean.replace(b": 170", b": 170, 170"),  # a list
                   clean.replace(b"Host: a", b"content-length: 170")):  # twice
        assert ambiguous(broken), broken
