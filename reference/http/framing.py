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

_SUSPECT = re.compile(rb"(?<!\r)\n|\n[ \t]|\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
                      rb"|\ncontent-length:[ \t]*(?:0[0-9]|[^\r\n]*,)", re.IGNORECASE)
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LENGTH = re.compile(rb"\ncontent-length:", re.IGNORECASE)
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
        end = _HEAD_END.search(head)
        if end is None:
            self._head = head
            self._done = len(head) > MAX_HEAD_BYTES
            return
        self._head, self._done = b"", True
        head = head[:end.end()]
        self.ambiguous = (_SUSPECT.search(head) is not None
                          or len(_LENGTH.findall(head)) > 1)
