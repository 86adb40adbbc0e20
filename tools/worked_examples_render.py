"""The text of ``docs/examples.md`` from the exchanges ``tools/worked_examples.py`` recorded: the
examples, stable placeholders for the values that change from run to run, and the index of
routes and codes. Pure functions of the recorded exchanges (no server here)."""

from __future__ import annotations

import json
import re
import textwrap
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

HEADER = """# Worked examples

Generated from a real run of the reference server by `tools/worked_examples.py`, and kept true by
`tests/project/test_worked_examples.py`, which fails when this file differs from a fresh run.
Every route of protocol.md §6.2 and §13 and every error code of §7 the reference answers has at
least one example below (the index says why a code is not shown), in the order of one scenario: a
space `demo` with the actors `alice` (its default actor), `bob` and `carol`, messages, a feed,
ACKs, a blob, a memory collection `notes`, lookups, errors.
Each example names the requirement ids it illustrates; the contract is protocol.md, not this
page. Answers show the members the reference sends: members beyond those protocol.md names are
the reference's own (a server MAY add members to every answer but the error envelope; §6.3),
and the texts of `message` in errors may change (WP-ERR-4).

Values that change from run to run are replaced by placeholders, the same value by the same
placeholder everywhere it appears: server-generated ids by `msg_example_1`, `fi_example_2`, …
(the type prefix kept); times by `<time 1>`, …; cursors, which are opaque, by `<cursor 1>`, …;
digests that depend on generated ids by `<sha256 1>`, …; secrets by `<token of alice>` and
`<admin token>`. Digests of known content and fingerprints of input without generated ids
(grant fingerprints; the submission fingerprints of a send to a new thread and of an empty
publish) are shown as they are, so a port can compare its own. Sequences are those of a fresh
database. Only the headers that matter are shown.
"""


#: A server-generated id: a type prefix, 48 bits of clock and 104 random bits in hex.
GENERATED_ID = re.compile(r"\b(msg|thr|fi|rcp|blb|upl|tok|sub|obj)_[0-9a-f]{38}\b")
#: A cursor: a format version, a payload and an integrity check (protocol.md §3.7).
CURSOR = re.compile(r"\bv1\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")
#: A time the server writes (WP-VAL-13).
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b")
#: A SHA-256 digest or fingerprint in hex.
DIGEST = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
#: The width of the text: notes wrap at it, JSON lists and objects that fit stay on one line.
WIDTH = 100
#: Reason phrases of RFC 9110 §15 (Python's own change between versions).
PHRASES = {200: "OK", 201: "Created", 206: "Partial Content", 400: "Bad Request",
           401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
           409: "Conflict", 410: "Gone", 413: "Content Too Large", 416: "Range Not Satisfiable",
           422: "Unprocessable Content", 500: "Internal Server Error", 503: "Service Unavailable"}
#: Answer headers worth showing, in the spelling shown.
SHOWN_HEADERS = {name.lower(): name for name in (
    "Content-Type", "Content-Range", "Accept-Ranges", "ETag", "Retry-After", "Waypost-Replayed",
    "Connection")}


def protocol_tables(text: str) -> tuple[list[str], list[tuple[str, int]]]:
    """The routes of §6.2 and §13 (the query left out) and the codes of §7 with their status."""
    def part(start: str, end: str) -> str:
        return text[text.index(start):text.index(end, text.index(start))]

    routes = [row.split("?")[0] for row in re.findall(
        r"^\| `([^`]+)` \|", part("### 6.2 Routes", "### 6.3"), re.M)]
    routes += re.findall(r"^\| `((?:GET|POST) /admin/v1/[^`]+)` \|",
                         part("## 13. ", "## 14. "), re.M)
    codes = [(code, int(status)) for code, status in re.findall(
        r"^\| `([A-Z_]+)` \| (\d{3}) \|", part("## 7. Errors", "## 8. "), re.M)]
    return routes, codes


@dataclass
class Example:
    """One exchange of the run: what was asked, of which route, and what came back."""

    section: str
    title: str
    route: str  # the route as protocol.md writes it, e.g. ``GET /v1/messages/{message_id}``
    requirements: tuple[str, ...]
    method: str
    path: str  # the path asked, with its query
    request_headers: list[tuple[str, str]]
    request_body: Any  # a JSON value, raw ``bytes``, or None
    status: int
    answer_headers: list[tuple[str, str]]
    answer_body: Any  # a JSON value, raw ``bytes``, or None
    note: str = ""
    head_only: bool = False  # the request is a head that never ends (no blank line)

    @property
    def code(self) -> str | None:
        """The error code of an error answer."""
        body = self.answer_body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            return str(body["error"]["code"])
        return None


@dataclass
class Placeholders:
    """Values that change from run to run, replaced in the order they first appear in the
    document: ``msg_example_1``, ``<cursor 1>``, ``<time 1>``, ``<sha256 1>``. ``names`` are
    exact strings with a label of their own (tokens, the admin token); ``stable`` values are
    kept (digests of known content, fingerprints of known input, times the client gave);
    ``changed`` maps a cursor with one character changed to the cursor it was made from."""

    names: dict[str, str]
    stable: set[str]
    changed: dict[str, str] = field(default_factory=dict)
    seen: dict[str, str] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)

    def _label(self, value: str, kind: str, make: Callable[[int], str]) -> str:
        if value not in self.seen:
            self.counts[kind] += 1
            self.seen[value] = make(self.counts[kind])
        return self.seen[value]

    def text(self, value: str) -> str:
        for exact in sorted(self.names, key=len, reverse=True):
            value = value.replace(exact, self.names[exact])
        for tampered, original in self.changed.items():
            if tampered in value:
                label = self.text(original).strip("<>")
                value = value.replace(tampered, f"<{label} with one character changed>")
        value = CURSOR.sub(lambda m: self._label(m.group(), "cursor", lambda n: f"<cursor {n}>"),
                           value)
        value = GENERATED_ID.sub(lambda m: self._label(
            m.group(), m.group(1), lambda n: f"{m.group(1)}_example_{n}"), value)
        value = TIME.sub(lambda m: m.group() if m.group() in self.stable else self._label(
            m.group(), "time", lambda n: f"<time {n}>"), value)
        return DIGEST.sub(lambda m: m.group() if m.group() in self.stable else self._label(
            m.group(), "sha256", lambda n: f"<sha256 {n}>"), value)

    def value(self, value: Any) -> Any:
        """A JSON value with every string passed through :meth:`text` (keys are never ids)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value


def pretty(value: Any, indent: int = 0, before: int = 0) -> str:
    """JSON with two spaces of indentation, where a list or object that fits in the line
    (:data:`WIDTH`, ``before`` characters already taken after the indent) stays on it; the
    outermost object is always opened."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or not value or (
            indent and indent + before + len(flat) <= WIDTH):
        return flat
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        keys = [f"{json.dumps(key, ensure_ascii=False)}: " for key in value]
        inner = [pad + key + pretty(item, indent + 2, len(key))
                 for key, item in zip(keys, value.values(), strict=True)]
        return "{\n" + ",\n".join(inner) + "\n" + " " * indent + "}"
    return "[\n" + ",\n".join(pad + pretty(item, indent + 2) for item in value) + "\n" \
        + " " * indent + "]"


def _body(body: Any, marks: Placeholders) -> list[str]:
    if body is None:
        return []
    if isinstance(body, bytes):
        return ["", marks.text(body.decode())]
    return ["", pretty(marks.value(body))]


def _block(lines: list[str]) -> list[str]:
    return ["```http", *"\n".join(lines).rstrip("\n").split("\n"), "```"]


def _example(number: int, example: Example, marks: Placeholders) -> list[str]:
    what = f"`{example.status} {example.code}` from `{example.route}`" if example.code \
        else f"`{example.route}`"
    ids = ", ".join(example.requirements)
    lines = [f'<a id="example-{number}"></a>', "",
             f"### {number}. {what}: {example.title} ({ids})", ""]
    if example.note:
        lines += [textwrap.fill(example.note, WIDTH, break_on_hyphens=False), ""]
    request = [f"{example.method} {marks.text(example.path)} HTTP/1.1"]
    request += [f"{name}: {marks.text(value)}" for name, value in example.request_headers]
    request += _body(example.request_body, marks) if not example.head_only else []
    answer = [f"HTTP/1.1 {example.status} {PHRASES[example.status]}"]
    answer += [f"{name}: {marks.text(value)}" for name, value in example.answer_headers]
    answer += _body(example.answer_body, marks)
    return [*lines, "Request:", "", *_block(request), "", "Answer:", "", *_block(answer), ""]


def _numbers(found: list[int]) -> str:
    return ", ".join(f"[{n}](#example-{n})" for n in found)


def _index(examples: list[Example], routes: list[str], codes: list[tuple[str, int]],
           not_shown: dict[str, str]) -> list[str]:
    def shown(route: str) -> str:
        if not route.endswith("…"):
            return _numbers([n for n, e in enumerate(examples, 1) if e.route == route])
        prefix = route.rstrip("…")
        if any(other.split(" ", 1)[-1].startswith(prefix) for other in routes if other != route):
            return "each route below"
        return _numbers([n for n, e in enumerate(examples, 1)
                         if e.route.split(" ", 1)[1].startswith(prefix)])

    lines = ["## Index", "", "| Route (protocol.md §6.2, §13) | Examples |", "|---|---|"]
    lines += [f"| `{route}` | {shown(route)} |" for route in routes]
    lines += ["", "| Code (protocol.md §7) | HTTP | Examples |", "|---|---|---|"]
    for code, status in codes:
        found = [n for n, e in enumerate(examples, 1) if e.code == code]
        where = _numbers(found) or f"not shown: {not_shown[code]}"
        lines.append(f"| `{code}` | {status} | {where} |")
    return [*lines, ""]


def render(examples: list[Example], marks: Placeholders, routes: list[str],
           codes: list[tuple[str, int]], not_shown: dict[str, str]) -> str:
    """The whole document: the header, the index, then every example in the run's order."""
    lines = [HEADER, *_index(examples, routes, codes, not_shown)]
    section = ""
    for number, example in enumerate(examples, 1):
        if example.section != section:
            section = example.section
            lines += [f"## {section}", ""]
        lines += _example(number, example, marks)
    return "\n".join(lines).rstrip("\n") + "\n"
