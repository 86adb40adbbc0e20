"""The requirement table of a run: every requirement id of docs/protocol.md with its text, the
checks of the kit tagged with it (``properties/requirements.py``) and how many of each ran, and
the result.

The texts come from ``conformance/requirements.json``, package data generated from
docs/protocol.md by ``tools/requirements_data.py`` (the kit never reads the repository's docs).

Results: ``pass`` (a tagged check ran and none failed), ``fail`` (a tagged check failed: a
failed check fails every id it is tagged with), ``xfail`` (failed, under an expected failure),
``not run`` (no tagged check ran in this run: the note says what it needs or where it is
checked), ``not checked`` (the kit has no check for it: the note says why)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waypost.conformance.fuzz_rules import FUZZ_CHECKS
from waypost.properties.requirements import CHECKS, NOT_CHECKED, checks_of, register

DATA = Path(__file__).resolve().parent / "requirements.json"

for _fuzz in FUZZ_CHECKS:  # the fuzz phase's checks (conformance/fuzz_rules.py)
    register(f"fuzz {_fuzz.name}", _fuzz.requirements)


@dataclass(frozen=True)
class Requirement:
    """One requirement of docs/protocol.md."""

    rid: str
    section: str
    text: str

    @property
    def short(self) -> str:
        """The first sentence, at most 90 characters."""
        first = self.text.split(". ")[0].rstrip(".")
        return first if len(first) <= 90 else first[:89] + "…"


def load() -> list[Requirement]:
    """Every requirement, in the order of docs/protocol.md."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return [Requirement(r["id"], r["section"], r["text"]) for r in data["requirements"]]


@dataclass
class Row:
    """One requirement's line of the table."""

    requirement: Requirement
    result: str  # pass, fail, xfail, not run, not checked
    checks: dict[str, int] = field(default_factory=dict)  # tagged check → times it checked
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"id": self.requirement.rid, "section": self.requirement.section,
                "text": self.requirement.text, "result": self.result, "checks": self.checks,
                "note": self.note}


def table(counts: Mapping[str, int], failed: Mapping[str, str],
          expected: frozenset[str] = frozenset(), needs: Mapping[str, str] | None = None
          ) -> list[Row]:
    """The rows of a run: ``counts`` are the checks made by check name, ``failed`` the checks
    that failed with the property they failed (a property in ``expected`` makes it
    ``xfail``); ``needs`` says, by check name, what a check that did not run needed (a run
    through fixtures has no admin API)."""
    rows = []
    for requirement in load():
        tagged = checks_of(requirement.rid)
        row = Row(requirement, "not run", {c.name: counts.get(c.name, 0) for c in tagged})
        fails = sorted({failed[c.name] for c in tagged if c.name in failed})
        if fails:
            row.result = "xfail" if set(fails) <= expected else "fail"
            row.note = "failed under " + ", ".join(fails)
        elif any(counts.get(c.name, 0) for c in tagged):
            row.result = "pass"
        elif requirement.rid in NOT_CHECKED:
            row.result, row.note = "not checked", NOT_CHECKED[requirement.rid]
        else:
            row.note = _not_run(tagged_names=[c.name for c in tagged], needs=needs or {})
        rows.append(row)
    return rows


def _not_run(tagged_names: list[str], needs: Mapping[str, str]) -> str:
    wanted = sorted({needs[name] for name in tagged_names if name in needs})
    if wanted:
        return "needs " + "; ".join(wanted)
    elsewhere = sorted({CHECKS[name].where for name in tagged_names} - {"run"})
    if elsewhere and all(CHECKS[name].where != "run" for name in tagged_names):
        return "checked by " + ", ".join(
            "waypost conformance crash-matrix" if w == "crash matrix" else w
            for w in elsewhere)
    return "no check tagged with it ran (--only, or nothing drew it)"


def summary(rows: list[Row]) -> str:
    """One line: how many requirements each result has."""
    counted: dict[str, int] = {}
    for row in rows:
        counted[row.result] = counted.get(row.result, 0) + 1
    order = ("pass", "fail", "xfail", "not run", "not checked")
    parts = [f"{counted[result]} {result}" for result in order if counted.get(result)]
    return f"requirements: {len(rows)} of docs/protocol.md, " + ", ".join(parts)


def text_table(rows: list[Row]) -> str:
    """The table for a terminal: id, result, checks run (of the tagged ones), short text or
    note."""
    lines = [f"{'':3}{'requirement':<13} {'result':<12} {'checks':>7}  text / note", "-" * 98]
    for row in rows:
        ran = sum(row.checks.values())
        what = row.requirement.short if row.result in ("pass", "fail", "xfail") else \
            f"{row.requirement.short} — {row.note}"
        if row.result in ("fail", "xfail"):
            what = f"{row.requirement.short} — {row.note}"
        lines.append(f"{'':3}{row.requirement.rid:<13} {row.result:<12} {ran:>7}  {what}")
    lines.append("-" * 98)
    lines.append(summary(rows))
    return "\n".join(lines)


def markdown(rows: list[Row], title: str) -> str:
    """The table as Markdown: one row per requirement, its text whole, the checks that ran."""
    lines = [f"# {title}", "", summary(rows), "",
             "| Requirement | § | Result | Checks run | Text | Note |", "|---|---|---|---|---|---|"]
    for row in rows:
        ran = ", ".join(f"`{name}` × {n}" for name, n in row.checks.items() if n) or "—"
        cells = [row.requirement.rid, row.requirement.section, row.result, ran,
                 row.requirement.text, row.note or ""]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
