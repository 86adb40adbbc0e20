"""The JSON report of a kit run as a file other tools read and write: its format version, and
reading one back (``waypost conformance compare``). docs/report.md describes the format and
docs/report.schema.json is its JSON Schema.

A report file is untrusted input: it may come from another kit, another machine, or a target
that wrote its own texts into it. Reading it checks every member ``compare`` shows, bounds the
file, its lists and its texts, and refuses what it cannot read with :class:`ReportError`, one
line that names the file and the member. Texts are kept as written (cut to
:data:`TEXT_CHARS`); the page and the tables make them visible and escape them."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

#: The version of the report format this kit writes and reads (docs/report.md). A change a
#: reader must know about gets a new number; a new optional member does not.
REPORT_VERSION = 1
#: The largest report file read (a ``thorough`` run's report is a few hundred KB).
MAX_BYTES = 32 * 1024 * 1024
#: The most entries of any list of a report.
MAX_ITEMS = 10_000
#: The most characters of a text kept (a message, a note, an excerpt of evidence).
TEXT_CHARS = 4000

#: ``not covered`` stays valid in format 1, which defined it; no run of the kit writes it (every
#: property of the catalogue has checks).
PROPERTY_RESULTS = frozenset({"pass", "fail", "xfail", "xpass", "incomplete", "not covered",
                              "skipped", "not run"})
REQUIREMENT_RESULTS = frozenset({"pass", "fail", "xfail", "not run", "not checked"})
LIMIT_RESULTS = frozenset({"pass", "fail", "xfail", "not published", "not checked", "skipped",
                           "not run"})
HOSTILE_RESULTS = frozenset({"pass", "fail", "not applicable"})
FUZZ_RESULTS = frozenset({"pass", "fail", "xfail", "xpass"})


#: The rows of the phases after the model, and their names (the property table, the report,
#: the comparison).
PHASE_NAMES = {"HOSTILE": "Hostile input", "FUZZ": "Contract fuzzing (Schemathesis)"}


class ReportError(ValueError):
    """A report file that cannot be read, with the one line that says why."""


@dataclass(frozen=True)
class RunRow:
    """One row of a run: a property (or the HOSTILE, FUZZ or ERROR row), a requirement id, a
    limit, a hostile-input check or a fuzz finding. ``requirements``: the ids it failed (or
    checks); ``prop`` and ``section``: a requirement's property and section."""

    key: str
    name: str
    result: str
    checks: int | None = None
    failed: int | None = None
    message: str = ""
    replay: str | None = None
    replay_command: str | None = None
    evidence: str = ""
    requirements: tuple[str, ...] = ()
    prop: str = ""
    section: str = ""


@dataclass(frozen=True)
class Run:
    """One run's report as ``compare`` reads it."""

    name: str  # the file it came from, as given
    target: str
    profile: str
    seed: int | None
    run_id: str
    started: str | None
    seconds: float
    protocol: str | None
    server: str | None
    kit: str | None
    failed: bool
    properties: tuple[RunRow, ...]
    requirements: tuple[RunRow, ...]
    limits: tuple[RunRow, ...]
    hostile: tuple[RunRow, ...]
    findings: tuple[RunRow, ...]  # the fuzz phase's findings, each a failure

    def by_key(self, kind: str) -> dict[str, RunRow]:
        """The rows of ``kind`` (properties, requirements, limits, hostile) by key."""
        rows: tuple[RunRow, ...] = getattr(self, kind)
        return {row.key: row for row in rows}


def read(path: Path) -> Run:
    """The report in ``path``: JSON of a known ``report_version``, within the bounds."""
    name = str(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ReportError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a report of "
                              "a kit run")
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise ReportError(f"{name}: cannot read it: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:  # a pipe or a growing file, whose size stat did not tell
        raise ReportError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a report of a "
                          "kit run")
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ReportError(f"{name}: not a JSON report (not UTF-8 JSON)") from None
    try:
        return parse(document, name)
    except RecursionError:
        raise ReportError(f"{name}: nested too deep: not a report of a kit run") from None


def _no_constant(word: str) -> NoReturn:
    raise ValueError(f"{word} is not JSON")


def parse(document: Any, name: str) -> Run:
    """A report already decoded from JSON, checked member by member."""
    where = _Where(name)
    if not isinstance(document, dict):
        where.fail("", "not a JSON object: not a report of a kit run")
    version = document.get("report_version")
    if version is None:
        where.fail("", "no report_version: written by a kit older than report_version 1, or "
                       "not a report of a run (rerun it with this kit)")
    if version != REPORT_VERSION or isinstance(version, bool):
        where.fail("", f"report_version {_shown(version)} is unknown to this kit, which reads "
                       f"report_version {REPORT_VERSION}: use the kit that wrote it")
    kit, describe = where.obj(document, "kit", optional=True), where.obj(document, "describe")
    fuzz, findings = _fuzz(where, where.member(document, "fuzz", "", False))
    return Run(
        name, where.text(document, "target"), where.text(document, "profile"),
        where.count(document, "seed", nullable=True),
        where.text(document, "run_id"), where.text(document, "started", nullable=True),
        where.number(document, "seconds"),
        where.text(describe, "protocol", nullable=True, at="describe"),
        where.text(describe, "server", nullable=True, at="describe"),
        where.text(kit, "version", nullable=True, at="kit") if kit else None,
        where.flag(document, "failed"),
        where.unique("properties", (*where.rows(document, "properties", _property), *fuzz)),
        where.unique("requirements", where.rows(document, "requirements", _requirement)),
        where.unique("limits", where.rows(document, "limits", _limit)),
        where.unique("hostile", where.rows(document, "hostile", _hostile)), findings)


def _shown(value: Any) -> str:
    return json.dumps(value)[:40] if isinstance(value, str | int | float | None) \
        else type(value).__name__


class _Where:
    """The checks of a report's members; each failure names the file and the member."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, at: str, what: str) -> NoReturn:
        raise ReportError(f"{self.name}: {at + ': ' if at else ''}{what}")

    def member(self, obj: dict[str, Any], key: str, at: str, optional: bool) -> Any:
        if key not in obj and not optional:
            self.fail(at, f"no member {key!r}")
        return obj.get(key)

    def text(self, obj: dict[str, Any], key: str, *, nullable: bool = False,
             optional: bool = False, at: str = "") -> Any:
        value = self.member(obj, key, at, optional or nullable)
        if value is None and (nullable or optional):
            return None if nullable else ""
        if not isinstance(value, str):
            self.fail(_at(at, key), f"expected a string, got {_shown(value)}")
        return value if len(value) <= TEXT_CHARS else value[:TEXT_CHARS] + "…"

    def count(self, obj: dict[str, Any], key: str, *, nullable: bool = False,
              optional: bool = False, at: str = "") -> int | None:
        """A non-negative integer (None where it may be null or missing)."""
        value = self.member(obj, key, at, optional or nullable)
        if value is None and (nullable or optional):
            return None if nullable else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(_at(at, key), f"expected a non-negative integer, got {_shown(value)}")
        return value

    def number(self, obj: dict[str, Any], key: str) -> float:
        value = self.member(obj, key, "", False)
        if isinstance(value, bool) or not isinstance(value, int | float) or not (
                0 <= value < math.inf):  # 1e400 is JSON, and Python reads it as infinity
            self.fail(key, f"expected a non-negative number, got {_shown(value)}")
        return float(value)

    def flag(self, obj: dict[str, Any], key: str) -> bool:
        value = self.member(obj, key, "", False)
        if not isinstance(value, bool):
            self.fail(key, f"expected true or false, got {_shown(value)}")
        return value

    def obj(self, obj: dict[str, Any], key: str, *, optional: bool = False,
            at: str = "") -> dict[str, Any]:
        value = self.member(obj, key, at, optional)
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            self.fail(_at(at, key), f"expected an object, got {_shown(value)}")
        return value

    def result(self, obj: dict[str, Any], known: frozenset[str], at: str) -> str:
        value = self.text(obj, "result", at=at)
        if value not in known:
            self.fail(_at(at, "result"), f"{_shown(value)} is not a result of report_version "
                                         f"{REPORT_VERSION} ({', '.join(sorted(known))})")
        return str(value)

    def names(self, obj: dict[str, Any], key: str, at: str) -> tuple[str, ...]:
        value = self.member(obj, key, at, True)
        if value is None:
            return ()
        if not isinstance(value, list | dict) or len(value) > MAX_ITEMS or not all(
                isinstance(item, str) for item in value):
            self.fail(_at(at, key), "expected a list of requirement ids")
        return tuple(value)

    def unique(self, key: str, rows: Iterable[RunRow]) -> tuple[RunRow, ...]:
        """``rows``, refused if two name the same id (the matrices and the baseline diff show
        one row per id: a second would hide the first)."""
        found = tuple(rows)
        seen: set[str] = set()
        for n, row in enumerate(found):
            if row.key in seen:
                self.fail(f"{key}[{n}]", f"a second row for {_shown(row.key)}")
            seen.add(row.key)
        return found

    def rows(self, obj: dict[str, Any], key: str,
             row: Callable[[_Where, dict[str, Any], str], RunRow], at: str = ""
             ) -> list[RunRow]:
        value = self.member(obj, key, at, False)
        if not isinstance(value, list):
            self.fail(_at(at, key), f"expected a list, got {_shown(value)}")
        if len(value) > MAX_ITEMS:
            self.fail(_at(at, key), f"more than {MAX_ITEMS} entries")
        found = []
        for n, item in enumerate(value):
            if not isinstance(item, dict):
                self.fail(f"{_at(at, key)}[{n}]", f"expected an object, got {_shown(item)}")
            found.append(row(self, item, f"{_at(at, key)}[{n}]"))
        return found


def _at(at: str, key: str) -> str:
    return f"{at}.{key}" if at else key


def _evidence(value: Any) -> str:
    if not value:
        return ""
    try:
        text = json.dumps(value, indent=1, ensure_ascii=False)
    except (ValueError, RecursionError):  # nested deeper than the encoder goes
        return "<evidence nested too deep to show>"
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "…"


def _replays(where: _Where, item: dict[str, Any], at: str) -> dict[str, Any]:
    return {"replay": where.text(item, "replay", nullable=True, at=at),
            "replay_command": where.text(item, "replay_command", nullable=True,
                                         optional=True, at=at)}


def _property(where: _Where, item: dict[str, Any], at: str) -> RunRow:
    counts = where.obj(item, "requirements", optional=True, at=at)
    failing = tuple(rid for rid, count in counts.items()
                    if isinstance(count, dict) and count.get("failed"))
    return RunRow(where.text(item, "id", at=at), where.text(item, "name", at=at),
                   where.result(item, PROPERTY_RESULTS, at),
                   where.count(item, "checks", at=at), where.count(item, "checks_failed", at=at),
                   where.text(item, "message", at=at), **_replays(where, item, at),
                   evidence=_evidence(item.get("evidence")), requirements=failing[:MAX_ITEMS])


def _requirement(where: _Where, item: dict[str, Any], at: str) -> RunRow:
    return RunRow(where.text(item, "id", at=at), where.text(item, "text", at=at),
                   where.result(item, REQUIREMENT_RESULTS, at),
                   where.count(item, "checks_run", at=at), where.count(item, "checks_failed", at=at),
                   where.text(item, "note", optional=True, at=at),
                   prop=where.text(item, "property", optional=True, at=at),
                   section=where.text(item, "section", at=at))


def _limit(where: _Where, item: dict[str, Any], at: str) -> RunRow:
    value = where.count(item, "value", nullable=True, at=at)
    name = where.text(item, "limit", at=at)
    return RunRow(name, f"{name} = {'—' if value is None else value}",
                   where.result(item, LIMIT_RESULTS, at), message=where.text(item, "note", at=at),
                   prop=", ".join(where.names(item, "properties", at)),
                   **_replays(where, item, at))


def _hostile(where: _Where, item: dict[str, Any], at: str) -> RunRow:
    return RunRow(where.text(item, "check", at=at),
                   where.text(item, "description", optional=True, at=at),
                   where.result(item, HOSTILE_RESULTS, at),
                   where.count(item, "inputs", optional=True, at=at),
                   message=where.text(item, "message", at=at),
                   requirements=where.names(item, "requirements", at))


def _fuzz(where: _Where, fuzz: Any) -> tuple[tuple[RunRow, ...], tuple[RunRow, ...]]:
    """The fuzz phase: its row of the property table (``FUZZ``; none without the phase), and
    its findings."""
    if fuzz is None:
        return (), ()
    if not isinstance(fuzz, dict):
        where.fail("fuzz", f"expected an object or null, got {_shown(fuzz)}")
    checks = where.obj(fuzz, "checks", at="fuzz")
    if len(checks) > MAX_ITEMS:
        where.fail("fuzz.checks", f"more than {MAX_ITEMS} entries")
    errors = fuzz.get("errors") or []
    if not isinstance(errors, list) or len(errors) > MAX_ITEMS or not all(
            isinstance(e, str) for e in errors):
        where.fail("fuzz.errors", f"expected a list of at most {MAX_ITEMS} strings")
    findings = [replace(finding, key=f"finding {n + 1}")
                for n, finding in enumerate(where.rows(fuzz, "findings", _finding, "fuzz"))]
    requests = where.count(fuzz, "requests", at="fuzz")
    summary = (f"{requests} requests, {len(findings)} findings"
               + "".join(f"; engine error: {error[:500]}" for error in errors[:5]))
    row = RunRow("FUZZ", PHASE_NAMES["FUZZ"],
                  where.result(fuzz, FUZZ_RESULTS, "fuzz"),
                  sum(n for n in checks.values() if isinstance(n, int)),
                  len(findings) + len(errors), summary[:TEXT_CHARS])
    return (row,), tuple(findings)


def _finding(where: _Where, item: dict[str, Any], at: str) -> RunRow:
    status = item.get("status")
    operation = where.text(item, "operation", at=at)
    return RunRow("", f"{where.text(item, 'check', at=at)}: "
                   f"{operation} answered {status if isinstance(status, int) else '—'}",
                   "fail", message=where.text(item, "message", at=at),
                   requirements=where.names(item, "requirements", at),
                   **_replays(where, item, at))
