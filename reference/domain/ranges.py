"""Byte ranges of a blob download (RFC 9110 §14): one range of a ``Range`` header, resolved
against the blob's size, and the ``If-Range`` condition on its ETag.

Only a single ``bytes`` range is served. A header that is not one well-formed ``bytes`` range
(another unit, bad syntax, a last position before the first, several ranges) is ignored, as
RFC 9110 §14.2 lets a server do: the answer is the whole blob.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"([0-9]*)-([0-9]*)")
_UNIT = re.compile(r"bytes=", re.IGNORECASE)
#: Positions of more digits (leading zeros aside) are past any blob; reading them as this
#: bound keeps them clear of int's limit on the digits it parses.
_DIGITS = 18


@dataclass(frozen=True)
class Wanted:
    """One range as asked: ``first``-``last`` (``last`` None: to the end), or the last
    ``suffix`` bytes (``first`` None)."""

    first: int | None
    last: int | None = None
    suffix: int | None = None


@dataclass(frozen=True)
class Span:
    """Bytes ``start`` to ``end`` inclusive of a blob of ``size`` bytes."""

    start: int
    end: int
    size: int

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self) -> str:
        return f"bytes {self.start}-{self.end}/{self.size}"


class Unsatisfiable(Exception):
    """The range starts at or past the end of the blob (or asks for no bytes): ``416``."""


def _position(digits: str) -> int:
    significant = digits.lstrip("0")
    return 10**_DIGITS if len(significant) > _DIGITS else int(significant or "0")


def parse(header: str | None) -> Wanted | None:
    """The one byte range of a ``Range`` header, or None when there is none to serve (absent,
    malformed, another unit, several ranges)."""
    if header is None:
        return None
    unit = _UNIT.match(header)
    if unit is None:
        return None
    specs = [spec.strip(" \t") for spec in header[unit.end():].split(",")]
    specs = [spec for spec in specs if spec]  # empty list elements are allowed (RFC 9110 §5.6.1)
    if len(specs) != 1:
        return None
    found = _SPEC.fullmatch(specs[0])
    if found is None or not (found[1] or found[2]):
        return None
    if not found[1]:
        return Wanted(None, suffix=_position(found[2]))
    first = _position(found[1])
    last = _position(found[2]) if found[2] else None
    if last is not None and last < first:
        return None  # invalid: RFC 9110 §14.1.1
    return Wanted(first, last)


def resolve(wanted: Wanted, size: int) -> Span | None:
    """The bytes ``wanted`` selects of a blob of ``size`` bytes; None for the whole blob (a
    suffix range of an empty blob, which no ``Content-Range`` can state)."""
    if wanted.first is None:
        suffix = wanted.suffix or 0
        if suffix == 0:
            raise Unsatisfiable
        if size == 0:
            return None
        return Span(max(size - suffix, 0), size - 1, size)
    if wanted.first >= size:
        raise Unsatisfiable
    last = size - 1 if wanted.last is None else min(wanted.last, size - 1)
    return Span(wanted.first, last, size)


def if_range_holds(if_range: str | None, etag: str) -> bool:
    """``If-Range`` permits the range: absent, or the same strong ETag (quoted). A date or a
    weak or other tag does not (the reference sends no ``Last-Modified``)."""
    return if_range is None or if_range.strip(" \t") == f'"{etag}"'
