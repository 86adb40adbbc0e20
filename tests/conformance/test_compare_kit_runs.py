"""Reports of real runs: the command line's ``--report-json`` validates against the published
schema and its ``--html`` page shows the run; ``compare --baseline`` of the reference against a
broken server of tests/properties/rules/test_kit_broken.py shows the failure and exits 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.properties.rules.test_kit_broken import cursor_not_bound_to_consumer
from tests.support.html_page import Page
from tests.support.kit_reports import kit_report, validate
from waypost.cli import main
from waypost.properties.coverage.catalogue import select

pytestmark = pytest.mark.slow


def test_a_real_run_writes_a_report_of_the_schema_and_its_page(tmp_path: Path) -> None:
    report, page = tmp_path / "run.json", tmp_path / "run.html"
    done = subprocess.run(
        [sys.executable, "-m", "waypost.cli", "conformance", "--target", "sqlite", "--profile",
         "quick", "--seed", "11", "--report-json", str(report), "--html", str(page)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    written = json.loads(report.read_text())
    validate(written)
    assert written["describe"]["server"].startswith("waypost-reference/")
    shown = Page(page.read_text())
    assert written["run_id"] in shown.texts["run-1"]
    assert [cell.text.split()[:2] for cell in shown.row("P01")[1:]] == [["✓", "pass"]]


def test_compare_shows_where_a_broken_server_fails_against_the_reference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = select("P07,P01")
    reference = kit_report(tmp_path / "reference", "reference", selected=chosen,
                           replay_dir=tmp_path / "replays")
    broken = kit_report(tmp_path / "broken", "broken", cursor_not_bound_to_consumer,
                        selected=chosen, replay_dir=tmp_path / "replays")
    failed = {p["id"]: p for p in broken["properties"] if p["result"] == "fail"}
    assert failed, "the broken server must fail a property of its own"
    paths = []
    for name, report in (("reference", reference), ("broken", broken)):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(report))
    page = tmp_path / "compare.html"
    status = main(["conformance", "compare", "--baseline", str(paths[0]), str(paths[1]),
                   "--html", str(page)])
    out = capsys.readouterr().out
    assert status == 1
    shown = Page(page.read_text())
    for pid, prop in failed.items():
        assert f"worse  property {pid}" in out
        cells = shown.row(pid)[1:]
        assert [cell.text.split()[1] for cell in cells] == ["pass", "FAIL"]
        details = shown.texts[str(cells[1].link)[1:]]
        assert prop["message"][:60] in details
        assert prop["replay_command"] in details
