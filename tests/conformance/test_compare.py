"""``waypost conformance compare``: runs side by side in the terminal, as a page and as Markdown,
and with ``--baseline`` what got worse (exit status 1) and what got better. The reports are
made up here (tests/support/kit_reports.py); test_compare_kit_runs.py compares real runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.html_page import Page
from tests.support.kit_reports import made_report
from waypost.cli import main
from waypost.conformance.baseline import COVERAGE_ROWS, changes
from waypost.conformance.comparison import compare
from waypost.conformance.report_file import parse

MESSAGE = "a cursor of another consumer was accepted"


def written(tmp_path: Path, name: str, report: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(report))
    return str(path)


def run_compare(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    status = main(["conformance", "compare", *arguments])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out


def test_the_matrices_put_every_row_of_every_run_side_by_side() -> None:
    runs = [parse(made_report("reference"), "a.json"),
            parse(made_report("port", failing={"P07": MESSAGE}, not_run=("P18",),
                              fuzz_finding=True), "b.json")]
    comparison = compare(runs)
    keys = [row.key for row in comparison.properties]
    assert keys == [f"P{n:02}" for n in range(1, 19)] + ["HOSTILE", "FUZZ"]
    results = {row.key: [cell.result for cell in row.cells] for row in comparison.properties}
    assert results["P07"] == ["pass", "fail"]
    assert results["P18"] == ["pass", "not run"]
    assert results["FUZZ"] == ["absent", "fail"]  # the first run had no fuzz phase
    assert results["P01"] == ["pass", "pass"]
    p07 = next(row for row in comparison.properties if row.key == "P07")
    assert p07.differs
    assert p07.cells[1].counts.endswith("failed")
    written_ids = [r["id"] for r in made_report()["requirements"]]
    assert [row.key for group in comparison.sections for row in group.rows] == written_ids
    titles = [group.title for group in comparison.sections]
    assert titles[0] == "§3 Values"
    assert titles[-1] == "The reference consumer (docs/consumer.md)"


def test_each_failure_is_listed_with_its_replay_and_its_cells_link_to_it() -> None:
    runs = [parse(made_report("reference"), "a.json"),
            parse(made_report("port", failing={"P07": MESSAGE}, hostile_failing="content_type",
                              limit_failing="ack_items", fuzz_finding=True), "b.json")]
    comparison = compare(runs)
    assert comparison.failures[0] == []
    failures = {(f.kind, f.outcome.key): f for f in comparison.failures[1]}
    assert set(failures) == {("property", "P07"), ("property", "FUZZ"), ("limit", "ack_items"),
                             ("hostile-input check", "content_type"),
                             ("fuzz finding", "finding 1")}
    p07 = failures["property", "P07"]
    assert p07.outcome.message == MESSAGE
    assert p07.outcome.replay_command == (f"waypost conformance replay {p07.outcome.replay} "
                                          "--target port")
    cells = {row.key: row.cells[1] for row in comparison.properties}
    assert cells["P07"].link == p07.anchor
    assert cells["HOSTILE"].link == failures["hostile-input check", "content_type"].anchor
    assert cells["FUZZ"].link == failures["property", "FUZZ"].anchor
    for group in comparison.sections:
        for row in group.rows:
            if row.cells[1].result == "fail":
                assert row.cells[1].link in {f.anchor for f in comparison.failures[1]}


def test_compare_prints_the_property_table_and_exits_0_without_a_baseline(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = written(tmp_path, "a", made_report("reference"))
    b = written(tmp_path, "b", made_report("port", failing={"P07": MESSAGE}))
    status, out = run_compare(capsys, a, b)
    assert status == 0  # a comparison alone gates nothing: the runs' own exit status does
    p07 = next(line for line in out.splitlines() if "P07 Cursor integrity" in line)
    assert p07.index("pass") < p07.index("FAIL")
    assert "2 · port: 1 failure; P07 property" in out


def test_baseline_lists_what_got_worse_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "release", made_report("release", limit_failing="ack_items"))
    new = written(tmp_path, "staging", made_report(
        "staging", failing={"P07": MESSAGE}, not_run=("P18",), hostile_failing="content_type"))
    status, out = run_compare(capsys, "--baseline", base, new)
    assert status == 1
    lines = out.splitlines()
    worse = [line.split(":")[0].strip() for line in lines if line.strip().startswith("worse")]
    assert "worse  property P07 Cursor integrity" in worse
    assert "worse  property HOSTILE Hostile input" in worse
    assert "worse  hostile-input check content_type" in " ".join(worse)
    assert any(line.startswith("worse  requirement WP-CUR-") for line in worse)
    # P18 no longer checked: a coverage difference, not a regression
    assert not any("P18" in line for line in worse)
    assert "      property P18 Crash-safe lifecycle: pass → not run" in lines
    assert any(line.strip().startswith("better limit ack_items") for line in lines)
    assert lines[-1] == f"WORSE: {len(worse)} rows both runs checked got worse against the baseline"


def test_baseline_with_nothing_worse_exits_0(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "release", made_report("release", failing={"P07": MESSAGE}))
    fixed = written(tmp_path, "fixed", made_report("fixed"))
    status, out = run_compare(capsys, "--baseline", base, fixed)
    assert status == 0
    assert "better property P07 Cursor integrity: FAIL → pass" in out
    assert out.splitlines()[-1] == "no row both runs checked got worse against the baseline"
    status, out = run_compare(capsys, "--baseline", base, base)
    assert status == 0
    assert "0 worse, 0 better\n" in out
    assert "coverage" not in out


def test_a_change_of_profile_is_noted(tmp_path: Path) -> None:
    diff = changes(parse(made_report("a", fuzz_finding=True), "a"),
                   parse(made_report("a", profile="quick"), "b"))
    assert diff.notes == ["the runs differ in profile ci → quick: a check one of them did not "
                          "run is a coverage difference, not a change"]
    fuzz = next(change for change in diff.changes if change.key == "FUZZ")
    assert (fuzz.before, fuzz.after, fuzz.worse, fuzz.what) == ("fail", "absent", False,
                                                               "narrower")
    assert diff.better == ()


def narrowed(report: dict[str, Any], keep: set[str]) -> dict[str, Any]:
    """``report`` as a run of ``--only`` the properties ``keep`` writes it: the others
    skipped, their requirement ids (and those only the hostile phase checks) not run, the
    hostile phase skipped with no check of its own, the limits of other properties skipped."""
    for prop in report["properties"]:
        if prop["id"] not in keep:
            prop.update(result="skipped", checks=0, checks_failed=0, requirements={},
                        message="", replay=None, replay_command=None)
    for row in report["requirements"]:
        if row["property"] not in keep and row["result"] != "not checked":
            row.update(result="not run", checks={}, checks_run=0, checks_failed=0,
                       note="no check tagged with it ran (--only, or nothing drew it)")
    for limit in report["limits"]:
        if not keep & set(limit["properties"]):
            limit.update(result="skipped", replay=None, replay_command=None)
    report["hostile"] = []
    return report


def only(target: str, keep: set[str], **made: Any) -> dict[str, Any]:
    return narrowed(made_report(target, **made), keep)


def worse_keys(out: str) -> list[str]:
    """The keys of the rows the terminal names as worse."""
    return [line.split()[2] for line in out.splitlines() if line.startswith("  worse ")]


def test_a_narrower_run_against_a_full_baseline_is_no_regression(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "release", made_report("release"))
    new = written(tmp_path, "only", only("only", {"P03", "P06"}))
    status, out = run_compare(capsys, "--baseline", base, new)
    assert status == 0
    assert worse_keys(out) == []
    assert " 0 worse, 0 better; " in out
    lines = out.splitlines()
    assert lines[-1] == "no row both runs checked got worse against the baseline"
    heading = lines.index("  coverage differences, not gated (rows only one of the two runs "
                          "checked):")
    summary = lines[heading + 1]
    assert summary.startswith("    narrower: ")
    assert "rows the baseline checked were not checked in this run (" in summary
    assert "skipped (--only): 19" in summary  # 16 properties, HOSTILE and the 2 limits
    assert "absent: 2" in summary  # the hostile checks the skipped phase did not write
    count = int(summary.split()[1])
    listed = [line for line in lines[heading + 2:] if line.startswith("      ")]
    assert len(listed) == 11  # the first 10 rows, then how many more
    assert listed[0] == "      property P01 Space isolation: pass → skipped (--only)"
    assert listed[-1].startswith(f"      … and {count - 10} more")
    assert not any("P03" in line or "P06" in line for line in listed)


def test_a_narrower_run_with_one_regression_exits_1_naming_only_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base_report = made_report("release")
    base = written(tmp_path, "release", base_report)
    new = written(tmp_path, "only", only("only", {"P03", "P06"}, failing={"P03": MESSAGE}))
    status, out = run_compare(capsys, "--baseline", base, new)
    assert status == 1
    p03_ids = [row["id"] for row in base_report["requirements"] if row["property"] == "P03"]
    assert worse_keys(out) == ["P03", *p03_ids]  # the property, then its requirement ids
    assert "  worse  property P03 Idempotent submissions: pass → FAIL" in out
    assert out.splitlines()[-1] == (f"WORSE: {1 + len(p03_ids)} rows both runs checked got "
                                    "worse against the baseline")
    assert "    narrower: " in out  # the skipped rest is still listed, apart


def test_a_wider_run_is_not_better_for_covering_more(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "only", only("only", {"P03", "P06"}))
    full = written(tmp_path, "release", made_report("release"))
    status, out = run_compare(capsys, "--baseline", base, full)
    assert status == 0
    assert " 0 worse, 0 better; " in out
    assert not any(line.startswith("  better ") for line in out.splitlines())
    wider = next(line for line in out.splitlines() if line.startswith("    wider: "))
    assert "rows this run checked were not checked in the baseline (" in wider
    assert "skipped (--only): 19" in wider
    assert wider.endswith(f"in this run: pass: {wider.split()[1]}")
    assert "    narrower: " not in out


def test_a_kit_or_server_error_the_baseline_did_not_have_is_worse(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ERROR row is written only when it fails: a run without one passed it."""
    report = made_report("staging")
    report["properties"].append({**report["properties"][0], "id": "ERROR",
                                 "name": "Kit or server error", "result": "fail",
                                 "message": "ConnectionResetError()"})
    status, out = run_compare(capsys, "--baseline",
                              written(tmp_path, "release", made_report("release")),
                              written(tmp_path, "staging", report))
    assert status == 1
    assert worse_keys(out) == ["ERROR"]
    assert "  worse  property ERROR Kit or server error: absent → FAIL" in out


def test_compare_writes_the_page_and_the_markdown(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "release", made_report("release"))
    new = written(tmp_path, "staging", made_report("staging", failing={"P07": MESSAGE}))
    page, md = tmp_path / "out.html", tmp_path / "out.md"
    status, _ = run_compare(capsys, "--baseline", base, new, "--html", str(page),
                            "--md", str(md))
    assert status == 1
    shown = Page(page.read_text())
    assert [cell.text.split()[:2] for cell in shown.row("P07")[1:]] == [["✓", "pass"],
                                                                         ["✗", "FAIL"]]
    text = md.read_text()
    assert "| **P07** Cursor integrity ≠ | ✓ pass" in text
    assert "✗ FAIL" in text
    assert f"<pre>{MESSAGE}</pre>" in text
    assert "## Changes: 2 · staging against 1 · release (baseline)" in text


def test_the_markdown_lists_coverage_differences_apart_and_bounded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = written(tmp_path, "release", made_report("release"))
    new = written(tmp_path, "only", only("only", {"P03", "P06"}, failing={"P06": MESSAGE}))
    md = tmp_path / "out.md"
    status, _ = run_compare(capsys, "--baseline", base, new, "--md", str(md))
    assert status == 1
    text = md.read_text()
    changes_part = text[text.index("## Changes: "):text.index("### Coverage differences")]
    coverage_part = text[text.index("### Coverage differences (not gated)"):
                         text.index("## Properties")]
    assert "- ▼ worse: property **P06**" in changes_part
    assert "narrower" not in changes_part
    assert "▼ worse" not in coverage_part
    summary = next(line for line in coverage_part.splitlines() if "<summary>" in line)
    count = int(summary.split("narrower: ")[1].split()[0])
    assert count > COVERAGE_ROWS
    listed = [line for line in coverage_part.splitlines() if line.startswith("- ")]
    assert sum(line.startswith("- − narrower: ") for line in listed) == COVERAGE_ROWS
    assert listed[-1] == (f"- … and {count - COVERAGE_ROWS} more: the matrices below show "
                          "every row")


def test_the_markdown_escapes_every_text_of_a_report(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    hostile = made_report("x | <b>y</b> [z](http://evil.test)",
                          failing={"P07": "<script>alert(1)</script>\x1b[31m @org/team "
                                          "www.evil.test"})
    md = tmp_path / "out.md"
    status, _ = run_compare(capsys, written(tmp_path, "x", hostile), "--md", str(md))
    assert status == 0
    text = md.read_text()
    assert "<script>" not in text
    assert "<b>y" not in text
    assert "[z](" not in text
    assert "x \\| &lt;b&gt;y&lt;/b&gt; \\[z\\](http&#58;//evil.test)" in text  # no autolink
    assert "@org" not in text  # no mention
    assert "www.evil" not in text
    assert "\x1b" not in text


def test_compare_puts_twenty_runs_in_one_page(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    report = made_report("port", failing={"P07": MESSAGE}, fuzz_finding=True)
    paths = [written(tmp_path, f"run{n}", {**report, "seed": n}) for n in range(20)]
    page = tmp_path / "out.html"
    status, _ = run_compare(capsys, *paths, "--html", str(page))
    assert status == 0
    shown = Page(page.read_text())
    assert len(shown.row("P07")) == 21
    assert [f"run-{n}" in shown.texts for n in (1, 20, 21)] == [True, True, False]


def test_compare_that_cannot_write_its_page_says_so_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = written(tmp_path, "a", made_report())
    status = main(["conformance", "compare", report, "--html",
                   str(tmp_path / "missing" / "out.html")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert "cannot write" in err
