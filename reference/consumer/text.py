"""Text from a server, made safe for a terminal: control characters are shown, never sent.

A subject, a body, an id or an error code comes from whoever wrote it or from the server. Raw,
an ESC sequence could clear the screen or rewrite the title, CR could overwrite a line, and a
bidi override could show a line in another order than it is stored. Every such character is
written as an escape instead (``\\x1b``, ``\\r``, ``\\u202e``)."""

from __future__ import annotations

import re

#: C0 (but for tab and newline, handled by :func:`visible`), DEL, C1, and the bidi controls:
#: marks, embeddings, overrides and isolates.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                       "\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character escaped; newlines and tabs kept only where
    ``lines`` (a message body), else escaped too (one line of a table or an error)."""
    shown = _CONTROLS.sub(_escape, text)
    if not lines:
        shown = shown.replace("\t", "\\t").replace("\n", "\\n")
    return shown
