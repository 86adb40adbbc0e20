"""``waypost conformance compare``: the JSON reports of several runs side by side (the
property table in the terminal, ``--html`` a page, ``--md`` Markdown), and with
``--baseline`` what got worse and what got better against a baseline run among the rows both
checked, for CI to gate on, and apart, the rows only one of them checked.
docs/report.md describes the reports and the command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from waypost.conformance.baseline import Changes
    from waypost.conformance.comparison import Comparison

#: The most reports one comparison reads.
MAX_RUNS = 100
#: The most bytes all of them may hold (a ``ci`` run's report is about 150 KB).
MAX_TOTAL_BYTES = 256 << 20
#: The most rows all of them may hold: a page of 100 ``ci`` runs has about 50,000.
MAX_TOTAL_ROWS = 200_000
#: The most rows of each coverage difference (narrower, wider) printed per run.
TERMINAL_COVERAGE_ROWS = 10


def add_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``compare`` under ``waypost conformance``."""
    compare = commands.add_parser(
        "compare", help="put the JSON reports of runs side by side; --baseline: what got "
                   "worse of the rows both runs checked",
        description="Read the --report-json files of conformance runs (any number, up to "
                    f"{MAX_RUNS}, of report_version 1) and put them side by side, the runs as "
                    "columns in the order given: print the property table (P01–P18, HOSTILE, "
                    "FUZZ) and each run's failures, and write them with the requirement ids by "
                    "section of docs/protocol.md, the limits, the hostile-input checks and "
                    "every failure's message, replay file and replay command as one "
                    "self-contained HTML page (--html) or as Markdown (--md); exit status 0. "
                    "With --baseline, the baseline is the first column and the command also "
                    "lists, for each run, what got worse and what got better against it among "
                    "the rows both runs checked (pass, XPASS, expected failure or FAIL in "
                    "both): exit status 1 when one of those got worse. Rows only one of the "
                    "two checked (skipped by --only, not run, absent: a phase a profile leaves "
                    "out) are listed apart as coverage differences, narrower or wider, and "
                    "never make the exit status 1: a run of fewer properties is no regression. "
                    "A file that is not a report of a known report_version is refused in one "
                    "line, exit status 2.")
    compare.add_argument("reports", nargs="+", type=Path, metavar="RUN.json",
                         help="a report written by waypost conformance --report-json")
    compare.add_argument("--baseline", type=Path, default=None, metavar="BASE.json",
                         help="the run to compare with (e.g. the last release's): what got "
                              "worse or better in each RUN.json among the rows both checked "
                              "(exit status 1 when one got worse), and apart, the rows only "
                              "one of them checked (not gated)")
    compare.add_argument("--html", type=Path, default=None, metavar="FILE",
                         help="write the comparison as one self-contained HTML page")
    compare.add_argument("--md", type=Path, default=None, metavar="FILE",
                         help="write the comparison as Markdown (e.g. a CI job summary)")
    compare.set_defaults(run=_compare)


def _compare(args: argparse.Namespace) -> int:
    from waypost.conformance.baseline import changes
    from waypost.conformance.comparison import compare
    from waypost.conformance.comparison_markdown import markdown
    from waypost.conformance.comparison_page import page
    from waypost.conformance.report_file import ReportError, read
    from waypost.properties.wire.untrusted import visible

    paths = [*([args.baseline] if args.baseline is not None else []), *args.reports]
    try:
        if len(paths) > MAX_RUNS:
            raise ReportError(f"{len(paths)} reports: compare reads at most {MAX_RUNS}")
        if sum(_size(path) for path in paths) > MAX_TOTAL_BYTES:
            raise ReportError(f"the reports hold more than {MAX_TOTAL_BYTES >> 20} MiB in all")
        runs = [read(path) for path in paths]
        rows = sum(len(run.properties) + len(run.requirements) + len(run.limits)
                   + len(run.hostile) + len(run.findings) for run in runs)
        if rows > MAX_TOTAL_ROWS:
            raise ReportError(f"the reports hold {rows} rows in all: compare shows at most "
                              f"{MAX_TOTAL_ROWS}")
    except ReportError as refused:
        print(visible(f"waypost conformance compare: {refused}"), file=sys.stderr)
        return 2
    diffs = [changes(runs[0], run) for run in runs[1:]] if args.baseline is not None else None
    print(terminal(compare(runs, baseline=diffs is not None), diffs or []))
    try:
        if args.html is not None:
            args.html.write_text(page(runs, diffs), encoding="utf-8")
        if args.md is not None:
            args.md.write_text(markdown(runs, diffs), encoding="utf-8")
    except OSError as error:
        print(visible(f"waypost conformance compare: cannot write {error.filename}: "
                      f"{error.strerror}"), file=sys.stderr)
        return 2
    return 1 if any(diff.worse for diff in diffs or []) else 0


def _size(path: Path) -> int:
    """The size of a report file as its directory tells it (0 if it cannot; reading it then
    bounds it, or says why not)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def terminal(comparison: Comparison, diffs: list[Changes]) -> str:
    """What ``compare`` prints: the property table, one line per run of the other tables,
    then the changes against the baseline, the coverage differences apart, and the
    verdict."""
    from waypost.conformance.comparison_page import column_name
    from waypost.properties.wire.untrusted import visible_lines

    names = [column_name(comparison, n) for n in range(len(comparison.runs))]
    width = min(max(18, *map(len, names)), 32)
    names = [name[:width] for name in names]
    lines = [f"{'':3}{'property':<38} " + " ".join(f"{name:<{width}}" for name in names),
             "-" * (42 + (width + 1) * len(names))]
    for row in comparison.properties:
        marks = [f"{cell.verdict.symbol} {cell.verdict.label}"[:width] for cell in row.cells]
        lines.append(f"{'':3}{(row.key + ' ' + row.name)[:38]:<38} "
                     + " ".join(f"{mark:<{width}}" for mark in marks))
    for n, failures in enumerate(comparison.failures):
        lines.append(f"{names[n]}: {len(failures) or 'no'} "
                     f"{'failure' if len(failures) == 1 else 'failures'}"
                     + "".join(f"; {f.outcome.key} {f.kind}" for f in failures[:5])
                     + ("; …" if len(failures) > 5 else ""))
    for diff in diffs:
        lines += ["", *_against(diff)]
    if comparison.baseline:
        worse = sum(len(diff.worse) for diff in diffs)
        lines += ["", f"WORSE: {worse} {'row' if worse == 1 else 'rows'} both runs checked "
                      "got worse against the baseline" if worse
                  else "no row both runs checked got worse against the baseline"]
    return visible_lines("\n".join(lines))


def _against(diff: Changes) -> list[str]:
    """One run against the baseline: what got worse and better among the rows both checked,
    then the rows only one of them checked."""
    unshared = len(diff.narrower) + len(diff.wider)
    return [f"{diff.run.name} against the baseline {diff.baseline.name}: "
            f"{len(diff.worse)} worse, {len(diff.better)} better"
            + (f"; {unshared} checked by one run only" if unshared else ""),
            *(f"  note: {note}" for note in diff.notes),
            *(f"  {change.line()}" for change in (*diff.worse, *diff.better)),
            *_coverage(diff)]


def _coverage(diff: Changes) -> list[str]:
    """The coverage differences of one run under their own heading: a line each way, and its
    first rows (the page and the Markdown list more, their matrices every row)."""
    if not diff.coverage:
        return []
    lines = ["  coverage differences, not gated (rows only one of the two runs checked):"]
    for line, rows in diff.coverage:
        lines += [f"    {line}",
                  *(f"      {change.row()}" for change in rows[:TERMINAL_COVERAGE_ROWS])]
        if len(rows) > TERMINAL_COVERAGE_ROWS:
            lines.append(f"      … and {len(rows) - TERMINAL_COVERAGE_ROWS} more (--html and "
                         "--md list more; their matrices show every row)")
    return lines
