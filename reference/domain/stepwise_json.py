"""JSON text parsed in bounded steps, to the very value and refusals of one ``json.loads``.

CPython's JSON parser holds the interpreter lock for a whole document: 1 MiB of ``[{},…]`` is
25–75 ms in which no other request runs, on a thread as on the event loop. :func:`steps`
parses with the same decoder (the same hooks, numbers and strings), but a bounded slice at a
time, and yields between slices:

- a run of elements of an array (members of an object) that fits in a window of
  :data:`WINDOW` characters is parsed in one call, as ``[`` + the run + ``]``, cut at a comma:
  the cut parses only where the comma stands between elements (a cut inside a string, or
  inside a nested value, leaves something unclosed), so the elements are the document's own;
- an element that no window holds is entered, its elements parsed the same way;
- a scalar is parsed alone (a number is at most a few thousand digits; a string, however
  long, is one pass of the C scanner).

Each step parses at most a few windows. An object's members are handed to the decoder's hook
at its end, as the decoder does (a run's own members go through the hook as they are parsed
too); :data:`MAX_DEPTH` bounds how deep entering goes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Generator
from typing import Any

#: Characters a step parses in one call, at most.
WINDOW = 2 * 1024
#: Cuts tried per step, each at an earlier comma, before the element is entered.
CUTS = 4
#: Containers larger than a window entered inside one another, at most.
MAX_DEPTH = 128
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace: the decoder's own

Steps = Generator[None, None, Any]


class Refused(ValueError):
    """Not JSON text this parser reads (``json.loads`` raises a ``ValueError`` too)."""


def steps(text: str, decoder: json.JSONDecoder, check: Callable[[Any], None] | None = None,
          window: int = WINDOW) -> Steps:
    """Parse ``text`` as ``decoder.decode`` would, yielding between bounded steps; the value
    is the generator's return value. Invalid text raises what the decoder (or its hooks)
    raise, or :class:`Refused`. ``check`` sees every piece parsed in one call (a run, a
    scalar, a small value) before it is used."""
    reader = _Reader(text, decoder, check or (lambda piece: None), window)
    value, end = yield from reader.value(reader.skip(0), 0)
    if reader.skip(end) != len(text):
        raise Refused("extra data after the JSON value")
    return value


class _Reader:
    def __init__(self, text: str, decoder: json.JSONDecoder, check: Callable[[Any], None],
                 window: int) -> None:
        self.text, self.window, self.check = text, window, check
        self.raw_decode = decoder.raw_decode
        pairs_hook, hook = decoder.object_pairs_hook, decoder.object_hook
        self.assemble: Callable[[list[tuple[str, Any]]], Any] = (
            pairs_hook if pairs_hook is not None
            else (lambda pairs: hook(dict(pairs))) if hook is not None else dict)

    def decode(self, text: str, at: int) -> tuple[Any, int]:
        piece, end = self.raw_decode(text, at)
        self.check(piece)
        return piece, end

    def skip(self, at: int) -> int:
        found = _WHITESPACE.match(self.text, at)
        return found.end() if found else at

    def char(self, at: int) -> str:
        return self.text[at] if at < len(self.text) else ""

    def value(self, at: int, depth: int) -> Generator[None, None, tuple[Any, int]]:
        """The value at ``at`` (no whitespace before it) and where it ends."""
        first = self.char(at)
        if len(self.text) - at <= self.window or first not in "[{":
            return self.decode(self.text, at)  # bounded by the window, or a scalar
        if depth >= MAX_DEPTH:
            raise Refused(f"nested deeper than {MAX_DEPTH} large values")
        if first == "[":
            return (yield from self._array(at, depth + 1))
        return (yield from self._object(at, depth + 1))

    def _array(self, at: int, depth: int) -> Generator[None, None, tuple[list[Any], int]]:
        items: list[Any] = []
        at = self.skip(at + 1)
        if self.char(at) == "]":
            return items, at + 1
        while True:
            run, at = self._run(at, "[", "]")
            if run is None:
                element, at = yield from self.value(at, depth)
                items.append(element)
            else:
                items.extend(run)
            yield
            at = self._after(at, "]")
            if at < 0:
                return items, -at

    def _object(self, at: int, depth: int) -> Generator[None, None, tuple[Any, int]]:
        """Its members collected in order and handed to the decoder's hook at its end, as
        the decoder does (a repeated name is the hook's to refuse)."""
        pairs: list[tuple[str, Any]] = []
        at = self.skip(at + 1)
        if self.char(at) == "}":
            return self.assemble(pairs), at + 1
        while True:
            run, at = self._run(at, "{", "}")
            if run is None:
                key, at = self._key(at)
                member, at = yield from self.value(self.skip(at), depth)
                pairs.append((key, member))
            else:
                pairs.extend(run.items())
            yield
            at = self._after(at, "}")
            if at < 0:
                return self.assemble(pairs), -at

    def _key(self, at: int) -> tuple[str, int]:
        if self.char(at) != '"':
            raise Refused("expecting a member name")
        key, at = self.decode(self.text, at)
        at = self.skip(at)
        if self.char(at) != ":":
            raise Refused("expecting ':' after a member name")
        return str(key), at + 1

    def _after(self, at: int, close: str) -> int:
        """After an element: the next element's start, or minus the end past ``close``."""
        at = self.skip(at)
        found = self.char(at)
        if found == ",":
            return self.skip(at + 1)
        if found == close:
            return -(at + 1)
        raise Refused(f"expecting ',' or '{close}'")

    def _run(self, at: int, opening: str, close: str) -> tuple[Any, int]:
        """The elements (members) from ``at`` up to a comma within a window, parsed in one
        call, and where they end (at that comma); ``(None, at)`` where no cut parses whole."""
        text = self.text
        cut = min(len(text), at + self.window)
        for _ in range(CUTS):
            cut = text.rfind(",", at + 1, cut)
            if cut < 0:
                break
            piece = opening + text[at:cut] + close
            try:
                run, end = self.raw_decode(piece, 0)
            except ValueError:  # the cut is inside an element: try an earlier one
                continue
            if end == len(piece):  # else the run closed before the cut: not its elements
                self.check(run)
                return run, cut
        return None, at
