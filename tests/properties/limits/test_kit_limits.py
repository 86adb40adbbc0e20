"""The kit's limit phase against the reference: every limit ``/v1/describe`` publishes is
checked at N and N + 1 with the value the target publishes (never an assumed one); a limit it
does not publish is reported as such; the reports list every limit with its results."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from waypost.conformance import report as reports
from waypost.conformance.phases import limit_phase
from waypost.conformance.run_results import LimitOutcome, Report
from waypost.properties.verdicts.violations import Ledger
from waypost.properties.wire.http import Session
from waypost.reference.domain.published_limits import D1_LIMITS, Limits
from waypost.reference.server import served_context

KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app


def phase(client: TestClient, admin: str, tmp_path: Path,
          selected: set[str] | None = None) -> dict[str, LimitOutcome]:
    """The limit phase against ``client``'s app; its rows by limit."""
    failures: list[BaseException] = []

    def failed(error: BaseException, world: Any) -> str:
        failures.append(error)
        return str(tmp_path / "replay.json")
    rows = limit_phase(Session(kit_client(client), admin), "lim", Ledger(), selected, failed)
    assert not failures, failures
    return {row.name: row for row in rows}


def published(client: TestClient) -> dict[str, int]:
    limits: dict[str, int] = client.get("/v1/describe").json()["limits"]
    return limits


@pytest.mark.slow
def test_every_published_limit_holds_at_its_boundary_on_the_reference(
        tmp_path: Path, kit_app: KitApp, kit_admin: str) -> None:
    with kit_app(tmp_path / "data") as client:
        rows = phase(client, kit_admin, tmp_path)
        values = published(client)
    checked = {name for name, row in rows.items() if row.result == "pass"}
    assert checked == set(values) - {"upload_expiry_seconds"}
    for name in checked:
        assert rows[name].value == values[name]
        assert (rows[name].at_limit, rows[name].over_limit) == ("accepted", "refused")
        assert rows[name].properties
    assert rows["ack_items"].properties[0] == "P10"
    assert rows["upload_expiry_seconds"].result == "not checked"
    assert rows["manifest_input_bytes"].result == ("pass" if "manifest_input_bytes" in values
                                                   else "not published")


def test_the_values_come_from_describe(tmp_path: Path, kit_app: KitApp,
                                       kit_admin: str) -> None:
    """A deployment publishing smaller limits (and D1's entries per revision) is checked at
    its own values; one it does not publish is reported, one the kit does not know is listed."""

    class Smaller(Limits):
        def published(self) -> dict[str, int]:
            shown = super().published()
            del shown["attachments"]
            return {**shown, "widgets_per_space": 5}

    smaller = Smaller(ack_items=3, recipients=2, body_text_bytes=100, upload_bytes=1000,
                      inline_items_per_publish=6, page_limit=5, wait_seconds=2,
                      memory_entries_per_revision=D1_LIMITS.memory_entries_per_revision // 500,
                      request_bytes=10_000, revision_manifest_bytes=20_000)
    with kit_app(tmp_path / "data") as client:
        served_context(client.app).limits = smaller
        rows = phase(client, kit_admin, tmp_path)
    for name, value in smaller.published().items():
        if name not in ("upload_expiry_seconds", "widgets_per_space", "manifest_input_bytes"):
            assert (rows[name].value, rows[name].result) == (value, "pass"), rows[name]
    assert (rows["attachments"].value, rows["attachments"].result) == (None, "not published")
    assert rows["widgets_per_space"].result == "not checked"
    # a manifest input as large as the limit cannot be uploaded under upload_bytes = 1000
    assert rows["manifest_input_bytes"].result == "not checked"
    assert "upload_bytes = 1000" in rows["manifest_input_bytes"].note
    assert "no check" in rows["widgets_per_space"].note


def test_only_checks_the_limits_of_the_selected_properties(tmp_path: Path, kit_app: KitApp,
                                                           kit_admin: str) -> None:
    with kit_app(tmp_path / "data") as client:
        rows = phase(client, kit_admin, tmp_path, selected={"P10"})
    assert rows["ack_items"].result == "pass"
    assert {row.result for name, row in rows.items()
            if name not in ("ack_items", "manifest_input_bytes", "upload_expiry_seconds")} \
        == {"skipped"}


def test_the_reports_list_each_limit_with_its_value_and_both_results(tmp_path: Path) -> None:
    report = Report("sqlite", "ci", 1, "run1", limits=[
        LimitOutcome("ack_items", 20, ("P10",), "accepted", "refused", "pass", "an ACK"),
        LimitOutcome("recipients", 64, ("P05",), "accepted", "FAIL", "fail",
                     "P05: a send past …", "replays/x.json"),
        LimitOutcome("manifest_input_bytes", None, ("P14",), "", "", "not published",
                     "describe publishes no value for it")])
    text = reports.table(report)
    assert "ack_items" in text
    assert " 20 " in text
    assert "accepted    refused" in text
    assert "replays/x.json" in text
    assert "not published" in text
    data = reports.as_json(report)
    assert data["limits"][0] == {"limit": "ack_items", "value": 20, "properties": ["P10"],
                                 "accepted_at_limit": "accepted",
                                 "refused_above_limit": "refused", "result": "pass",
                                 "note": "an ACK", "replay": None, "replay_command": None}
    assert data["limits"][1]["replay_command"] == (
        "waypost conformance replay replays/x.json --target sqlite")
    reports.write_junit(report, tmp_path / "r.xml")
    suite = ET.parse(tmp_path / "r.xml").getroot()
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert suite.get("failures") == "1"
    assert suite.get("tests") == "3"
    assert cases["limit recipients = 64"].find("failure") is not None
    assert json.loads(cases["limit recipients = 64"].find("failure").text or "")["replay"]
    assert cases["limit manifest_input_bytes = None"].find("skipped") is not None
    assert not list(cases["limit ack_items = 20"])
