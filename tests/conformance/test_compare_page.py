"""The comparison page: one self-contained HTML file (inline CSS, no script, nothing fetched), every
text of a report escaped, pass, fail and not run told apart by words and symbols as well as
colours, each failed cell linked to its details, requirement sections open where a run fails.
test_compare_browser.py looks at it in a real browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conformance.test_compare import only
from tests.support.html_page import Page
from tests.support.kit_reports import made_report, made_run
from waypost.conformance.baseline import COVERAGE_ROWS, changes
from waypost.conformance.comparison_page import page
from waypost.conformance.report import write_html
from waypost.conformance.report_file import parse

MESSAGE = "a cursor of another consumer was accepted"


def two_runs(**broken: Any) -> str:
    runs = [parse(made_report("reference"), "reference.json"),
            parse(made_report("port", **broken), "port.json")]
    return page(runs, [changes(runs[0], runs[1])])


def test_the_page_is_self_contained() -> None:
    text = two_runs(failing={"P07": MESSAGE}, fuzz_finding=True)
    shown = Page(text)
    assert "script" not in shown.tags
    assert "link" not in shown.tags
    assert "img" not in shown.tags
    assert "style" in shown.tags
    links = [value for tag, name, value in shown.attributes if name in ("href", "src", "action")]
    assert links
    assert all(link.startswith("#") for link in links), links
    style = text[text.index("<style>"):text.index("</style>")]
    assert "url(" not in style
    assert "@import" not in style
    assert "@media print" in style
    assert "overflow-x: auto" in style
    assert ("meta", "name", "viewport") in shown.attributes


def test_results_differ_in_words_and_symbols_not_only_colour() -> None:
    shown = Page(two_runs(failing={"P07": MESSAGE}, not_run=("P18",)))
    words = {}
    for key in ("P01", "P07", "P18"):
        cell = shown.row(key)[2]
        words[key] = (cell.classes, cell.text.split()[:2])
    assert words["P01"] == ({"pass"}, ["✓", "pass"])
    assert words["P07"] == ({"fail"}, ["✗", "FAIL"])
    assert words["P18"] == ({"none"}, ["○", "not"])
    assert "≠ differs" in shown.row("P07")[0].text
    assert "≠ differs" not in shown.row("P01")[0].text


def test_every_failed_cell_links_to_the_details_of_its_failure() -> None:
    shown = Page(two_runs(failing={"P07": MESSAGE}, hostile_failing="content_type",
                          limit_failing="ack_items", fuzz_finding=True))
    failed = [cell for row in shown.rows for cell in row if "fail" in cell.classes]
    assert len(failed) > 5  # properties, requirement ids, the limit, the hostile check
    for cell in failed:
        assert cell.link is not None, cell
        assert cell.link.startswith("#"), cell
        assert cell.link[1:] in shown.texts, cell.link
    details = shown.texts[str(shown.row("P07")[2].link)[1:]]
    assert MESSAGE in details
    assert "waypost-replays/runport-P07.json" in details
    assert ("waypost conformance replay waypost-replays/runport-P07.json --target port"
            in details)
    assert "content_type broke" in shown.texts[str(shown.row("HOSTILE")[2].link)[1:]]
    assert all("fail" not in cell.classes for cell in (row[1] for row in shown.rows if row))


def test_requirement_sections_are_open_only_where_a_run_fails() -> None:
    shown = Page(two_runs(failing={"P07": MESSAGE}))
    assert shown.opened
    failing = {anchor for anchor, text in shown.texts.items()
               if anchor.startswith("section-") and "✗" in text}
    assert failing
    assert {anchor for anchor, opened in shown.opened.items()
            if opened and anchor.startswith("section-")} == failing


def test_the_page_escapes_every_text_of_a_report() -> None:
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>\x1b[31m\u202e"
    runs = [parse(made_report(evil, failing={"P07": evil}, hostile_failing="content_type"),
                  evil)]
    text = page(runs)
    assert "<script>" not in text
    assert "<img" not in text
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "\\x1b[31m\\u202e" in text


def test_the_single_run_page_of_a_run(tmp_path: Path) -> None:
    """What ``waypost conformance --html`` writes: the page of the one run."""
    run = made_run("sqlite", failing={"P07": MESSAGE})
    path = tmp_path / "run.html"
    write_html(run, path)
    text = path.read_text()
    card = Page(text).texts["run-1"]
    assert "sqlite" in card
    assert run.run_id in card
    assert "(baseline)" not in text
    assert "Written by <code>waypost conformance</code>" in text
    assert MESSAGE in text


def test_the_page_lists_coverage_differences_apart_from_what_got_worse() -> None:
    runs = [parse(made_report("reference"), "reference.json"),
            parse(only("port", {"P03", "P06"}, failing={"P06": MESSAGE}), "port.json")]
    diff = changes(runs[0], runs[1])
    shown = Page(page(runs, [diff]))
    both, coverage = shown.texts["both-checked-2"], shown.texts["coverage-2"]
    assert "▼ worse property P06" in both
    assert "narrower" not in both
    assert "skipped" not in both
    assert "Coverage differences (not gated)" in coverage
    assert "▼ worse" not in coverage
    assert f"narrower: {len(diff.narrower)} rows the baseline checked" in coverage
    assert len(diff.narrower) > COVERAGE_ROWS
    assert coverage.count("− narrower") == COVERAGE_ROWS
    assert f"… and {len(diff.narrower) - COVERAGE_ROWS} more" in coverage
    assert "P06" not in coverage


def test_a_page_without_coverage_differences_has_no_such_heading() -> None:
    assert "Coverage differences" not in two_runs(failing={"P07": MESSAGE})
