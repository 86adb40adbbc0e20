"""The comparison as one self-contained HTML page: inline CSS, no script, nothing fetched; it
reads at 400 px and 1280 px and prints (``templates/comparison.html``). Every text of a report
is the report's (and often a target's) word: each goes through
:func:`~waypost.properties.wire.untrusted.visible` and is escaped (Jinja's autoescape)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from waypost import __version__
from waypost.conformance.baseline import ARROWS, COVERAGE_ROWS, Changes
from waypost.conformance.comparison import Comparison, compare, run_anchor, short, verdict
from waypost.conformance.report_file import REPORT_VERSION, Run
from waypost.properties.wire.untrusted import visible_lines

TEMPLATES = Path(__file__).resolve().parent / "templates"


def page(runs: list[Run], changes: list[Changes] | None = None,
         writer: str = "waypost conformance compare") -> str:
    """The page of ``runs`` (a baseline first when ``changes`` are given, even none: each
    later run's changes against it); ``writer`` names the command in the footer."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    def shown(value: Any) -> Any:  # every {{ }}: no control or bidi character reaches the page
        return visible_lines(value) if isinstance(value, str) and not isinstance(value, Markup) \
            else value

    environment = Environment(loader=FileSystemLoader(TEMPLATES), undefined=StrictUndefined,
                              autoescape=select_autoescape(default=True), finalize=shown,
                              trim_blocks=True, lstrip_blocks=True)
    comparison = compare(runs, baseline=changes is not None)
    return environment.get_template("comparison.html").render(
        title=title(comparison), comparison=comparison, changes=changes or [],
        column_name=lambda column: column_name(comparison, column),
        verdict=verdict, short=short, run_anchor=run_anchor, duration=duration, when=when,
        run_tally=run_tally, kit_version=__version__, report_version=REPORT_VERSION,
        writer=writer, arrows=ARROWS, coverage_rows=COVERAGE_ROWS)


def title(comparison: Comparison) -> str:
    """``Waypost conformance: sqlite`` for one run, ``… sqlite against broken`` for two."""
    targets = [run.target for run in comparison.runs]
    if len(targets) == 1:
        return f"Waypost conformance: {_cut(targets[0])}"
    if len(targets) == 2:
        return f"Waypost conformance: {_cut(targets[0])} against {_cut(targets[1])}"
    return f"Waypost conformance: {len(targets)} runs side by side"


def column_name(comparison: Comparison, column: int) -> str:
    """A run's name in the matrices: its number and target (the baseline says so)."""
    name = f"{column + 1} · {_cut(comparison.runs[column].target)}"
    return f"{name} (baseline)" if comparison.baseline and column == 0 else name


def _cut(text: str, chars: int = 60) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "…"


def duration(seconds: float) -> str:
    """``42.1 s``, or ``3 min 20 s`` from a minute on."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def when(started: str | None) -> str:
    """An ISO 8601 UTC time as ``2026-12-03 03:39:08 UTC``; anything else as written."""
    if started is None:
        return "unknown"
    match = re.fullmatch(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.\d+)?(?:Z|\+00:00)", started)
    return f"{match.group(1)} {match.group(2)} UTC" if match else started


def run_tally(run: Run) -> str:
    """``16 pass, 2 FAIL, 1 not run`` over the run's property rows."""
    labels = {"pass": "pass", "fail": "FAIL", "xfail": "expected failure", "none": "not run"}
    counted = dict.fromkeys(labels, 0)
    for row in run.properties:
        counted[verdict(row.result).kind] += 1
    return ", ".join(f"{n} {labels[kind]}" for kind, n in counted.items() if n)
