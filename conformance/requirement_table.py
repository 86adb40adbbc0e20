"""The requirement table of a run: every requirement id of docs/protocol.md (and of
docs/consumer.md) with its text and property, the checks that named it in this run and how many
of them ran and failed, and the result.

The texts come from ``properties/verdicts/requirements.json``, package data generated from the docs by
``tools/requirements_data.py`` (the kit never reads the repository's docs).

Results: ``pass`` (a check naming it ran and none failed), ``fail`` (a check naming it failed),
``xfail`` (failed, under an expected failure), ``not run`` (no check naming it ran in this run:
the note says which checks could, what they need, or where it is checked), ``not checked`` (the
kit has no check for it: the note says why)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from waypost.conformance.fuzz_rules import FUZZ_CHECKS
from waypost.properties.coverage.check_sites import named_checks
from waypost.properties.coverage.registered import CHECKS, NOT_CHECKED, checks_of, register
from waypost.properties.verdicts.owners import DATA
from waypost.properties.verdicts.violations import Ledger

for _fuzz in FUZZ_CHECKS:  # the fuzz phase's checks (conformance/fuzz_rules.py)
    register(f"fuzz {_fuzz.name}", _fuzz.requirements)


@dataclass(frozen=True)
class Requirement:
    """One requirement of docs/protocol.md."""

    rid: str
    section: str
    text: str
    prop: str = ""  # the property it belongs to (docs/properties.md), "" for none

    @property
    def short(self) -> str:
        """The first sentence, at most 90 characters."""
        first = self.text.split(". ")[0].rstrip(".")
        return first if len(first) <= 90 else first[:89] + "…"


def load() -> list[Requirement]:
    """Every requirement, in the order of docs/protocol.md."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    return [Requirement(r["id"], r["section"], r["text"], r.get("property", ""))
            for r in data["requirements"]]


@dataclass
class Row:
    """One requirement's line of the table."""

    requirement: Requirement
    result: str  # pass, fail, xfail, not run, not checked
    checks: dict[str, int] = field(default_factory=dict)  # named check → times it checked
    note: str = ""
    failed: int = 0  # checks of it that failed
    def as_json(self) -> dict[str, Any]:
        return {"id": self.requirement.rid, "section": self.requirement.section,
                "text": self.requirement.text, "property": self.requirement.prop,
                "result": self.result, "checks": self.checks,
                "checks_run": sum(self.checks.values()), "checks_failed": self.failed,
                "note": self.note}


def table(ledger: Ledger, wanted: set[str] | None = None,
          expected: frozenset[str] = frozenset(), needs: Mapping[str, str] | None = None
          ) -> list[Row]:
    """The rows of a run from its ledger: per id, the checks that named it where they were
    made (``Ledger.by_requirement``) and the phases tagged with it (``CHECKS``), with how many
    ran and failed. A failure under a property the run did not select is left out, as the
    property table leaves it out; one under an ``expected`` property is ``xfail``. ``needs``
    says, by check name, what a check that did not run needed (a run through fixtures has no
    admin API)."""
    sites = named_checks()
    rows = []
    for requirement in load():
        rid = requirement.rid
        tagged = checks_of(rid)
        made = dict(ledger.by_requirement.get(rid, {}))
        made.update({c.name: ledger.by_check.get(c.name, 0) for c in tagged})
        failing = {pid for pid in ledger.failed_requirements.get(rid, {})
                   if wanted is None or pid in wanted}
        failing |= {ledger.failed_checks[c.name] for c in tagged if c.name in ledger.failed_checks}
        row = Row(requirement, "not run", {name: n for name, n in made.items() if n},
                  failed=sum(n for pid, n in ledger.failed_requirements.get(rid, {}).items()
                             if pid in failing))
        if failing:
            row.result = "xfail" if failing <= expected else "fail"
            row.note = "failed under " + ", ".join(sorted(failing))
        elif row.checks:
            row.result = "pass"
        elif rid in NOT_CHECKED:
            row.result, row.note = "not checked", NOT_CHECKED[rid]
        else:
            names = [name for name, ids in sites.items() if rid in ids]
            row.note = _not_run(names, [c.name for c in tagged], needs or {})
        rows.append(row)
    return rows


def _not_run(sites: list[str], tagged: list[str], needs: Mapping[str, str]) -> str:
    wanted = sorted({needs[name] for name in (*sites, *tagged) if name in needs})
    if wanted:
        return "needs " + "; ".join(wanted)
    if sites:
        return f"no check naming it ran (--only, or nothing drew it): {', '.join(sites[:4])}"
    elsewhere = sorted({CHECKS[name].where for name in tagged} - {"run"})
    if elsewhere and all(CHECKS[name].where != "run" for name in tagged):
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
    return f"requirements: {len(rows)} of the contract, " + ", ".join(parts)


def text_table(rows: list[Row]) -> str:
    """The table for a terminal: id, property, result, checks run and failed, short text or
    note."""
    lines = [f"{'':3}{'requirement':<13} {'prop':<4} {'result':<12} {'checks':>7} {'failed':>6}"
             f"  text / note", "-" * 98]
    for row in rows:
        ran = sum(row.checks.values())
        what = row.requirement.short if row.result == "pass" else \
            f"{row.requirement.short} — {row.note}"
        lines.append(f"{'':3}{row.requirement.rid:<13} {row.requirement.prop or '—':<4} "
                     f"{row.result:<12} {ran:>7} {row.failed:>6}  {what}")
    lines.append("-" * 98)
    lines.append(summary(rows))
    return "\n".join(lines)


def markdown(rows: list[Row], title: str, preface: str = "") -> str:
    """The table as Markdown: one row per requirement, its property, its text whole, the
    checks that named it and how many of them ran and failed; ``preface`` (the property table)
    stands before it."""
    lines = [f"# {title}", "", *([preface, ""] if preface else []), summary(rows), "",
             "| Requirement | § | Property | Result | Checks run | Failed | Text | Note |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        ran = ", ".join(f"`{name}` × {n}" for name, n in row.checks.items() if n) or "—"
        cells = [row.requirement.rid, row.requirement.section, row.requirement.prop or "—",
                 row.result, ran, str(row.failed), row.requirement.text, row.note or ""]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"
