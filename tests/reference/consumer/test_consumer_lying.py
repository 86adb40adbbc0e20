"""The consumer against a lying deployment (tests/support/lying_server.py), over real HTTP: every
mode ends within its timeout with one clear line and a documented exit status, a bad answer leaves
the local file as it was, no request leaves the API base, the process stays small, and no raw
control character reaches the terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.lying_server import (
    Lying,
    local_contents,
    lying_server,
    outside_the_api,
    scene_copy,
    scene_template,
)
from waypost.reference.consumer.client import MARGIN, Api, BadAnswer, chunks

ADMIN = "lying-admin"
#: The consumer's ``--timeout`` here: a call that takes longer is cut off.
TIMEOUT = 3
#: Seconds a consumer command may take in all, retries and start-up included.
BOUND = 30
#: The consumer's peak resident memory, at most.
MAX_RSS_BYTES = 200 << 20
#: What must never reach a terminal: C0 but tab and newline, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: The consumer's command line, writing its own peak RSS (KiB) to $PEAK_FILE as it ends: the
#: VmHWM of its memory map (``ru_maxrss`` would count the parent's memory at the fork).
MEASURED = """
import os, re, sys
from pathlib import Path
from waypost.consumer_command import main
try:
    code = main(sys.argv[1:])
finally:
    peak = re.search(r"VmHWM:\\s*(\\d+)", Path("/proc/self/status").read_text())
    Path(os.environ["PEAK_FILE"]).write_text(peak.group(1))
sys.exit(code)
"""
#: Exit statuses (docs/consumer.md).
FAILED, BAD_SERVER, UNREACHABLE = 1, 3, 4


@dataclass
class Run:
    """One consumer command: its exit status, output, time and peak memory."""

    status: int
    stdout: str
    stderr: str
    seconds: float
    rss: int


@dataclass
class Scene:
    url: str
    lying: Lying
    tokens: dict[str, str]
    db: Path

    def consumer(self, *arguments: str, who: str = "bob") -> Run:
        """``waypost consumer`` as a process (``python -m waypost.consumer_command``), with its
        peak memory as it measured it itself on the way out."""
        peak = self.db.with_name("peak")
        env = {**os.environ, "WAYPOST_TOKEN": self.tokens[who], "PEAK_FILE": str(peak)}
        env.pop("WAYPOST_CONSUMER_FAULT", None)
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", MEASURED, *arguments, "--db", str(self.db),
                 "--timeout", str(TIMEOUT)], env=env, capture_output=True, timeout=BOUND)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{arguments} did not end within {BOUND} s") from None
        return Run(done.returncode, done.stdout.decode("utf-8", "replace"),
                   done.stderr.decode("utf-8", "replace"), time.monotonic() - started,
                   int(peak.read_text()) * 1024)



@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return scene_template(tmp_path_factory.mktemp("scene"), ADMIN)


@pytest.fixture
def scene(request: pytest.FixtureRequest, tmp_path: Path,
          template: tuple[Path, dict[str, str]]) -> Iterator[Scene]:
    """The mode's lying server with the demo space (``set_scene``, set once a module and
    copied); bob's consumer file is initialised."""
    tokens = scene_copy(template, tmp_path / "data")
    with lying_server(request.param, tmp_path / "data", ADMIN) as (url, lying):
        here = Scene(url, lying, tokens, tmp_path / "bob.db")
        assert here.consumer("init", "--server", url, "--offline").status == 0
        yield here


def _one_clear_line(run: Run) -> None:
    assert run.stderr.count("\n") == 1, run.stderr
    assert "Traceback" not in run.stderr


def _safe(run: Run) -> None:
    """Nothing raw on the terminal, the time and memory bounds held."""
    assert not RAW.search(run.stdout), run.stdout
    assert not RAW.search(run.stderr), run.stderr
    assert run.seconds < BOUND
    assert 0 < run.rss < MAX_RSS_BYTES, run.rss


def _syncs(scene: Scene, times: int = 2) -> list[Run]:
    """``sync`` up to ``times`` times; after each one that failed, the local file is as it
    was before it."""
    runs = []
    for _ in range(times):
        before = local_contents(scene.db)
        run = scene.consumer("sync")
        _safe(run)
        if run.status != 0:
            _one_clear_line(run)
            assert local_contents(scene.db) == before, "a bad answer changed the local file"
        runs.append(run)
    return runs


def _stays_inside(scene: Scene) -> None:
    assert not outside_the_api(scene.lying.paths), outside_the_api(scene.lying.paths)
    assert not [p for p in scene.lying.paths if "passwd" in p or "%2F" in p.upper()]


@pytest.mark.parametrize("scene", ["honest"], indirect=True)
def test_an_honest_server_syncs_everything(scene: Scene) -> None:
    (run, again) = _syncs(scene)
    assert (run.status, again.status) == (0, 0), run.stderr
    listed = scene.consumer("list", "--json")
    assert listed.status == 0
    assert "Plan 0" in listed.stdout
    assert "notes" in listed.stdout
    _stays_inside(scene)


#: Lies the consumer must refuse as the server's fault: mode → the words its line names.
BAD_ANSWERS = {
    "stuck_cursor": "not after", "new_cursors": "not after", "wrong_types": "sequence",
    "duplicate_ids": "twice", "oversized_page": "more than the", "other_message": "another",
    "dotdot_id": "not an id", "nul_id": "not an id", "query_id": "not an id",
    "item_id_path": "not an id", "huge_page": "bytes", "looping_entries": "not after",
    "compressed": "content-encoding",
}


@pytest.mark.parametrize("scene", sorted(BAD_ANSWERS), indirect=True)
def test_a_lie_is_named_as_the_servers_fault_and_stores_nothing(scene: Scene) -> None:
    runs = _syncs(scene)
    refused = [run for run in runs if run.status != 0]
    assert refused, [run.stdout for run in runs]
    for run in refused:
        assert run.status == BAD_SERVER, run.stderr
        assert "the server broke the contract" in run.stderr
        assert BAD_ANSWERS[scene.lying.mode] in run.stderr, run.stderr
    assert scene.lying.served
    _stays_inside(scene)


@pytest.mark.parametrize("scene", ["unknown_type"], indirect=True)
def test_items_of_an_unknown_type_are_skipped_and_passed(scene: Scene) -> None:
    (run, again) = _syncs(scene)
    assert (run.status, again.status) == (0, 0), run.stderr
    assert "of unknown types skipped" in run.stdout
    assert scene.consumer("status", "--json").status == 0
    _stays_inside(scene)


@pytest.mark.parametrize("scene", ["control_text"], indirect=True)
def test_control_characters_are_shown_never_sent_to_the_terminal(scene: Scene) -> None:
    (run, _) = _syncs(scene)
    assert run.status == 0, run.stderr
    listed = scene.consumer("list")
    _safe(listed)
    assert "\\x1b" in listed.stdout
    item = re.search(r"^(fi_\S+)", listed.stdout.splitlines()[1])
    assert item is not None
    shown = scene.consumer("show", item.group(1))
    _safe(shown)
    assert "\\u202e" in shown.stdout
    sent = scene.consumer("send", "--to", "alice", "--subject", "x", "--text", "y")
    _safe(sent)
    _one_clear_line(sent)
    assert sent.status == FAILED
    status = scene.consumer("status")
    _safe(status)


@pytest.mark.slow
@pytest.mark.parametrize("scene", ["trickle"], indirect=True)
def test_a_trickling_server_is_cut_off_at_the_timeout(scene: Scene) -> None:
    (run,) = _syncs(scene, times=1)
    assert run.status == UNREACHABLE, run.stderr
    assert f"within {TIMEOUT} s" in run.stderr
    assert run.seconds < TIMEOUT + 10


@pytest.mark.parametrize("scene", ["always_500", pytest.param("always_503", marks=pytest.mark.slow),
                                   "redirect"], indirect=True)
def test_failing_and_redirecting_servers_end_in_one_line(scene: Scene) -> None:
    (run,) = _syncs(scene, times=1)
    assert run.status == FAILED, run.stderr
    words = {"always_500": "HTTP_ERROR (500)", "always_503": "UNAVAILABLE (503)",
             "redirect": "follows no redirect"}[scene.lying.mode]
    assert words in run.stderr
    _stays_inside(scene)


@pytest.mark.parametrize("scene", ["bad_send_answer"], indirect=True)
def test_a_bad_answer_to_a_write_leaves_it_queued(scene: Scene) -> None:
    before = local_contents(scene.db)
    sent = scene.consumer("send", "--to", "alice", "--subject", "x", "--text", "y")
    _safe(sent)
    _one_clear_line(sent)
    assert sent.status == BAD_SERVER, sent.stderr
    assert "send answer.message_id: missing" in sent.stderr
    after = local_contents(scene.db)
    assert [row[3] for row in after["local_outbound"]] == ["pending"]  # queued, not final
    assert after["local_feed_items"] == before["local_feed_items"]


def test_a_download_reads_no_more_than_the_declared_size_and_a_margin(
        tmp_path: Path, template: tuple[Path, dict[str, str]]) -> None:
    """A blob declared as 8 bytes whose content streams 400 MB: the consumer's bounded read
    (:func:`chunks`) refuses it as longer than declared after at most one read of the network
    past the size, counted where the bytes come in."""
    tokens = scene_copy(template, tmp_path / "data")
    with lying_server("huge_blob", tmp_path / "data", ADMIN) as (url, lying):
        api = Api(url, tokens["bob"], timeout=TIMEOUT)
        try:
            size = api.blob(tokens["blob"])["size"]
            responses: list[httpx.Response] = []
            with pytest.raises(BadAnswer, match=f"longer than its declared {size} bytes"):
                _download(api, f"/v1/blobs/{tokens['blob']}/content", size, responses)
            assert size < responses[0].num_bytes_downloaded <= size + MARGIN
        finally:
            api.close()
        assert lying.served == 1


def _download(api: Api, path: str, size: int, responses: list[httpx.Response]) -> None:
    """Read a download within ``size`` bytes; its response goes to ``responses``."""
    with api.download(path) as response:
        responses.append(response)
        read = 0
        for chunk in chunks(response, size):
            read += len(chunk)
            assert read <= size


def _declared_long(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-length": str(400 << 20)},
                          content=iter([b"never read"]))


def test_a_content_length_over_the_declared_size_is_refused_unread() -> None:
    api = Api("http://server", "token", transport=httpx.MockTransport(_declared_long))
    try:
        responses: list[httpx.Response] = []
        with pytest.raises(BadAnswer, match="its Content-Length says 419430400"):
            _download(api, "/v1/blobs/blb_a/content", 8, responses)
        assert responses[0].num_bytes_downloaded == 0
    finally:
        api.close()
