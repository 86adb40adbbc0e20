"""The comparison as Markdown (GitHub-flavoured: a pull request comment, a job summary): the
runs, the changes against a baseline with the coverage differences apart, the property matrix,
the requirement, limit and hostile-input matrices in ``<details>`` (open where a run fails),
and each failure. Every text of a report is made visible and escaped: HTML, table pipes and
the marks of emphasis, code and links."""

from __future__ import annotations

import html
import re

from waypost.conformance.baseline import ARROWS, COVERAGE_ROWS, Change, Changes
from waypost.conformance.comparison import (
    Cell,
    Comparison,
    Group,
    Row,
    compare,
    short,
    verdict,
)
from waypost.conformance.comparison_page import (
    column_name,
    duration,
    run_tally,
    title,
    when,
)
from waypost.conformance.report_file import Run
from waypost.properties.wire.untrusted import visible, visible_lines

_MARKS = re.compile(r"([\\`*_\[\]|~])")
#: What GitHub would turn into a link or a mention by itself: a scheme's colon, "www.", "@".
_AUTOLINKS = re.compile(r"[:@]|(?<=w)\.")


def md(text: str) -> str:
    """``text`` safe in a Markdown table cell or paragraph: one line, shown as written, with
    no mark, link, autolink or mention of its own (``https://…``, ``www.…`` and ``@name``
    are written with character references, which GitHub shows but does not link)."""
    escaped = _MARKS.sub(r"\\\1", html.escape(visible(text).replace("\n", " "), quote=False))
    return _AUTOLINKS.sub(lambda found: f"&#{ord(found.group())};", escaped)


def pre(text: str) -> str:
    """A block of text (a message, a command) as an escaped ``<pre>``."""
    escaped = html.escape(visible_lines(text))
    return f"<pre>{_AUTOLINKS.sub(lambda found: f'&#{ord(found.group())};', escaped)}</pre>"


def markdown(runs: list[Run], changes: list[Changes] | None = None) -> str:
    """The Markdown of ``runs`` (a baseline first when ``changes`` are given, even none)."""
    comparison = compare(runs, baseline=changes is not None)
    lines = [f"# {md(title(comparison))}", "", *_runs(comparison)]
    for column, diff in enumerate(changes or [], start=1):  # each run after the baseline
        lines += _changes(comparison, diff, column)
    lines += ["## Properties", "", *_matrix(comparison, comparison.properties, "Property"),
              "", "## Requirements by section of docs/protocol.md", ""]
    for group in (*comparison.sections, comparison.limits, comparison.hostile):
        lines += _group(comparison, group)
    lines += ["## Failures", ""]
    for column, failures in enumerate(comparison.failures):
        name = md(column_name(comparison, column))
        lines += [f"### {name}: {len(failures) or 'no'} "
                  f"{'failure' if len(failures) == 1 else 'failures'}", ""]
        for failure in failures:
            outcome = failure.outcome
            lines += [f"#### ✗ {md(failure.kind)} {md(outcome.key)} {md(outcome.name[:200])}", ""]
            lines += [pre(outcome.message), ""] if outcome.message else []
            lines += [f"- replay file: "
                      f"{_code(outcome.replay) if outcome.replay else 'none written'}"]
            lines += [f"- replay it with: {_code(outcome.replay_command)}"] \
                if outcome.replay_command else []
            lines.append("")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """Inline: Markdown inside inline HTML is still Markdown, so escaped as any text."""
    return f"<code>{md(text)}</code>"


def _runs(comparison: Comparison) -> list[str]:
    runs = comparison.runs
    rows = [("verdict", [("✗ failed" if run.failed else "✓ no failure")
                         + f" ({run_tally(run)})" for run in runs]),
            ("target", [run.target for run in runs]),
            ("server", [run.server or "not described" for run in runs]),
            ("protocol", [run.protocol or "not described" for run in runs]),
            ("seed", ["—" if run.seed is None else str(run.seed) for run in runs]),
            ("profile", [run.profile for run in runs]),
            ("started", [when(run.started) for run in runs]),
            ("duration", [duration(run.seconds) for run in runs]),
            ("kit", [f"waypost {run.kit}" if run.kit else "unknown" for run in runs]),
            ("report", [run.name or "—" for run in runs])]
    head = [md(column_name(comparison, n)) for n in range(len(runs))]
    return [f"| Run | {' | '.join(head)} |", "|---" * (len(runs) + 1) + "|",
            *(f"| {what} | {' | '.join(md(value) for value in values)} |"
              for what, values in rows), ""]


def _changes(comparison: Comparison, diff: Changes, column: int) -> list[str]:
    lines = [f"## Changes: {md(column_name(comparison, column))} against "
             f"{md(column_name(comparison, 0))}: {len(diff.worse)} worse, "
             f"{len(diff.better)} better", ""]
    lines += [f"Note: {md(note)}." for note in diff.notes]
    if diff.failing:
        lines += ["", f"**Worse: now failing ({len(diff.failing)})**", "",
                  *map(_change, diff.failing)]
    if diff.better:
        lines += ["", f"<details><summary><b>Better ({len(diff.better)})</b></summary>", "",
                  *map(_change, diff.better), "", "</details>"]
    return [*lines, "", *_coverage(diff)]


def _coverage(diff: Changes) -> list[str]:
    """The rows only one of the two runs checked, under their own heading: neither worse nor
    better, not gated; at most :data:`COVERAGE_ROWS` of each listed."""
    if not diff.coverage:
        return []
    lines = ["### Coverage differences (not gated)", "",
             "Rows only one of the two runs checked: neither worse nor better."]
    for line, rows in diff.coverage:
        more = len(rows) - COVERAGE_ROWS
        lines += ["", f"<details><summary><b>{html.escape(visible(line))}</b></summary>", "",
                  *map(_change, rows[:COVERAGE_ROWS]),
                  *([f"- … and {more} more: the matrices below show every row"]
                    if more > 0 else []), "", "</details>"]
    return [*lines, ""]


def _change(change: Change) -> str:
    arrow = ARROWS[change.what]
    return (f"- {arrow}: {md(change.kind)} **{md(change.key)}** {md(short(change.name))}: "
            f"{_mark(change.before)} → {_mark(change.after)}")


def _mark(result: str) -> str:
    shown = verdict(result)
    return f"{shown.symbol} {md(shown.label)}"


def _cell(cell: Cell) -> str:
    counts = f" ({cell.counts})" if cell.counts else ""
    return f"{_mark(cell.result)}{counts}"


def _matrix(comparison: Comparison, rows: tuple[Row, ...], what: str) -> list[str]:
    head = [md(column_name(comparison, n)) for n in range(len(comparison.runs))]
    lines = [f"| {what} | {' | '.join(head)} |", "|---" * (len(head) + 1) + "|"]
    for row in rows:
        differs = " ≠" if len(comparison.runs) > 1 and row.differs else ""
        lines.append(f"| **{md(row.key)}** {md(short(row.name, 110))}{differs} | "
                     f"{' | '.join(_cell(cell) for cell in row.cells)} |")
    return lines


def _group(comparison: Comparison, group: Group) -> list[str]:
    tallies = []
    for column in range(len(comparison.runs)):
        tally = group.tally(column)
        tallies.append(f"run {column + 1}: " + ", ".join(
            f"{n} {label}" for label, n in (("FAIL", tally["fail"]), ("pass", tally["pass"]),
                                            ("expected", tally["xfail"]),
                                            ("not run", tally["none"])) if n))
    opened = " open" if group.failing else ""
    return [f"<details{opened}><summary><b>{html.escape(visible(group.title))}</b>: "
            f"{len(group.rows)} rows; {html.escape('; '.join(tallies))}</summary>", "",
            *_matrix(comparison, group.rows, "Row"), "", "</details>", ""]
