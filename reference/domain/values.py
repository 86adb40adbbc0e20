"""Validating constructors for the value types of protocol.md §3.

Each constructor takes an untrusted JSON value and the field path it came from, and returns the
value or raises :class:`InvalidRequest` naming that field, e.g.
``object_id("thr_1", "thread.thread_id") == "thr_1"``.
"""

from __future__ import annotations

import functools
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any, NewType

from waypost.reference.domain.canonical import canonical_json
from waypost.reference.domain.entropy import random_bytes
from waypost.reference.domain.errors import InvalidRequest, ResourceLimit

ObjectId = NewType("ObjectId", str)
RequestId = NewType("RequestId", str)
RelativePath = NewType("RelativePath", str)

MAX_SAFE_INTEGER = 2**53 - 1  # the integers every JSON parser keeps exact (I-JSON)
MAX_REVISION = MAX_SAFE_INTEGER
MAX_SEQUENCE = 2**63 - 1
MAX_SUBJECT_BYTES = 256
MAX_METADATA_BYTES = 4096
MAX_PATH_BYTES = 1024

#: The grammar of ids, shared with the OpenAPI document.
OBJECT_ID_PATTERN = "[A-Za-z0-9_-]{1,96}"
REQUEST_ID_PATTERN = "[A-Za-z0-9._:-]{1,128}"
#: Entries per dimension of a consumer filter.
FILTER_ENTRIES = 100
#: UTF-8 bytes of a blob's ``content_type`` and ``filename``.
BLOB_TEXT_BYTES = 255

_TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_QUOTED = '"(?:[ !#-\\[\\]-~]|\\\\[ -~])*"'
#: A media type in the strict form of protocol.md §3.6 (RFC 9110 §8.3: tokens, optional
#: ``; name=value`` parameters, value a token or a quoted string; ASCII, no controls), shared
#: with the OpenAPI document. Its 1-255 bytes are checked apart.
CONTENT_TYPE_PATTERN = f"{_TOKEN}/{_TOKEN}(?: *; *{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))*"

_OBJECT_ID = re.compile(OBJECT_ID_PATTERN)
_CONTENT_TYPE = re.compile(CONTENT_TYPE_PATTERN)
_PATH_FORBIDDEN = re.compile("[\\\\\x00-\x1f]")
_LINE_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f]")
_BODY_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_REQUEST_ID = re.compile(REQUEST_ID_PATTERN)
_SEQUENCE = re.compile(r"0|[1-9][0-9]{0,18}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")


def _bad(field: str, message: str) -> InvalidRequest:
    return InvalidRequest(message, field=field)


def string(value: Any, field: str) -> str:
    """A JSON string."""
    if not isinstance(value, str):
        raise _bad(field, f"{field} must be a string")
    return value


def one_line(text: str, field: str) -> str:
    """``text`` if it holds no C0 or C1 control and no DEL (protocol.md WP-VAL-24)."""
    if _LINE_FORBIDDEN.search(text):
        raise _bad(field, f"{field} must be one line of text, without control characters")
    return text


def line(value: Any, field: str, high: int) -> str:
    """One line of text of 1 to ``high`` UTF-8 bytes (WP-VAL-24), e.g. a display name."""
    text = string(value, field)
    if not text or len(text.encode()) > high:
        raise _bad(field, f"{field} must be 1-{high} bytes")
    return one_line(text, field)


def body_text(text: str, field: str) -> str:
    """``text`` if it holds no C0 control but tab, LF and CR (protocol.md WP-VAL-25)."""
    if _BODY_FORBIDDEN.search(text):
        raise _bad(field, f"{field} must not hold control characters other than tab, LF "
                          "and CR")
    return text


def object_id(value: Any, field: str) -> ObjectId:
    """An object id: ASCII ``[A-Za-z0-9_-]``, 1–96 characters."""
    if not isinstance(value, str) or not _OBJECT_ID.fullmatch(value):
        raise _bad(field, f"{field} must be 1-96 characters of [A-Za-z0-9_-]")
    return ObjectId(value)


def request_id(value: Any, field: str = "request_id") -> RequestId:
    """A request id: ASCII ``[A-Za-z0-9._:-]``, 1–128 characters."""
    if not isinstance(value, str) or not _REQUEST_ID.fullmatch(value):
        raise _bad(field, f"{field} must be 1-128 characters of [A-Za-z0-9._:-]")
    return RequestId(value)


def new_id(prefix: str) -> ObjectId:
    """An unguessable server-generated id with a type prefix, e.g. ``msg_018f3c…`` (WP-VAL-5):
    the clock's milliseconds (48 bits), then 104 random bits, in lowercase hex.

    The clock goes first so that the ids of one moment are neighbours in every index they are
    keys of: a group of sends then writes a few index pages instead of one page per id per
    index (docs/performance.md). The random part alone is what makes an id unguessable."""
    stamp = (time.time_ns() // 1_000_000 % (1 << 48)).to_bytes(6)
    return ObjectId(f"{prefix}_{(stamp + random_bytes(13)).hex()}")


def relative_path(value: Any, field: str) -> RelativePath:
    """A relative path with one spelling per file (protocol.md §3.4): non-empty UTF-8 ≤ 1024
    bytes; no leading or trailing ``/``, empty, ``.`` or ``..`` segment, ``\\``, NUL or other
    C0 control (DEL and non-ASCII are allowed)."""
    text = string(value, field)
    if not text or len(text.encode()) > MAX_PATH_BYTES:
        raise _bad(field, f"{field} must be 1-{MAX_PATH_BYTES} bytes")
    if _PATH_FORBIDDEN.search(text):
        raise _bad(field, f"{field} must not contain a backslash or a control character")
    if text.startswith("/"):
        raise _bad(field, f"{field} must be relative")
    if any(segment in ("", ".", "..") for segment in text.split("/")):
        raise _bad(field, f"{field} must not contain empty, '.' or '..' segments")
    return RelativePath(text)


def is_content_type(text: str) -> bool:
    """Whether ``text`` is a media type of protocol.md §3.6 (always sendable as a header)."""
    return len(text) <= BLOB_TEXT_BYTES and _CONTENT_TYPE.fullmatch(text) is not None


def content_type(value: Any, field: str = "content_type") -> str:
    """A blob's content type: a strict media type of 1-255 ASCII bytes, kept as given, e.g.
    ``text/plain; charset=utf-8``."""
    text = string(value, field)
    if not is_content_type(text):
        raise _bad(field, f"{field} must be a media type (type/subtype; name=value) of 1-"
                          f"{BLOB_TEXT_BYTES} bytes")
    return text


def over_limit(field: str, limit: str, high: int) -> ResourceLimit:
    """A value past a published limit (protocol.md §7): ``413 RESOURCE_LIMIT``."""
    return ResourceLimit(f"{field} is over the published limit of {high}", field=field,
                         limit=limit, max=high)


def subject(value: Any, field: str = "subject") -> str:
    """A subject: non-empty UTF-8, at most 256 bytes (more is RESOURCE_LIMIT), one line."""
    text = string(value, field)
    if not text:
        raise _bad(field, f"{field} must not be empty")
    if len(text.encode()) > MAX_SUBJECT_BYTES:
        raise over_limit(field, "subject_bytes", MAX_SUBJECT_BYTES)
    return one_line(text, field)


def metadata(value: Any, field: str = "metadata") -> dict[str, Any]:
    """A JSON object of at most 4096 bytes in canonical form. One far larger is refused after
    about 4096 of its elements are looked at (:func:`_canonical_at_least`), never encoded."""
    if not isinstance(value, dict):
        raise _bad(field, f"{field} must be a JSON object")
    if _canonical_at_least(value, MAX_METADATA_BYTES + 1) > MAX_METADATA_BYTES:
        raise over_limit(field, "metadata_bytes", MAX_METADATA_BYTES)
    try:
        size = len(canonical_json(value))
    except ValueError as exc:
        raise _bad(field, f"{field} is not canonicalisable JSON: {exc}") from None
    if size > MAX_METADATA_BYTES:
        raise over_limit(field, "metadata_bytes", MAX_METADATA_BYTES)
    return value


def _canonical_at_least(value: Any, enough: int) -> int:
    """A lower bound of the length of ``value``'s canonical JSON, counted until it reaches
    ``enough``: each string its characters and quotes, each member its key, quotes, colon and
    commas, each number, literal or container at least one character. Iterative and bounded:
    every element counts at least one, so at most ``enough`` elements are visited."""
    total, stack = 0, [value]
    while stack and total < enough:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 1 + len(item)  # the braces and the commas between members
            for key, member in item.items():
                total += len(key) + 3 if isinstance(key, str) else 3  # quotes and colon
                stack.append(member)
                if total >= enough:
                    break
        elif isinstance(item, list):
            total += 2
            stack.extend(item[:enough])
            total += max(len(item) - 1, 0)
        else:
            total += 1
    return total


def integer(value: Any, field: str, low: int, high: int) -> int:
    """A JSON integer in ``[low, high]`` (booleans are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(field, f"{field} must be an integer from {low} to {high}")
    return value


def revision(value: Any, field: str = "revision") -> int:
    """A revision: JSON integer 0 … 2^53−1."""
    return integer(value, field, 0, MAX_REVISION)


def sequence_text(value: int) -> str:
    """A sequence as the protocol shows it: a decimal string."""
    return str(value)


def sequence(value: Any, field: str) -> int:
    """A sequence given as a decimal string, 0 … 2^63−1 (0 is the start position)."""
    if not isinstance(value, str) or not _SEQUENCE.fullmatch(value) or int(value) > MAX_SEQUENCE:
        raise _bad(field, f"{field} must be a decimal string of an integer 0 to 2^63-1")
    return int(value)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST = datetime(1, 1, 2, tzinfo=UTC)
_LAST = datetime(9999, 12, 31, tzinfo=UTC)


def timestamp(value: Any, field: str) -> int:
    """An RFC 3339 timestamp between the years 0001 and 9999 in UTC, returned as UTC
    milliseconds since the epoch (sub-millisecond digits are dropped)."""
    text = string(value, field)
    if not _TIMESTAMP.fullmatch(text):
        raise _bad(field, f"{field} must be an RFC 3339 timestamp")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise _bad(field, f"{field} must be an RFC 3339 timestamp") from None
    if not _FIRST <= parsed <= _LAST:
        raise _bad(field, f"{field} must be within the years 0001 to 9999")
    return (parsed - _EPOCH) // timedelta(milliseconds=1)


def format_timestamp(ms: int) -> str:
    """UTC milliseconds → ``2026-11-30T02:29:59.123Z`` (exact integer arithmetic)."""
    return f"{_up_to_second(ms // 1000)}.{ms % 1000:03d}Z"


@functools.lru_cache(maxsize=64)
def _up_to_second(seconds: int) -> str:
    """``2026-11-30T02:29:59`` (most answers of one moment share their second)."""
    moment = _EPOCH + timedelta(seconds=seconds)
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}")


def sha256_hex(value: Any, field: str) -> bytes:
    """64 lowercase hex characters → 32 bytes."""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise _bad(field, f"{field} must be 64 lowercase hex characters")
    return bytes.fromhex(value)
