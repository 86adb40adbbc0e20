"""The JSON report as a versioned format: what a run writes validates against the published
schema (docs/report.schema.json), names its version, start and server, and ``compare`` refuses
what it cannot read in one line, exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from tests.support.kit import kit_served
from tests.support.kit_reports import SCHEMA, made_report, validate
from waypost.cli import main
from waypost.conformance import report_file
from waypost.conformance.report import MARKS
from waypost.conformance.report_file import REPORT_VERSION, read
from waypost.conformance.targets import free_port, identity


def test_the_schema_is_a_valid_json_schema_of_this_version() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["report_version"]["const"] == REPORT_VERSION


@pytest.mark.parametrize("made", [
    {}, {"failing": {"P07": "a foreign cursor was accepted"}, "hostile_failing": "content_type",
         "limit_failing": "ack_items", "fuzz_finding": True},
    {"not_run": ("P17", "P18"), "profile": "quick"}])
def test_a_report_validates_against_the_published_schema(made: dict[str, Any]) -> None:
    report = made_report("reference", **made)
    validate(report)
    assert report["report_version"] == REPORT_VERSION
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["started"])
    replayed = [p for p in report["properties"] if p["replay"]]
    assert len(replayed) == len(made.get("failing", {}))
    for prop in replayed:
        assert prop["replay_command"] == (f"waypost conformance replay {prop['replay']} "
                                          "--target reference")


def test_the_schema_refuses_a_report_without_its_version() -> None:
    report = made_report()
    del report["report_version"]
    with pytest.raises(jsonschema.ValidationError):
        validate(report)


def test_a_run_names_the_server_its_describe_names(tmp_path: Path) -> None:
    with kit_served(tmp_path / "data") as client:
        described = client.get("/v1/describe").json()
        said = identity(kit_client(client))
    assert (said.protocol, said.server) == (described["protocol"], described["server"])


@pytest.mark.parametrize(("answer", "server"), [
    ({"protocol": "waypost/1", "server": "port\x1b[31m/2\u202e"}, "port\\x1b[31m/2\\u202e"),
    ({"protocol": "waypost/1", "server": ["not", "a", "string"]}, None),
    ({"protocol": "waypost/1", "server": "x" * 10_000}, "x" * 200),
    ({"protocol": "waypost/1", "server": "\x1b" * 300}, "\\x1b" * 50),  # cut once escaped
    ("not an object", None)])
def test_a_targets_self_description_is_bounded_and_visible(answer: Any, server: str | None
                                                          ) -> None:
    """A deployment whose describe says this (an app of its own, in process)."""
    async def describe(request: Request) -> Response:
        return JSONResponse(answer)

    with TestClient(Starlette(routes=[Route("/v1/describe", describe)])) as client:
        assert identity(client).server == server


def test_a_target_that_does_not_answer_describe_names_nothing() -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{free_port()}") as nobody:  # nothing listens
        said = identity(nobody)
    assert (said.protocol, said.server) == (None, None)


def test_reading_a_report_back_keeps_what_compare_shows(tmp_path: Path) -> None:
    written = made_report("broken", failing={"P07": "a foreign cursor was accepted"},
                          fuzz_finding=True)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(written))
    run = read(path)
    assert (run.target, run.seed, run.profile, run.started, run.server) == (
        written["target"], written["seed"], written["profile"], written["started"],
        written["describe"]["server"])
    p07 = run.by_key("properties")["P07"]
    assert (p07.result, p07.message, p07.replay) == ("fail", "a foreign cursor was accepted",
                                                     written["properties"][6]["replay"])
    assert run.by_key("properties")["FUZZ"].result == "fail"
    assert [finding.replay for finding in run.findings] == [
        f["replay"] for f in written["fuzz"]["findings"]]
    assert len(run.requirements) == len(written["requirements"])


Content = bytes | str | dict[str, Any]  # a dict: a made-up report with these members changed


def compare_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Content,
                  name: str = "report.json") -> str:
    """``compare`` of a file holding ``content``: exit status 2 and one line on stderr (and
    nothing on stdout), which is returned."""
    path = tmp_path / name
    if isinstance(content, dict):
        content = json.dumps({**made_report(), **content})
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    status = main(["conformance", "compare", str(path)])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_compare_refuses_an_unknown_report_version(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    err = compare_fails(tmp_path, capsys, {"report_version": REPORT_VERSION + 1})
    assert str(tmp_path / "report.json") in err
    assert f"report_version {REPORT_VERSION + 1} is unknown" in err
    assert f"reads report_version {REPORT_VERSION}" in err


@pytest.mark.parametrize(("content", "said"), [
    (json.dumps({"target": "sqlite"}), "no report_version"),
    (b"\xff\xfe not UTF-8", "not a JSON report"),
    ("{\"report_version\": 1,", "not a JSON report"),
    ("[1, 2]", "not a JSON object"),
    ("[" * 100_000 + "]" * 100_000, "not a JSON report"),
    ('{"report_version": 1, "seconds": NaN}', "not a JSON report"),
    ({"report_version": True}, "report_version true is unknown"),
    ({"properties": "P01"}, "properties: expected a list"),
    ({"target": {"url": "x"}}, "target: expected a string"),
    ({"seed": -1}, "seed: expected a non-negative integer"),
    ({"describe": None}, "describe: expected an object"),
    ({"properties": [{"id": "P01"}]}, "properties[0]: no member 'name'"),
    ({"properties": [{"id": "P01", "name": "x", "result": "green"}]},
     "properties[0].result: \"green\" is not a result"),
    ({"fuzz": {"result": "pass", "requests": 1, "checks": {}, "findings": [7]}},
     "fuzz.findings[0]: expected an object"),
    ({"requirements": [{}] * (report_file.MAX_ITEMS + 1)},
     f"more than {report_file.MAX_ITEMS} entries"),
])
def test_compare_refuses_what_is_not_a_report_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Content, said: str) -> None:
    assert said in compare_fails(tmp_path, capsys, content)


@pytest.mark.parametrize("member", ["properties", "requirements", "limits", "hostile"])
def test_compare_refuses_a_second_row_for_one_id(tmp_path: Path, member: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A second row would hide the first from the matrix and the baseline diff (a failing
    P07 behind a passing one), so a report with two is refused."""
    report = made_report(failing={"P07": "a foreign cursor was accepted"})
    rows = report[member]
    assert rows, member
    rows.append({**rows[0], "result": "pass"})
    assert "a second row for" in compare_fails(tmp_path, capsys, report)


def test_compare_refuses_a_number_too_large_to_be_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written = json.dumps(made_report())
    assert '"seconds": 12.5' in written
    err = compare_fails(tmp_path, capsys, written.replace('"seconds": 12.5', '"seconds": 1e400'))
    assert "seconds: expected a non-negative number" in err


def test_compare_refuses_a_file_past_its_bound_without_reading_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report_file, "MAX_BYTES", 1024)
    assert "larger than" in compare_fails(tmp_path, capsys, {"rules": ["x" * 2000]})


def test_compare_refuses_a_missing_file_in_one_line(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["conformance", "compare", str(tmp_path / "nowhere.json")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1
    assert "nowhere.json: cannot read it" in err


def test_a_refusal_shows_no_control_character_of_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = compare_fails(tmp_path, capsys, {"report_version": "\x1b[2J\u202e"},
                        name="evil\x1b]0;title\x07.json")
    assert "evil\\x1b]0;title\\x07.json" in err
    assert "\x1b" not in err
    assert "\u202e" not in err


@pytest.mark.parametrize(("kind", "results"), [
    ("property", report_file.PROPERTY_RESULTS), ("requirement", report_file.REQUIREMENT_RESULTS),
    ("limit", report_file.LIMIT_RESULTS), ("hostile", report_file.HOSTILE_RESULTS),
    ("fuzz", report_file.FUZZ_RESULTS)])
def test_the_results_compare_reads_are_those_the_schema_publishes(kind: str,
                                                                  results: frozenset[str]) -> None:
    """One list of results per kind, said twice (the reader, the published schema) and kept
    equal here, so that neither refuses what the other allows."""
    assert set(SCHEMA["$defs"][kind]["properties"]["result"]["enum"]) == results


def test_every_result_a_run_writes_is_one_compare_reads() -> None:
    """The kit's own table marks (conformance/report.py) name every property result a run
    writes: each is one ``compare`` reads back. Format 1 also defines ``not covered``, which no
    run writes any more (every property has checks): compare still reads it."""
    assert set(MARKS) == report_file.PROPERTY_RESULTS - {"not covered"}
