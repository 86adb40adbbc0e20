"""Runs side by side: the matrices of ``waypost conformance compare`` (properties with the
HOSTILE and FUZZ phases, requirement ids grouped by section of docs/protocol.md, limits,
hostile-input checks; the runs as columns) and each run's failures, with the anchors a cell
links to. The page (comparison_page.py) and the Markdown (comparison_markdown.py) show it;
baseline.py says what changed against a baseline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache

from waypost.conformance.report_file import PHASE_NAMES, Run, RunRow
from waypost.properties.verdicts.owners import DATA


@dataclass(frozen=True)
class Verdict:
    """How a result is shown: its class (pass, fail, xfail or none: not run in any way), a
    symbol and a word, so that no colour is the only signal."""

    kind: str
    symbol: str
    label: str


PASS, FAIL, XFAIL, NONE = "pass", "fail", "xfail", "none"
SYMBOLS = {PASS: "✓", FAIL: "✗", XFAIL: "◐", NONE: "○"}
LABELS = {"pass": "pass", "xpass": "XPASS", "fail": "FAIL", "xfail": "expected failure",
          "skipped": "skipped (--only)"}
#: A row a run does not have at all (a phase its profile leaves out, an id its kit lacks).
ABSENT = "absent"


def verdict(result: str) -> Verdict:
    """The class, symbol and word of a result; a result that is neither pass nor a failure
    (not run, skipped, not covered, not checked, not published, not applicable, absent) is
    of the class none."""
    # incomplete: its checks ran and passed (some of its ids did not run): checked, passing
    kind = {"pass": PASS, "xpass": PASS, "incomplete": PASS, "fail": FAIL,
            "xfail": XFAIL}.get(result, NONE)
    return Verdict(kind, SYMBOLS[kind] if result != ABSENT else "–", LABELS.get(result, result))


@dataclass(frozen=True)
class Cell:
    """One run's result in one row; ``link``: the anchor of its failure's details."""

    outcome: RunRow | None
    link: str = ""

    @property
    def result(self) -> str:
        return self.outcome.result if self.outcome is not None else ABSENT

    @property
    def verdict(self) -> Verdict:
        return verdict(self.result)

    @property
    def counts(self) -> str:
        """``12 checks``, ``3 of 12 failed``, or ``""`` when the row counts none."""
        if self.outcome is None or self.outcome.checks is None:
            return ""
        checks, failed = self.outcome.checks, self.outcome.failed or 0
        noun = "check" if checks == 1 else "checks"
        return f"{failed} of {checks} {noun} failed" if failed else f"{checks} {noun}"


@dataclass(frozen=True)
class Row:
    """One row of a matrix (a property, a requirement id, a limit, a hostile check): its key,
    its name, and one cell per run."""

    key: str
    name: str
    cells: tuple[Cell, ...]

    @property
    def differs(self) -> bool:
        """Whether the runs disagree on this row (by class: pass, fail, xfail, none)."""
        return len({cell.verdict.kind for cell in self.cells}) > 1

    @property
    def failing(self) -> bool:
        return any(cell.verdict.kind == FAIL for cell in self.cells)


@dataclass(frozen=True)
class Group:
    """A titled block of rows: a section of docs/protocol.md, the limits, the hostile checks."""

    anchor: str
    title: str
    rows: tuple[Row, ...]

    def tally(self, column: int) -> dict[str, int]:
        """How many rows of each class the run ``column`` has here."""
        counted = dict.fromkeys((FAIL, XFAIL, PASS, NONE), 0)
        for row in self.rows:
            counted[row.cells[column].verdict.kind] += 1
        return counted

    @property
    def failing(self) -> bool:
        return any(row.failing for row in self.rows)


@dataclass(frozen=True)
class Failure:
    """One failure of a run, with the anchor its cells link to."""

    anchor: str
    kind: str  # property, limit, hostile-input check, fuzz finding
    outcome: RunRow


@dataclass(frozen=True)
class Anchors:
    """Where one run's failures are detailed, indexed once (a cell finds its link in one
    lookup, however many failures a hostile report holds): the first failure of each kind
    and key, of each kind, and of each requirement id."""

    by_key: dict[tuple[str, str], str]
    by_kind: dict[str, str]
    by_requirement: dict[str, str]

    @classmethod
    def of(cls, failures: list[Failure]) -> Anchors:
        by_key: dict[tuple[str, str], str] = {}
        by_kind: dict[str, str] = {}
        by_requirement: dict[str, str] = {}
        for failure in failures:
            by_key.setdefault((failure.kind, failure.outcome.key), failure.anchor)
            by_kind.setdefault(failure.kind, failure.anchor)
            for rid in failure.outcome.requirements:
                by_requirement.setdefault(rid, failure.anchor)
        return cls(by_key, by_kind, by_requirement)


@dataclass
class Comparison:
    runs: list[Run]
    baseline: bool = False  # the first run is the baseline the others are compared with
    failures: list[list[Failure]] = field(default_factory=list)  # by run
    anchors: list[Anchors] = field(default_factory=list)  # by run
    properties: tuple[Row, ...] = ()
    sections: tuple[Group, ...] = ()
    limits: Group = Group("limits", "Limits", ())
    hostile: Group = Group("hostile", "Hostile-input checks", ())


#: The phases after the model, with the names their rows have where no run had them.
PHASES = PHASE_NAMES


def run_anchor(column: int) -> str:
    """The anchor of a run's failures (``r1-failures`` for the first run)."""
    return f"r{column + 1}-failures"


def compare(runs: list[Run], baseline: bool = False) -> Comparison:
    """The matrices of ``runs``, in the order given (with ``baseline``, the first is the
    baseline)."""
    failures = [_failures(column, run) for column, run in enumerate(runs)]
    result = Comparison(runs, baseline, failures, [Anchors.of(found) for found in failures])
    keys = _ordered((row.key for run in runs for row in run.properties), _property_order)
    for phase in PHASES:  # rows of their own even where no run had the phase
        if phase not in keys:
            keys.append(phase)
    result.properties = _rows(result, "properties", keys, _property_link)
    result.sections = _sections(result)
    result.limits = Group("limits", "Limits published in /v1/describe", _rows(
        result, "limits", _ordered(row.key for run in runs for row in run.limits),
        _link_of("limit")))
    result.hostile = Group("hostile", "Hostile-input checks (the HOSTILE phase)", _rows(
        result, "hostile", _ordered(row.key for run in runs for row in run.hostile),
        _link_of("hostile-input check")))
    return result


def _failures(column: int, run: Run) -> list[Failure]:
    found = [(kind, outcome) for kind, rows in (
        ("property", [row for row in run.properties if row.key != "HOSTILE"]),
        ("limit", run.limits), ("hostile-input check", run.hostile),
        ("fuzz finding", run.findings)) for outcome in rows if outcome.result == "fail"]
    return [Failure(f"r{column + 1}-{n + 1}", kind, outcome)
            for n, (kind, outcome) in enumerate(found)]


Link = Callable[[Anchors, RunRow], str]


def _rows(comparison: Comparison, kind: str, keys: list[str], link: Link) -> tuple[Row, ...]:
    rows = []
    tables = [run.by_key(kind) for run in comparison.runs]
    for key in keys:
        outcomes = [table.get(key) for table in tables]
        name = next((o.name for o in outcomes if o is not None), PHASES.get(key, ""))
        cells = tuple(Cell(o, (link(anchors, o) or run_anchor(n))
                           if o is not None and o.result == "fail" else "")
                      for n, (o, anchors) in enumerate(zip(outcomes, comparison.anchors,
                                                           strict=True)))
        rows.append(Row(key, name, cells))
    return tuple(rows)


def _link_of(kind: str) -> Link:
    def link(anchors: Anchors, outcome: RunRow) -> str:
        return anchors.by_key.get((kind, outcome.key), "")
    return link


def _property_link(anchors: Anchors, outcome: RunRow) -> str:
    if outcome.key == "HOSTILE":
        return anchors.by_kind.get("hostile-input check", "")
    return anchors.by_key.get(("property", outcome.key), "")


def _requirement_link(anchors: Anchors, outcome: RunRow) -> str:
    """The first failure that failed this id, else that of the id's property."""
    return (anchors.by_requirement.get(outcome.key)
            or anchors.by_key.get(("property", outcome.prop), ""))


def _sections(comparison: Comparison) -> tuple[Group, ...]:
    """The requirement ids, grouped by the top-level section of docs/protocol.md (and
    docs/consumer.md) they stand in, in the order of the contract."""
    order = {rid: n for n, rid in enumerate(_contract()[1])}
    keys = _ordered((row.key for run in comparison.runs for row in run.requirements),
                    lambda key: (order.get(key, len(order)), 0))
    section_of = {row.key: row.section for run in comparison.runs for row in run.requirements}
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(section_of[key].split(".")[0], []).append(key)
    titles = _contract()[0]
    return tuple(Group(f"section-{_slug(number)}", _section_title(number, titles),
                       _rows(comparison, "requirements", members, _requirement_link))
                 for number, members in groups.items())


def _section_title(number: str, titles: dict[str, str]) -> str:
    title = titles.get(number, "")
    if not re.fullmatch(r"\d+", number):
        return title or number
    return f"§{number} {title}".rstrip()


@cache
def _contract() -> tuple[dict[str, str], tuple[str, ...]]:
    """The kit's section titles and requirement ids in the order of the contract."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return dict(data.get("sections", {})), tuple(r["id"] for r in data["requirements"])


def _property_order(key: str) -> tuple[int, int]:
    """P01–P18 by number, then the phases, then anything else (ERROR) as it came."""
    if re.fullmatch(r"P\d{2}", key):
        return 0, int(key[1:])
    return (1, list(PHASES).index(key)) if key in PHASES else (2, 0)


def _ordered(keys: Iterable[str],
             order: Callable[[str], tuple[int, int]] = lambda key: (0, 0)) -> list[str]:
    """Each key once, sorted by ``order``, ties in the order they first came."""
    first = {key: n for n, key in enumerate(dict.fromkeys(keys))}
    return sorted(first, key=lambda key: (*order(key), first[key]))


def short(text: str, chars: int = 90) -> str:
    """The first sentence of ``text``, at most ``chars`` characters (a requirement's text)."""
    first = text.split(". ")[0].rstrip(".")
    return first if len(first) <= chars else first[:chars - 1] + "…"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)[:60]
