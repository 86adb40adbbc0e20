"""Request framing that h11 accepts but two HTTP parsers could read two ways (protocol.md
WP-LOAD-8; RFC 9112 §6.1 and §6.3): refused with ``400``, or answered and then closed.

- :func:`refusal` reads a parsed request's headers: ``Transfer-Encoding`` together with
  ``Content-Length``, or ``Transfer-Encoding`` in HTTP/1.0, is refused.
- :class:`HeadScan` reads the raw bytes of a request head as they arrive: a bare LF or CR, an
  obsolete line fold, a control character, a repeated ``Content-Length`` (which h11 merges),
  one with a list or leading zeros. Such a request is answered, and the connection closes after
  the answer, so that nothing pipelined behind it is read.
"""

from __future__ import annotations

import re
from typing import Any

#: The control characters a head must not hold: all but HT, LF and CR.
_CONTROLS = bytes([*range(0x00, 0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f])
_LENGTH = b"\ncontent-length:"
#: A Content-Length with a leading zero or a list (searched in the lower-cased head).
_LENGTH_SUSPECT = re.compile(rb"\ncontent-length:[ \t]*(?:0[0-9]|[^\r\n]*,)")
#: Past this, a head is h11's to refuse (its own limit is 16 KiB).
MAX_HEAD_BYTES = 65536


def refusal(scope: Any) -> str | None:
    """Why this request's framing is ambiguous enough to refuse, or None."""
    chunked = sized = False
    for name, _ in scope["headers"]:
        if name == b"transfer-encoding":
            chunked = True
        elif name == b"content-length":
            sized = True
    if chunked and sized:
        return "a request must not carry both Transfer-Encoding and Content-Length"
    if chunked and scope["http_version"] == "1.0":
        return "an HTTP/1.0 request must not carry Transfer-Encoding"
    return None


class HeadScan:
    """What the raw bytes of one request head show, fed piece by piece as they arrive. The
    head is kept only until its blank line arrives (h11 refuses heads over 16 KiB first)."""

    __slots__ = ("_done", "_head", "ambiguous")

    def __init__(self) -> None:
        self.ambiguous = False
        self._head = b""
        self._done = False

    def feed(self, data: bytes) -> None:
        """Scan the head once its blank line has arrived; bytes after it are not read."""
        if self._done:
            return
        head = self._head + data if self._head else data
        end = head_end(head, MAX_HEAD_BYTES + 4)
        if end < 0:
            self._head = head
            self._done = len(head) > MAX_HEAD_BYTES
            return
        self._head, self._done = b"", True
        self.ambiguous = ambiguous(head[:end])


def head_end(data: bytes, limit: int | None = None) -> int:
    r"""Where the head ends: after its first blank line (``\r?\n\r?\n``) that ends within
    the first ``limit`` bytes (all of them by default), or -1. The bare form is looked for only
    before the first CRLF one: a body that follows the head is not scanned (a 256 KiB read
    of a large post was searched twice over, ~0.2 ms each)."""
    end = len(data) if limit is None else min(limit, len(data))
    crlf = data.find(b"\n\r\n", 0, end)
    bare = data.find(b"\n\n", 0, end if crlf < 0 else crlf + 1)
    if bare >= 0:
        return bare + 2
    return -1 if crlf < 0 else crlf + 3


def ambiguous(head: bytes) -> bool:
    """Whether a request head (up to its blank line) has a bare LF or CR, a folded line, a
    control character other than HT, or a Content-Length repeated, listed or with a leading
    zero. Byte counts and searches in C: every request's head passes here (a single regex of
    these alternatives cost 12 µs per head, these 3)."""
    lines = head.count(b"\r\n")  # pairs cannot overlap: equal counts mean none is bare
    if head.count(b"\n") != lines or head.count(b"\r") != lines:
        return True
    if len(head.translate(None, _CONTROLS)) != len(head):
        return True
    if b"\n " in head or b"\n\t" in head:
        return True
    lower = head.lower()
    lengths = lower.count(_LENGTH)
    return lengths > 1 or (lengths == 1 and _LENGTH_SUSPECT.search(lower) is not None)
