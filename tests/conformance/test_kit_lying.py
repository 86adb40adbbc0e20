"""The kit against deployments that lie (``tests/support/lying_server.py``), run as a user runs it:
``waypost conformance --target URL`` in a process of its own. Whatever the lie, the run must
end within a bound with a verdict naming the property the lie breaks (the honest control run
passes), print no raw control character, request nothing outside the API and the control plane,
stay under 512 MB and write bounded replay files (docs/spec.md, "The kit's own limits").

The runs select the properties each lie is about (``--only``): a whole quick run takes about
two minutes. With P17, the consumers the kit starts meet the lie too: they end with their own
verdict (tests/reference/consumer/test_consumer_lying.py) and the kit's matrix reads of the server
end too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.lying_server import CONTROLS, lying_server, outside_the_api
from waypost.properties.wire.bounds import Bounds, OutOfBounds, bounded_client
from waypost.properties.wire.untrusted import bad_segment, path_id, visible

ADMIN = "lying-admin-token-0123456789"
#: Seconds a run may take, from start to verdict (an idle machine needs about 40).
BOUND = 180.0
TIMEOUT = "10"  # the kit's --timeout: the deadline of each call
SEED = "20261130"
#: No shrinking: the verdict, not the shortest replay, is under test here (and 0 is the same on
#: any machine).
SHRINK = "0"
MEMORY_MB = 512
REPLAY_BYTES = 5 << 20
#: What must never reach a terminal: C0 but LF, DEL, C1, the bidi and line-breaking formats.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class Case:
    """A lie, the properties the run selects, and the one it must fail (None: it passes)."""

    mode: str
    only: str
    broken: str | None


CASES = [
    Case("honest", "P06,P13,P15", None),
    Case("stuck_cursor", "P06", "P06"),
    Case("stuck_cursor", "P17", "P17"),  # the consumer matrix's own reads of the feed end
    Case("new_cursors", "P06", "P06"),
    Case("huge_page", "P06", "P06"),
    Case("huge_blob", "P15", "P15"),
    Case("looping_entries", "P13", "P13"),
    Case("control_text", "P05", "P05"),
    Case("dotdot_id", "P06", "P06"),
    Case("dotdot_id", "P17", "P17"),  # the consumers it starts never leave the API either
]


@dataclass
class Run:
    """What one kit process did."""

    code: int
    out: str
    err: str
    seconds: float
    paths: list[str]
    replay_bytes: int
    reports: list[str]  # the Markdown and JUnit reports, as written
    peak_kib: int = 0  # the kit process's own peak resident memory


def _run_measured(command: list[str], cwd: Path) -> tuple[int, bytes, bytes, int]:
    """Run ``command`` to its end (killed past :data:`BOUND`): its status, output, error output
    and its own peak resident memory in KiB (``wait4``: this process's, not an earlier one's)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err)
        watchdog = threading.Timer(BOUND, process.kill)
        watchdog.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            watchdog.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read(), err.read(), usage.ru_maxrss


def run_kit(mode: str, only: str, work: Path) -> Run:
    """``waypost conformance`` against the ``mode`` lie, in a process of its own."""
    with lying_server(mode, work / "data", ADMIN) as (url, front):
        started = time.monotonic()
        code, out, err, peak = _run_measured(
            [sys.executable, "-m", "waypost.cli", "conformance", "--target", url,
             "--admin-token", ADMIN, "--profile", "quick", "--only", only, "--seed", SEED,
             "--timeout", TIMEOUT, "--shrink-seconds", SHRINK, "--replay-dir", str(work / "replays"),
             "--report-md", str(work / "report.md"), "--junit", str(work / "report.xml")],
            work)
        seconds = time.monotonic() - started
        paths = list(front.paths)
    replays = sum(f.stat().st_size for f in (work / "replays").glob("*"))
    reports = [f.read_text(encoding="utf-8") for f in (work / "report.md", work / "report.xml")
               if f.exists()]
    return Run(code, out.decode(), err.decode(), seconds, paths, replays, reports, peak)


def row(out: str, pid: str) -> str:
    """The P-table's row of ``pid``."""
    found = re.search(rf"^ +{pid} .*$", out, re.MULTILINE)
    assert found, out
    return found.group(0)


def not_the_api(paths: list[str]) -> list[str]:
    """Requested paths outside the data plane, the test hooks and the control plane (§13,
    which provisions the kit's spaces), or holding a dot segment."""
    return [p for p in outside_the_api(paths) if not p.startswith("/admin/v1/")] + [
        p for p in paths if ".." in p.split("?", 1)[0].split("/")]


def assert_sound(run: Run) -> None:
    """What every run must be, whatever the server did."""
    assert run.seconds < BOUND
    assert not RAW.search(run.out), RAW.findall(run.out)
    assert not RAW.search(run.err), RAW.findall(run.err)
    assert not any(RAW.search(report) for report in run.reports)
    assert not_the_api(run.paths) == []
    assert 0 < run.peak_kib < MEMORY_MB * 1024
    assert run.replay_bytes < REPLAY_BYTES


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"{c.mode}-{c.only}" for c in CASES])
def test_the_kit_ends_with_a_verdict(case: Case, tmp_path: Path) -> None:
    run = run_kit(case.mode, case.only, tmp_path)
    assert_sound(run)
    assert len(run.reports) == 2
    if case.broken is None:
        assert run.code == 0, run.out + run.err
        # a short run: each passes on what ran, or says which of its ids did not (incomplete)
        assert all(" pass " in row(run.out, pid) or " incomplete " in row(run.out, pid)
                   for pid in case.only.split(",")), run.out
    else:
        assert run.code == 1, run.out + run.err
        assert " FAIL " in row(run.out, case.broken), run.out
        assert "ERROR" not in run.out, run.out


@pytest.mark.slow
def test_a_trickling_target_gets_a_verdict_at_once(tmp_path: Path) -> None:
    """Every answer one byte every 2 s: the first call misses its deadline, and the run ends
    there with a verdict instead of starting a run that could take hours."""
    run = run_kit("trickle", "P06", tmp_path)
    assert_sound(run)
    assert run.code == 1
    assert "WP-HTTP-9" in run.out, run.out
    verdict = run.out.rstrip().splitlines()[-1]  # the last line: a failing verdict, a rerun
    assert verdict.startswith("FAIL: no property could be checked, the target is out of the "
                              "kit's bounds (seed " + SEED), run.out
    assert verdict.endswith(f"--profile quick --seed {SEED} --only P06 --shrink-seconds 0 "
                            f"--timeout {TIMEOUT}"), run.out
    assert run.seconds < 3 * float(TIMEOUT) + 30  # the start of a process, one deadline


def test_visible_shows_every_control_character() -> None:
    shown = visible(f"BAD{CONTROLS}\ud800")
    assert not RAW.search(shown)
    for escape in ("\\x1b[2J", "\\u202e", "\\x00", "\\x85", "\\ud800"):
        assert escape in shown
    assert visible("plain text, é") == "plain text, é"


@pytest.mark.parametrize("hostile", ["../../../etc/passwd", "a/b?x=1#y", "msg_a\x00b", "",
                                     "x" * 97, "é", 7, None])
def test_an_id_that_is_no_id_never_enters_a_path(hostile: object) -> None:
    with pytest.raises(ValueError, match="WP-VAL-4"):
        path_id(hostile)


@pytest.mark.parametrize("hostile", ["../../../etc/passwd", "a/b?x=1#y", "msg_a\x00b", "",
                                     ".", "a%2F..", "\u202e"])
def test_the_session_sends_no_path_with_a_bad_segment(hostile: str) -> None:
    assert bad_segment(f"/v1/messages/{hostile}") is not None


def test_the_kits_own_paths_are_sound() -> None:
    for path in ("/v1/submissions/message.send/run1a-0-A.3:x", "/v1/collections/notes/"
                 "revisions/12/items", "/admin/v1/tokens/tok_ab-c/revoke"):
        assert bad_segment(path) is None
    assert path_id("msg_Ab-9_z") == "msg_Ab-9_z"


@pytest.mark.parametrize(("mode", "path", "bound"), [("huge_page", "/v1/feed", "answer_bytes"),
                                                     ("huge_blob", "/v1/blobs/b/content",
                                                      "answer_bytes")])
def test_the_transport_stops_reading_at_the_cap(mode: str, path: str, bound: str,
                                                tmp_path: Path) -> None:
    """150 MB and 400 MB answers: the kit reads a few MiB, quickly, and says which bound."""
    with lying_server(mode, tmp_path / "data", ADMIN) as (url, _), \
            bounded_client(url, Bounds(seconds=20)) as client:
        started = time.monotonic()
        with pytest.raises(OutOfBounds) as caught:
            client.get(path, headers={"Authorization": "Bearer x"})
        assert caught.value.bound == bound
        assert time.monotonic() - started < 10
        assert client.get("/v1/describe").status_code == 200  # the client still works


def test_the_transport_ends_a_walk_that_does_not_move_on(tmp_path: Path) -> None:
    """A feed whose cursor never advances: the page after the first is refused as a loop."""
    with lying_server("stuck_cursor", tmp_path / "data", ADMIN) as (url, _), \
            bounded_client(url) as client:
        token = _reader(client)
        first = client.get("/v1/feed", params={"limit": 1}, headers=token).json()
        assert first["items"]
        assert first["has_more"]
        following = {"limit": 1, "cursor": first["next_cursor"]}
        with pytest.raises(OutOfBounds) as caught:
            client.get("/v1/feed", params=following, headers=token)
        assert caught.value.bound == "walk"


@pytest.mark.slow
def test_a_long_poll_may_take_its_wait_past_the_deadline(tmp_path: Path) -> None:
    """The deadline of a call is ``--timeout`` plus the wait the kit asked the server for."""
    with lying_server("honest", tmp_path / "data", ADMIN) as (url, _), \
            bounded_client(url, Bounds(seconds=1)) as client:
        token = _reader(client)
        end = client.get("/v1/feed", params={"limit": 100}, headers=token).json()["next_cursor"]
        started = time.monotonic()
        page = client.get("/v1/feed", params={"limit": 100, "cursor": end, "wait": 2},
                          headers=token)
        assert page.status_code == 200
        assert page.json()["items"] == []
        assert time.monotonic() - started >= 2


def _reader(client: httpx.Client) -> dict[str, str]:
    """A space with one message to its default actor; that actor's authorization header."""
    admin = {"Authorization": f"Bearer {ADMIN}"}

    def ok(path: str, body: dict[str, object]) -> dict[str, object]:
        answer = client.post(path, json={"request_id": f"r{len(path)}-{len(body)}", **body},
                             headers=admin)
        assert answer.status_code in (200, 201), answer.text
        data: dict[str, object] = answer.json()
        return data

    ok("/admin/v1/spaces", {"space_id": "s", "display_name": "s", "source_uri": "waypost://s",
                            "default_actor": {"actor_id": "a", "kind": "agent",
                                              "display_name": "a"}})
    ok("/admin/v1/spaces/s/consumers", {"consumer_id": "a-c", "actor_id": "a", "view": "inbox"})
    token = ok("/admin/v1/spaces/s/tokens", {
        "actor_id": "a", "consumer_id": "a-c",
        "scopes": ["message.send", "message.read", "event.subscribe"],
        "recipients": {"mode": "any"}, "collections": [], "blob_references": []})["token"]
    header = {"Authorization": f"Bearer {token}"}
    for n in range(2):
        sent = client.post("/v1/messages", headers=header, json={
            "request_id": f"m{n}", "thread": {"new": True}, "kind": "info",
            "subject": f"s{n}", "body": {"text": "t"}})
        assert sent.status_code == 201, sent.text
    return header


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["always_503", "redirect", "item_id_path"])
def test_a_server_that_fails_everything_gets_a_verdict_not_a_crash(mode: str,
                                                                   tmp_path: Path) -> None:
    """A data plane that answers 503 or a redirect to everything, or feed items whose ids are
    paths: the properties the run exercises fail; the kit's own ERROR row never shows."""
    run = run_kit(mode, "P05,P06,P16", tmp_path)
    assert_sound(run)
    assert run.code == 1, run.err
    assert "ERROR" not in run.out, run.out
    assert " FAIL " in run.out or "FAIL" in row(run.out, "P06") + row(run.out, "P05"), run.out
