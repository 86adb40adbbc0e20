"""The fuzz phase's own setup (``fuzz.provision``) as a fair judge: a content PUT answered with
any 2xx, a body or none, lets it go on (WP-UPL-3); a server that breaks the contract during it
gets a failed check naming the requirement (the phase fails, exit status 1, a replay file with
the setup's exchanges), never an exception that ends the run with exit status 2 or an ERROR row.

The servers are the reference behind front ends of this module. A setup that fails sends no
generated request, so those runs go in process; the ones that go on to Schemathesis, which
sends real HTTP, are served by uvicorn in a thread."""

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
from starlette.testclient import TestClient

from tests.support.front_ends import Answer, App, Message, Receive, Scope, Send, wrapping
from tests.support.inprocess import kit_client
from tests.support.kit_reports import validate
from tests.support.threaded_server import serving_app
from waypost.conformance import fuzz, runner
from waypost.conformance import report as reports
from waypost.properties.coverage.catalogue import select
from waypost.properties.coverage.registered import CHECKS
from waypost.reference.server import Settings, build_app

Front = Callable[[App], App]
#: The bytes the setup uploads (``fuzz.provision``): a front end breaks only that PUT.
SETUP_BYTES = b"fuzz"


def _app(data_dir: Path, admin: str, front: Front) -> App:
    return front(build_app(Settings(data_dir, admin, synchronous="NORMAL", sweep_seconds=0)))


@contextmanager
def in_process(data_dir: Path, admin: str, front: Front) -> Iterator[httpx.Client]:
    with TestClient(_app(data_dir, admin, front)) as server, kit_client(server) as client:
        yield client


def _is_setup_put(scope: Scope, body: bytes) -> bool:
    return scope["method"] == "PUT" and scope["path"].endswith("/content") \
        and body == SETUP_BYTES


def _envelope(status: int, code: str) -> Answer:
    body = {"error": {"code": code, "message": "from the front", "details": {}}}
    return status, [(b"content-type", b"application/json")], json.dumps(body).encode()


def _json(status: int, data: Any) -> Answer:
    return status, [(b"content-type", b"application/json")], json.dumps(data).encode()


# ----- a freedom: 204 with no body to the content PUT (WP-UPL-3: any 2xx) -----------------------


#: The statuses :func:`no_content` gave the content PUTs it passed, in order.
ANSWERED: list[int] = []


def no_content(app: App) -> App:
    """A content PUT that succeeds answers ``204`` with no body and no content type."""
    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "PUT":
            await app(scope, receive, send)
            return
        passed = False

        async def quiet(message: Message) -> None:
            nonlocal passed
            if message["type"] == "http.response.start":
                passed = 200 <= message["status"] < 300
                ANSWERED.append(204 if passed else message["status"])
                if passed:
                    message = {"type": "http.response.start", "status": 204, "headers": []}
            elif passed:  # the body of the answer: none
                if message.get("more_body"):
                    return
                message = {"type": "http.response.body", "body": b""}
            await send(message)
        await app(scope, receive, quiet)
    return front


def test_a_content_put_answered_204_without_a_body_lets_the_setup_go_on(
        tmp_path: Path, kit_admin: str) -> None:
    document = fuzz.contract()
    document["paths"] = {"/v1/describe": document["paths"]["/v1/describe"]}
    app = _app(tmp_path / "data", kit_admin, no_content)
    ANSWERED.clear()
    with serving_app(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        report = fuzz.run_fuzz(url, client, kit_admin, profile="dev", seed=5,
                               replay_dir=tmp_path / "replays", document=document,
                               max_examples=1)
    assert ANSWERED == [204]  # the setup's PUT, answered without a body
    assert (report.result, report.findings, report.errors) == ("pass", [], [])
    assert report.by_check["setup_upload"] == 3  # prepare, the 204 PUT, commit
    assert {"setup_control", "setup_send", "setup_publish"} <= set(report.by_check)
    assert report.requests > 0  # the generated requests went out
    assert not (tmp_path / "replays").exists()


# ----- servers that break the contract during the setup ------------------------------------------


def put_fails(app: App) -> App:
    return wrapping(app, before=lambda scope, body: _envelope(500, "INTERNAL")
                    if _is_setup_put(scope, body) else None)


def prepare_garbled(app: App) -> App:
    """``blob.prepare`` answers 200 with an object of none of its members."""
    def before(scope: Scope, body: bytes) -> Answer | None:
        if (scope["method"], scope["path"]) == ("POST", "/v1/blobs"):
            return _json(200, {"ok": True})
        return None
    return wrapping(app, before=before)


def send_not_json(app: App) -> App:
    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if (scope["method"], scope["path"]) == ("POST", "/v1/messages"):
            return 201, [(b"content-type", b"text/plain")], b"sent \x1b[2J"
        return answer
    return wrapping(app, after=after)


def consumers_refused(app: App) -> App:
    return wrapping(app, before=lambda scope, body: _envelope(503, "UNAVAILABLE")
                    if scope["path"].endswith("/consumers") else None)


def fingerprint_of_another_grant(app: App) -> App:
    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        status, _, content = answer
        if scope["path"].endswith("/tokens") and status == 201:
            return _json(201, {**json.loads(content), "grant_fingerprint": "0" * 64})
        return answer
    return wrapping(app, after=after)


def publish_unchanged(app: App) -> App:
    """The first publish of a collection answered as if it changed nothing."""
    def after(scope: Scope, body: bytes, answer: Answer) -> Answer:
        if scope["path"].endswith("/revisions") and answer[0] == 201:
            return _json(200, {"revision": 0, "changed": False})
        return answer
    return wrapping(app, after=after)


def commit_drops(app: App) -> App:
    """The connection of ``blob.commit`` closes without an answer."""
    async def front(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/commit"):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            return
        await app(scope, receive, send)
    return front


BROKEN: dict[str, tuple[Front, str, tuple[str, ...], str]] = {
    "the content PUT answers 500": (put_fails, "setup_upload", ("WP-UPL-3",),
                                    "expected 2xx, got 500"),
    "blob.prepare answers 200 with garbage": (
        prepare_garbled, "setup_upload", ("WP-UPL-2", "WP-HTTP-15"),
        "expected 201 with upload_id, blob_id, upload_url, got 200"),
    "the send answers text": (send_not_json, "setup_send", ("WP-MSG-9", "WP-HTTP-10"),
                              "expected 201 with message_id, thread_id, feed_item_id, got 201"),
    "a consumer is refused": (consumers_refused, "setup_control", ("WP-CTRL-3",),
                              "expected 200 or 201"),
    "a token carries another grant's fingerprint": (
        fingerprint_of_another_grant, "setup_control", ("WP-AUTH-8", "WP-AUTH-9"),
        "grant fingerprint differs"),
    "the first publish changes nothing": (publish_unchanged, "setup_publish",
                                          ("WP-MEM-17", "WP-HTTP-16"), "expected 201, got 200"),
    "the commit's connection drops": (commit_drops, "setup_upload", ("WP-UPL-2", "WP-HTTP-15"),
                                      "RemoteProtocolError"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_setup_step_against_the_contract_is_a_failed_check_naming_it(
        tmp_path: Path, kit_admin: str, name: str) -> None:
    front, check, rids, said = BROKEN[name]
    with in_process(tmp_path / "data", kit_admin, front) as client:
        report = fuzz.run_fuzz("url", client, kit_admin, profile="dev", seed=6,
                               replay_dir=tmp_path / "replays")
    assert (report.result, report.failed, report.errors) == ("fail", True, [])
    [finding] = report.findings
    assert (finding.check, finding.requirements) == (check, rids)
    assert said in finding.message, finding.message
    assert finding.message.startswith("fuzz setup: ")
    assert "\x1b" not in finding.message + finding.answer  # shown escaped
    assert report.as_json()["findings"][0]["requirements"] == list(rids)
    assert set(rids) <= set(CHECKS[f"fuzz {check}"].requirements)  # the requirement table's
    recorded = json.loads(Path(str(finding.replay)).read_text())
    assert (recorded["check"], recorded["requirements"]) == (check, list(rids))
    assert recorded["exchanges"]  # the setup's, up to the step that failed
    assert kit_admin not in json.dumps(recorded)


def test_the_kit_runs_fuzz_phase_is_a_failed_row_not_an_error(tmp_path: Path,
                                                              kit_admin: str) -> None:
    """A kit run (one property, and the fuzz phase as the CLI adds it): the setup's broken PUT
    fails the FUZZ row and WP-UPL-3 in the requirement table; the run ends with its report."""
    with in_process(tmp_path / "data", kit_admin, put_fails) as client:
        run = runner.run("url", client, kit_admin, profile="quick", seed=7,
                         selected=select("P01"), replay_dir=tmp_path / "replays",
                         shrink_seconds=0, fuzz=lambda: fuzz.run_fuzz(
                             "url", client, kit_admin, profile="dev",
                             replay_dir=tmp_path / "replays"))
    assert run.failed
    assert "ERROR" not in {outcome.prop.pid for outcome in run.outcomes}
    assert next(o.result for o in run.outcomes if o.prop.pid == "P01") == "pass"
    row = next(line for line in reports.table(run).splitlines() if "FUZZ" in line)
    assert "FAIL" in row
    assert "expected 2xx (WP-UPL-3)" in row
    upl3 = next(r for r in run.requirements if r.requirement.rid == "WP-UPL-3")
    assert upl3.result == "fail"
    validate(json.loads(json.dumps(reports.as_json(run), default=str)))


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "waypost.cli", "conformance", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_the_fuzz_command_exits_1_with_the_requirement_and_its_replay_reruns_it(
        tmp_path: Path, kit_admin: str) -> None:
    app = _app(tmp_path / "data", kit_admin, put_fails)
    with serving_app(app) as url:
        done = _cli("fuzz", "--target", url, f"--admin-token={kit_admin}", "--profile", "dev",
                    "--report-json", "fuzz.json", "--junit", "fuzz.xml", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        report = json.loads((tmp_path / "fuzz.json").read_text())
        replay = report["findings"][0]["replay"]
        again = _cli("replay", replay, "--target", url, f"--admin-token={kit_admin}",
                     cwd=tmp_path)
    assert "setup: upload refused, expected 2xx (WP-UPL-3)" in done.stdout
    assert "expected 2xx, got 500" in done.stdout
    assert "fuzz: FAIL" in done.stdout
    assert "fuzz setup" not in done.stderr  # no error line: a finding of the report
    assert (report["result"], report["findings"][0]["requirements"]) == ("fail", ["WP-UPL-3"])
    assert 'failures="1"' in (tmp_path / "fuzz.xml").read_text()
    assert again.returncode == 1, again.stdout + again.stderr
    assert again.stdout.startswith("still failing: setup: upload refused"), again.stdout


def test_a_setup_finding_passes_its_replay_on_the_reference(tmp_path: Path,
                                                            kit_admin: str) -> None:
    from waypost.conformance.fuzz_command import replay_fuzz

    with in_process(tmp_path / "broken", kit_admin, put_fails) as client:
        report = fuzz.run_fuzz("url", client, kit_admin, replay_dir=tmp_path / "replays")
    said: list[str] = []
    with in_process(tmp_path / "fixed", kit_admin, lambda app: app) as client:
        assert replay_fuzz(Path(str(report.findings[0].replay)), client, kit_admin,
                           out=said.append) is None
    assert said[0].startswith("passes now: the fuzz phase's setup"), said

