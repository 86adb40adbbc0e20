"""A deployment's answers are untrusted input: what the kit does with them before they reach a
terminal, a report, a replay file or a URL (docs/spec.md, "The kit's own limits").

- :func:`visible`: text with every control character shown as an escape, never emitted
  (:func:`visible_lines`: the same, line breaks kept);
- :func:`path_id`: an id checked against the id grammar (WP-VAL-4) and percent-encoded;
- :func:`bad_segment`: a path the kit is about to request, segment by segment;
- :func:`excerpt`: a bounded excerpt of a value, for traces, evidence and replay files.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

#: Format characters that reorder or break what a terminal shows: bidi embeddings, overrides
#: and isolates, the marks, and the Unicode line and paragraph separators.
_FORMAT = frozenset("\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
                    "\u2066\u2067\u2068\u2069")
#: An object id (docs/protocol.md WP-VAL-4).
ID = re.compile(r"[A-Za-z0-9_-]{1,96}")
#: A path segment the kit may send: an object id, a request id (WP-VAL-6), an operation
#: (``message.send``) or a revision number.
SEGMENT = re.compile(r"[A-Za-z0-9._:-]{1,128}")
#: Characters of an excerpt: a trace's answer, a piece of evidence, a replay's message.
EXCERPT_CHARS = 2000


def _shown(char: str) -> str:
    code = ord(char)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"
    if char in _FORMAT or 0xD800 <= code <= 0xDFFF:  # a lone surrogate cannot even be encoded
        return f"\\u{code:04x}"
    return char


def visible(text: str) -> str:
    """``text`` with C0, DEL, C1 (ESC and so every escape sequence with it), the bidi and
    line-breaking format characters and lone surrogates written as ``\\x1b`` or ``\\u202e``:
    safe to print as one line of a terminal, a Markdown table or an XML attribute."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(_shown(char) for char in text)


def visible_lines(text: str) -> str:
    """``text`` line by line through :func:`visible`: its line breaks kept, every other
    control character shown as an escape."""
    return "\n".join(visible(line) for line in text.split("\n"))


class BadId(ValueError):
    """A server-provided id that is not an object id: it never enters a URL."""


def path_id(value: object) -> str:
    """``value`` as a path segment: a string of the id grammar (WP-VAL-4), percent-encoded
    (a no-op for a valid id, kept so that no later change of the grammar opens a path)."""
    if not isinstance(value, str) or ID.fullmatch(value) is None:
        raise BadId(f"not an object id (WP-VAL-4): {visible(repr(value))[:200]}")
    return quote(value, safe="")


def bad_segment(path: str) -> str | None:
    """The first segment of ``path`` that the kit must not send: empty, ``.`` or ``..``, or
    outside :data:`SEGMENT` (so no ``?``, ``#`` or ``%``: the kit passes a query as
    parameters); None when every segment is sound."""
    for segment in path.split("/")[1:]:
        if segment in (".", "..") or SEGMENT.fullmatch(segment) is None:
            return segment
    return None


def excerpt(value: Any, chars: int = EXCERPT_CHARS) -> Any:
    """``value`` itself when its JSON form is at most ``chars`` characters; else the start of
    that form and its length, so that no trace or file holds a whole hostile answer."""
    if isinstance(value, bytes | bytearray):
        value = f"<{len(value)} bytes>"
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):  # circular or too deep to write out
        return {"excerpt": f"<{type(value).__name__} too deep to show>", "chars": 0}
    if len(text) <= chars:
        return value
    return {"excerpt": text[:chars], "chars": len(text)}
