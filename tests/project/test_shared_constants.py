"""One source for the constants the halves share: ``commands/contract.json`` (installed as
``waypost/contract.json``). It agrees with the docs (protocol.md §7 and §14, docs/consumer.md),
and the reference, its consumer and the kit each load it and agree with it; the kit's crash
matrix takes the target's fault points, the sweeper's included."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.threaded_server import serving_app
from waypost.conformance import consumer_matrix, crash_matrix
from waypost.properties.hostile import probes as hostile
from waypost.properties.protocol import constants as kit
from waypost.properties.protocol import grammar
from waypost.reference.consumer import faults as consumer_faults
from waypost.reference.domain import errors as server_errors
from waypost.reference.domain import faults as server_faults
from waypost.reference.server import Settings, build_app

ROOT = Path(__file__).resolve().parents[2]
DATA: dict[str, Any] = json.loads((ROOT / "commands" / "contract.json").read_text())
ADMIN = "shared-constants-admin"


def _section(path: str, start: str, end: str) -> str:
    text = (ROOT / path).read_text()
    return text[text.index(start):text.index(end, text.index(start))]


def _rows(section: str) -> list[list[str]]:
    """The body rows of the Markdown tables in ``section``, cell by cell."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| ")]
    return [row for row in rows if not set(row[0]) <= {"-"}][1:]


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_data_file_is_protocol_md_section_14() -> None:
    table = [(_names(point)[0], where) for point, where in _rows(_section(
        "docs/protocol.md", "## 14. Test hooks", "## 15."))]
    required = [(p["point"], p["where"]) for p in DATA["server_faults"]["points"] if p["required"]]
    assert required == table
    assert [p["point"] for p in DATA["server_faults"]["points"] if not p["required"]] == [
        "commit.durable"]  # a point the reference offers beyond §14 (docs/porting.md)
    actions = _section("docs/protocol.md", "**WP-HOOK-6**", "**WP-HOOK-7**")
    assert _names(actions)[:3] == DATA["server_faults"]["actions"]


def test_the_data_file_is_protocol_md_section_7() -> None:
    rows = _rows(_section("docs/protocol.md", "## 7. Errors", "## 8."))
    errors = {e["code"]: e for e in DATA["errors"]}
    assert [_names(row[0])[0] for row in rows] == [c for c in errors if c != "INTERNAL"]
    for code, status, _meaning, details in ((_names(r[0])[0], *r[1:]) for r in rows):
        entry = errors[code]
        assert entry["status"] == int(status), code
        paired = "(for a published limit)" in details
        assert entry["required_details"] == ([] if paired else _names(details)), code
        assert entry.get("paired_details", []) == (_names(details) if paired else []), code
    assert errors["INTERNAL"] == {"code": "INTERNAL", "status": 500, "required_details": []}
    assert "`500` with code `INTERNAL`" in _section("docs/protocol.md", "**WP-ERR-6**", "**WP-ERR-7**")


def test_the_data_file_is_docs_consumer_md() -> None:
    section = _section("docs/consumer.md", "## Fault points", "## What the kit checks")
    assert [name for row in _rows(section) for name in _names(row[0])] == [
        p["point"] for p in DATA["consumer_faults"]["points"]]
    assert f"`{DATA['consumer_faults']['environment']}=point" in section
    assert f"exit status {DATA['crash_exit']}" in section


def test_the_reference_agrees_with_the_data_file() -> None:
    points = tuple(p["point"] for p in DATA["server_faults"]["points"])
    assert points == server_faults.POINTS
    assert tuple(DATA["server_faults"]["actions"]) == server_faults.ACTIONS
    assert DATA["crash_exit"] == server_faults.CRASH_EXIT
    statuses = {cls.code: cls.status for cls in (server_errors.WaypostError,
                                                 *server_errors.ERROR_CLASSES)}
    assert statuses == {e["code"]: e["status"] for e in DATA["errors"]}
    # Every point is a place in the server: passed exactly where the code says so.
    sources = [p for folder in ("reference", "adapters") for p in (ROOT / folder).rglob("*.py")
               if not {"consumer", "agent_mcp"} & set(p.parts)]
    hit = {m for p in sources for m in re.findall(r"\bhit\(\"([a-z_.]+)\"\)", p.read_text())}
    assert hit == set(points)


def test_the_reference_consumer_agrees_with_the_data_file() -> None:
    points = tuple(p["point"] for p in DATA["consumer_faults"]["points"])
    assert points == consumer_faults.POINTS
    assert DATA["consumer_faults"]["environment"] == consumer_faults.ENVIRONMENT
    assert DATA["crash_exit"] == consumer_faults.CRASH_EXIT
    # Every point is a place in the consumer (``hit(f"{point}.after_submit")`` names two).
    sources = [p for folder in ("consumer", "agent_mcp")
               for p in (ROOT / "reference" / folder).rglob("*.py")]
    places = [re.compile(re.sub(r"\\\{[a-z_]+\\\}", "[a-z_]+", re.escape(m)))
              for p in sources for m in re.findall(r"\bhit\(f?\"([^\"]+)\"\)", p.read_text())]
    assert places
    assert [p for p in points if not any(place.fullmatch(p) for place in places)] == []
    assert [place.pattern for place in places if not any(place.fullmatch(p) for p in points)] == []


def test_the_kit_agrees_with_the_data_file() -> None:
    assert tuple(p["point"] for p in DATA["server_faults"]["points"]) == kit.FAULT_POINTS
    assert tuple(DATA["server_faults"]["actions"]) == kit.FAULT_ACTIONS
    assert {e["code"]: e["status"] for e in DATA["errors"]} == kit.STATUS
    assert grammar.STATUS is kit.STATUS
    assert grammar.REQUIRED_DETAILS is kit.REQUIRED_DETAILS
    assert crash_matrix.POINTS == kit.FAULT_POINTS
    assert consumer_matrix.POINTS == kit.CONSUMER_POINTS == consumer_faults.POINTS
    assert consumer_matrix.CRASH_EXIT == kit.CRASH_EXIT == DATA["crash_exit"]


def test_the_data_file_ships_in_the_wheel() -> None:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"]["waypost"] == "commands"
    assert "contract.json" in setuptools["package-data"]["waypost"]


def _response(status: int, body: Any) -> httpx.Response:
    return httpx.Response(status, json=body, request=httpx.Request("POST", "http://kit/x"))


@pytest.mark.parametrize(("status", "body", "problem"), [
    (404, {"error": {"code": "NOT_FOUND", "message": "x"}}, "error.details"),
    (400, {"error": {"code": "NOT_FOUND", "message": "x", "details": {}}}, "status 400"),
    (400, {"error": {"code": "INVALID_REQUEST", "message": "x", "details": {}}}, "details.field"),
    (413, {"error": {"code": "RESOURCE_LIMIT", "message": "x", "details": {"limit": "x"}}},
     "only some"),
    (400, {"error": {"code": "NO_SUCH_CODE", "message": "x", "details": {}}}, "unknown"),
    (400, {"error": {"code": "INVALID_REQUEST", "message": "x", "details": {"field": "a"}},
           "extra": 1}, "not {"),
])
def test_the_kit_has_one_envelope_validator(status: int, body: Any, problem: str) -> None:
    """The hostile checks refuse exactly what ``grammar.envelope_problems`` refuses."""
    problems = grammar.envelope_problems(status, body)
    assert any(problem in p for p in problems), problems
    with pytest.raises(hostile.Finding, match=re.escape(problem)):
        hostile.envelope(_response(status, body), "probe")


def test_the_hostile_checks_accept_a_good_envelope_and_refuse_a_server_error() -> None:
    good = {"error": {"code": "RESOURCE_LIMIT", "message": "x",
                      "details": {"field": "subject", "limit": "subject_bytes", "max": 256}}}
    assert hostile.envelope(_response(413, good), "probe") == good["error"]
    internal = {"error": {"code": "INTERNAL", "message": "internal error", "details": {}}}
    assert grammar.envelope_problems(500, internal) == []
    with pytest.raises(hostile.Finding, match="WP-ERR-5"):
        hostile.envelope(_response(500, internal), "probe")


@pytest.mark.parametrize("body", [
    None, [], {"points": "commit.after"}, {"points": []}, {"points": ["commit.after", 3]},
    {"points": ["Commit.After"]}, {"points": ["commit"]}, {"points": ["a." + "b" * 40]},
    {"points": ["commit.after", "commit.after"]}, {"points": [f"p.x{n}" for n in range(65)]},
])
def test_a_listing_of_fault_points_is_read_as_hostile_input(body: Any) -> None:
    with pytest.raises(ValueError, match="GET /_test/faults"):
        kit.listed_fault_points(body)


@pytest.mark.slow
def test_the_crash_matrix_takes_the_points_the_target_lists(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns are the target's points (``cleanup.after_claim`` among them), then any point
    §14 requires that the target leaves out: a failed ``missing`` cell (WP-HOOK-7)."""
    app = build_app(Settings(tmp_path / "data", ADMIN, test_hooks=True, sweep_seconds=0))
    with serving_app(app) as url:
        with crash_matrix.reference(url, ADMIN) as ref:
            assert crash_matrix.target_points(ref) == list(kit.FAULT_POINTS)
            assert "cleanup.after_claim" in crash_matrix.target_points(ref)
        offered = [p for p in server_faults.POINTS if p != "ack.after_commit"] + ["extra.point"]
        monkeypatch.setattr(server_faults, "POINTS", tuple(offered))
        matrix = crash_matrix.crash_matrix(("message.send",), progress=False, url=url,
                                           admin_token=ADMIN)
    assert matrix.points == [*offered, "ack.after_commit"]
    assert [(c.point, c.outcome) for c in matrix.cells if not c.ok] == [
        ("ack.after_commit", "missing")]
    assert {c.point: c.outcome for c in matrix.cells}["extra.point"] == "not reached"
    assert "ack.after_commit" in matrix.table()
    assert not matrix.green


@pytest.mark.slow
def test_blob_commit_meets_the_sweeper_at_cleanup_after_claim(tmp_path: Path) -> None:
    """A server sweeping every 0.2 s: the sweeper claims the expired upload and faults there;
    the commit after it is a recorded ``410 UPLOAD_EXPIRED``. Other writes never pass it."""
    app = build_app(Settings(tmp_path / "data", ADMIN, test_hooks=True, sweep_seconds=0.2))
    with serving_app(app) as url:
        matrix = crash_matrix.crash_matrix(("message.send", "blob.commit"),
                                           points=("cleanup.after_claim",),
                                           actions=("crash", "unavailable"), progress=False,
                                           url=url, admin_token=ADMIN)
    assert [(c.action, c.operation, c.note) for c in matrix.cells if not c.ok] == []
    assert {(c.action, c.operation): c.outcome for c in matrix.cells} == {
        ("crash", "message.send"): "not reached", ("crash", "blob.commit"): "expired",
        ("unavailable", "message.send"): "not reached",
        ("unavailable", "blob.commit"): "expired"}


def test_a_sweeper_that_never_comes_leaves_the_cell_not_reached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crash_matrix, "SWEEP_WAIT", 0.5)
    app = build_app(Settings(tmp_path / "data", ADMIN, test_hooks=True, sweep_seconds=0))
    with serving_app(app) as url:
        matrix = crash_matrix.crash_matrix(("blob.commit",), points=("cleanup.after_claim",),
                                           progress=False, url=url, admin_token=ADMIN)
    (cell,) = matrix.cells
    assert (cell.outcome, cell.ok) == ("not reached", True)
    assert "no sweep" in cell.note
