"""The value grammar of protocol.md §3 and the error codes of protocol.md §7, written for the kit
from the protocol text alone (the kit never imports the reference server).

``refusal(kind, value, field)`` says how a server must answer a value: ``None`` when it is valid,
else the :class:`Refusal` (code, HTTP status, ``details.field`` and, for a published limit,
``details.limit`` and ``details.max``). For example ``refusal("relative_path", "a/./b",
"items[0].path")`` is ``Refusal("INVALID_REQUEST", 400, "items[0].path")``.
``envelope_problems(status, body)`` lists what is wrong with an error answer: the kit's one
validator of the error envelope (the hostile checks, ``properties/hostile/probes.py``, use it). The
codes, statuses and required details come from the contract's data file
(:mod:`~waypost.properties.protocol.constants`). ``tests/properties/protocol/test_vectors.py`` holds both to
``conformance/vectors/validation.json`` and ``errors.json``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Re-exported: the codes with their statuses, required and paired details (WP-ERR-2, WP-ERR-3).
from waypost.properties.protocol.constants import PAIRED_DETAILS as PAIRED_DETAILS
from waypost.properties.protocol.constants import REQUIRED_DETAILS as REQUIRED_DETAILS
from waypost.properties.protocol.constants import STATUS as STATUS

MAX_REVISION = 2**53 - 1
MAX_SUBJECT_BYTES = 256
MAX_PATH_BYTES = 1024
MAX_CONTENT_TYPE_BYTES = 255

_OBJECT_ID = re.compile(r"[A-Za-z0-9_-]{1,96}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TOKEN = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_QUOTED = r'"(?:[ !\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"'
_CONTENT_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}(?: *; *{_TOKEN}=(?:{_TOKEN}|{_QUOTED}))*")


@dataclass(frozen=True)
class Refusal:
    """The answer a server must give to an invalid value."""

    code: str
    status: int
    field: str
    limit: str | None = None
    max: int | None = None


def _invalid(field: str) -> Refusal:
    return Refusal("INVALID_REQUEST", 400, field)


def _matches(pattern: re.Pattern[str], value: Any) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def object_id(value: Any, field: str) -> Refusal | None:
    """WP-VAL-4: 1–96 characters of ``[A-Za-z0-9_-]``."""
    return None if _matches(_OBJECT_ID, value) else _invalid(field)


def request_id(value: Any, field: str) -> Refusal | None:
    """WP-VAL-6: 1–128 characters of ``[A-Za-z0-9._:-]``."""
    return None if _matches(_REQUEST_ID, value) else _invalid(field)


def sha256(value: Any, field: str) -> Refusal | None:
    """WP-VAL-12: exactly 64 lowercase hex characters."""
    return None if _matches(_SHA256, value) else _invalid(field)


def revision(value: Any, field: str) -> Refusal | None:
    """WP-VAL-7: a JSON integer 0 … 2^53−1 (not a boolean, not ``1.0``)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REVISION:
        return None
    return _invalid(field)


def relative_path(value: Any, field: str) -> Refusal | None:
    """WP-VAL-15, WP-VAL-16: one spelling per file."""
    if not isinstance(value, str) or not value or len(value.encode("utf-8", "surrogatepass")) \
            > MAX_PATH_BYTES:
        return _invalid(field)
    if any(ord(char) < 0x20 for char in value) or "\\" in value:
        return _invalid(field)
    if any(segment in ("", ".", "..") for segment in value.split("/")):
        return _invalid(field)  # also a leading or trailing "/"
    return None


def subject(value: Any, field: str) -> Refusal | None:
    """WP-VAL-17: non-empty; over 256 bytes is the published limit ``subject_bytes``."""
    if not isinstance(value, str) or not value:
        return _invalid(field)
    if len(value.encode("utf-8", "surrogatepass")) > MAX_SUBJECT_BYTES:
        return Refusal("RESOURCE_LIMIT", 413, field, "subject_bytes", MAX_SUBJECT_BYTES)
    return None


def content_type(value: Any, field: str) -> Refusal | None:
    """WP-VAL-20: a media type of the strict grammar of protocol.md §3.6, 1–255 bytes."""
    if not isinstance(value, str) or len(value.encode("utf-8", "surrogatepass")) \
            > MAX_CONTENT_TYPE_BYTES:
        return _invalid(field)
    return None if _CONTENT_TYPE.fullmatch(value) else _invalid(field)


#: The checks by the names the vectors use.
KINDS: dict[str, Callable[[Any, str], Refusal | None]] = {
    "object_id": object_id, "request_id": request_id, "sha256": sha256, "revision": revision,
    "relative_path": relative_path, "subject": subject, "content_type": content_type,
}


def refusal(kind: str, value: Any, field: str) -> Refusal | None:
    """How a server must answer ``value`` given as ``field``: ``None`` if it is valid."""
    return KINDS[kind](value, field)


def envelope_problems(status: int, body: Any) -> list[str]:
    """What breaks WP-ERR-1 to WP-ERR-3 (and so WP-HTTP-3) in an error answer of ``status``
    whose JSON body is ``body`` (an empty list: nothing): exactly one member ``error``, holding
    a ``code`` of §7, a string ``message`` and an object ``details``; the status the code
    fixes; the details the code requires, and ``limit`` with ``max`` or neither."""
    if not isinstance(body, dict) or set(body) != {"error"} or not isinstance(body["error"], dict):
        return ["the body is not {\"error\": {...}}"]
    error = body["error"]
    problems = [f"error.{key} is missing or not a {kind.__name__}"
                for key, kind in (("code", str), ("message", str), ("details", dict))
                if not isinstance(error.get(key), kind)]
    if problems:
        return problems
    code = error["code"]
    if code not in STATUS:
        return [f"unknown error code {code[:60]!r}"]
    if STATUS[code] != status:
        problems.append(f"{code} answered with status {status}, not {STATUS[code]}")
    details = error["details"]
    problems += [f"{code} without details.{key}" for key in REQUIRED_DETAILS.get(code, ())
                 if key not in details]
    paired = PAIRED_DETAILS.get(code, ())
    if len({key in details for key in paired}) > 1:
        problems.append(f"{code} with only some of {', '.join(f'details.{k}' for k in paired)}")
    return problems
