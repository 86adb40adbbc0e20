"""The fuzz phase (``waypost conformance fuzz``): Schemathesis with the kit's own OpenAPI
document finds nothing on the reference, and finds a server that breaks its contract.

Schemathesis sends real HTTP requests, so every target here is a real server: ``waypost serve``
started by the command, or the reference with one defect patched in this test process and
served by uvicorn in a thread (as the crash matrix's broken servers are)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.threaded_server import serving_app
from waypost.conformance import fuzz, fuzz_command
from waypost.reference.server import Settings, build_app
from waypost.reference.service import messages
from waypost.reference.service.context import Context, Outcome

ADMIN = "fuzz-admin"


@contextmanager
def serving(data_dir: Path) -> Iterator[str]:
    """The reference (as patched by the caller) on loopback, in a thread."""
    app = build_app(Settings(data_dir, ADMIN, sweep_seconds=0))
    with serving_app(app) as url:
        yield url


def fuzz_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "waypost.cli", "conformance", "fuzz", *args],
                          capture_output=True, text=True, timeout=1200, cwd=cwd)


def counts(stdout: str) -> dict[str, int]:
    """The finding counts of the summary, by kind."""
    found = {}
    for check in fuzz.fuzz_rules.FUZZ_CHECKS:
        line = next(line for line in stdout.splitlines() if line.strip().startswith(check.finding))
        found[check.finding] = int(line.split()[-1])
    return found


@pytest.mark.slow
def test_the_reference_passes_a_dev_fuzz_run_over_http(tmp_path: Path) -> None:
    result = fuzz_cli("--target", "sqlite", "--profile", "dev", "--seed", "1",
                      "--report-json", "fuzz.json", "--junit", "fuzz.xml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(counts(result.stdout).values()) == {0}
    report = json.loads((tmp_path / "fuzz.json").read_text())
    assert report["result"] == "pass"
    assert report["findings"] == []
    assert report["requests"] >= 50, report  # every operation, several times
    assert "WP-ERR-5" in report["requirements"]
    assert 'failures="0"' in (tmp_path / "fuzz.xml").read_text()


@pytest.mark.slow
def test_the_reference_passes_a_ci_fuzz_run(tmp_path: Path) -> None:
    result = fuzz_cli("--target", "sqlite", "--profile", "ci", "--seed", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(counts(result.stdout).values()) == {0}


@pytest.mark.d1
@pytest.mark.slow
def test_the_reference_on_d1_passes_a_dev_fuzz_run(tmp_path: Path) -> None:
    result = fuzz_cli("--target", "d1", "--profile", "dev", "--seed", "3", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert set(counts(result.stdout).values()) == {0}


MESSAGE = "/v1/messages/{message_id}"


def only(path: str) -> dict[str, Any]:
    """The kit's document with one path (a run that reaches the broken route quickly)."""
    document = fuzz.contract()
    document["paths"] = {path: document["paths"][path]}
    return document


def message_read_fails(mp: pytest.MonkeyPatch) -> None:
    async def read_message(ctx: Context, principal: Any, message_id: str) -> Outcome:
        raise RuntimeError("a defect")
    mp.setattr(messages, "read_message", read_message)


def message_read_loses_a_member(mp: pytest.MonkeyPatch) -> None:
    original = messages.read_message

    async def read_message(ctx: Context, principal: Any, message_id: str) -> Outcome:
        outcome = await original(ctx, principal, message_id)
        return Outcome(outcome.status, {k: v for k, v in outcome.body.items()
                                        if k != "feed_item_id"}, outcome.replayed)
    mp.setattr(messages, "read_message", read_message)


@pytest.mark.slow
@pytest.mark.parametrize(("patch", "kind"), [
    (message_read_fails, "server error"),
    (message_read_loses_a_member, "schema violation"),
])
def test_a_broken_server_is_found_and_its_replay_still_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        patch: Callable[[pytest.MonkeyPatch], None], kind: str) -> None:
    patch(monkeypatch)
    with serving(tmp_path / "data") as url, httpx.Client(base_url=url, timeout=60) as client:
        report = fuzz.run_fuzz(url, client, ADMIN, profile="dev", seed=4,
                               replay_dir=tmp_path / "replays", document=only(MESSAGE))
        found = [f for f in report.findings if f.operation == f"GET {MESSAGE}"]
        assert kind in {f.kind for f in found}, report.as_json()
        assert report.result == "fail"
        replay = Path(next(f.replay for f in found if f.kind == kind and f.replay))
        recorded = json.loads(replay.read_text())
        assert recorded["format"] == fuzz.REPLAY_FORMAT
        assert recorded["requirements"]
        said: list[str] = []
        assert fuzz_command.replay_fuzz(replay, client, ADMIN, out=said.append) is not None
        assert said[0].startswith("still failing")
    monkeypatch.undo()  # the reference as it is: the same replay passes
    with serving(tmp_path / "fixed") as url, httpx.Client(base_url=url, timeout=60) as client:
        said = []
        assert fuzz_command.replay_fuzz(replay, client, ADMIN, out=said.append) is None, said


def test_the_kit_report_shows_the_fuzz_phase_as_its_own_row(tmp_path: Path) -> None:
    from waypost.conformance import report as reports
    from waypost.conformance.run_results import Report

    phase = fuzz.FuzzReport("sqlite", "dev", 1, "fzrun", requests=321,
                            by_check={"not_a_server_error": 300})
    phase.findings.append(fuzz.Finding(
        "not_a_server_error", "Server error", "500", "GET /v1/describe", {}, 500, "",
        replay="waypost-replays/fzrun-fuzz-1-not_a_server_error.json"))
    run = Report("sqlite", "ci", 1, "run1", fuzz=phase)
    row = next(line for line in reports.table(run).splitlines() if "FUZZ" in line)
    assert "FAIL" in row
    assert "321 requests, 1 findings" in row
    assert "fzrun-fuzz-1" in row
    assert run.failed
    assert reports.as_json(run)["fuzz"]["findings"][0]["requirements"] == [
        "WP-ERR-5", "WP-ERR-6", "WP-LOAD-5"]
    reports.write_junit(run, tmp_path / "junit.xml")
    junit = (tmp_path / "junit.xml").read_text()
    assert "FUZZ Contract fuzzing (321 requests)" in junit
    assert 'failures="1"' in junit


def test_texts_within_their_byte_limit_are_valid_whatever_their_characters(
        tmp_path: Path) -> None:
    """maxLength is a quarter of a byte limit; a longer text within the limit is valid (the
    reference accepts it), one past the limit is not."""
    from waypost.conformance.fuzz_bodies import ByteExact

    document = fuzz.contract()
    send = document["paths"]["/v1/messages"]["post"]
    exact = ByteExact(document)
    body = {"request_id": "r", "thread": {"new": True}, "kind": "info", "body": {"text": ""}}
    assert exact.body_valid(send, {**body, "subject": "x" * 256})
    assert exact.body_valid(send, {**body, "subject": "✓" * 85})  # 255 bytes
    assert not exact.body_valid(send, {**body, "subject": "✓" * 86})  # 258 bytes
    assert not exact.body_valid(send, {**body, "subject": "x" * 10, "metadata": {"n": 2**53}})
    with serving(tmp_path / "data") as url, httpx.Client(base_url=url, timeout=60) as client:
        fixtures = fuzz.provision(client, ADMIN, "bytes")
        for subject, status in (("x" * 256, 201), ("✓" * 85, 201), ("✓" * 86, 413)):
            answer = client.post("/v1/messages", json={
                **body, "request_id": f"r{len(subject)}{status}", "subject": subject},
                headers={"Authorization": f"Bearer {fixtures.data_token}"})
            assert answer.status_code == status, answer.text


def test_porting_md_lists_every_declared_rule() -> None:
    """The business rules the fuzz phase declares are documented, one row each."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "porting.md").read_text()
    for rule in fuzz.fuzz_rules.ALLOWANCES:
        assert f"| `{rule.check}` | {', '.join(map(str, rule.statuses))} |" in text
        assert rule.reason in text
    for reason in [*fuzz.fuzz_rules.BODY_RULES.values(), *fuzz.fuzz_rules.NOT_RUN.values()]:
        assert reason in text


def test_an_expected_failure_entry_for_fuzz_marks_findings_as_expected(tmp_path: Path) -> None:
    from waypost.conformance.fuzz_command import expected_reason

    path = tmp_path / "expected.json"
    path.write_text(json.dumps([{"property": "P07", "reason": "other"},
                                {"property": "FUZZ", "reason": "known 500 on reads"}]))
    phase = fuzz.FuzzReport("url", "dev", 1, "fzrun")
    phase.expected_reason = expected_reason(path, "http://port.test")
    phase.findings.append(fuzz.Finding("not_a_server_error", "Server error", "", "GET /x", {},
                                       500, ""))
    assert phase.result == "xfail"
    assert not phase.failed
    assert expected_reason(None, "http://port.test") == ""
