"""The hostile check ``auth_scheme`` as a fair judge: where RFC 6750 and docs/spec.md allow a
server two answers, each passes; what neither allows still fails, with the offending header
shown escaped. A failed check leaves its exchanges in a file that ``waypost conformance replay``
reruns, and a control plane that refuses the check's own space is a failed row naming the
requirement, never a crash. Each server here is the reference behind a front end of this
module (what a proxy or another HTTP stack in front of a correct server does)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.support.front_ends import Answer, Scope, wrapping
from tests.support.inprocess import kit_client
from waypost.conformance import fuzz_command, runner
from waypost.conformance import hostile_phase as hostile
from waypost.reference.server import Settings, build_app

Before = Callable[[Scope, bytes], Answer | None]
After = Callable[[Scope, bytes, Answer], Answer]


@contextmanager
def served(tmp_path: Path, kit_admin: str, before: Before | None = None,
           after: After | None = None) -> Iterator[httpx.Client]:
    """The reference (without test hooks, as ``conformance hostile`` starts it) behind a
    front end, as the kit's client reaches it."""
    settings = Settings(tmp_path / "data", kit_admin, synchronous="NORMAL", sweep_seconds=0)
    app = wrapping(build_app(settings), before, after)
    with TestClient(app) as server, kit_client(server) as client:
        yield client


def _envelope(status: int, code: str, details: dict[str, Any]) -> Answer:
    body = {"error": {"code": code, "message": "refused at the front", "details": details}}
    return status, [(b"content-type", b"application/json")], json.dumps(body).encode()


def _authorization(scope: Scope) -> bytes | None:
    return dict(scope["headers"]).get(b"authorization")


def _set_authorization(scope: Scope, value: bytes) -> None:
    scope["headers"] = [(k, value if k == b"authorization" else v) for k, v in scope["headers"]]


# ----- front ends that take a freedom -------------------------------------------------------


def one_or_more_spaces(scope: Scope, body: bytes) -> Answer | None:
    """RFC 6750 §2.1, ``"Bearer" 1*SP b64token``: the spaces after the scheme read as one."""
    value = _authorization(scope)
    if value is not None:
        _set_authorization(scope, re.sub(rb"^([Bb][Ee][Aa][Rr][Ee][Rr])  +", rb"\1 ", value))
    return None


def controls_are_a_malformed_head(scope: Scope, body: bytes) -> Answer | None:
    """An HTTP stack that refuses a head with a control character in a header value: 400
    INVALID_REQUEST naming ``headers`` (docs/spec.md, a head a parser cannot take)."""
    if any(re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", value) for _, value in scope["headers"]):
        return _envelope(400, "INVALID_REQUEST", {"field": "headers"})
    return None


# ----- front ends that break the contract ---------------------------------------------------


def lookalike_scheme_accepted(scope: Scope, body: bytes) -> Answer | None:
    """``bearerx <token>`` served as ``Bearer <token>``: a scheme it must refuse, 200."""
    value = _authorization(scope)
    if value is not None and value.lower().startswith(b"bearerx "):
        _set_authorization(scope, b"Bearer " + value[8:])
    return None


def two_spaces_invalid(scope: Scope, body: bytes) -> Answer | None:
    """Two spaces after the scheme refused as 400 naming ``authorization``: neither answer."""
    if (_authorization(scope) or b"").startswith(b"Bearer  "):
        return _envelope(400, "INVALID_REQUEST", {"field": "authorization"})
    return None


def two_spaces_crash(scope: Scope, body: bytes) -> Answer | None:
    if (_authorization(scope) or b"").startswith(b"Bearer  "):
        return _envelope(500, "INTERNAL", {})
    return None


def control_stripped(scope: Scope, body: bytes) -> Answer | None:
    """A DEL dropped from the credential: the token before it serves the request."""
    value = _authorization(scope)
    if value is not None and b"\x7f" in value:
        _set_authorization(scope, value.replace(b"\x7f", b"").rstrip())
    return None


def control_named_otherwise(scope: Scope, body: bytes) -> Answer | None:
    """A DEL refused as 400, but naming ``authorization``, not ``headers``."""
    if b"\x7f" in (_authorization(scope) or b""):
        return _envelope(400, "INVALID_REQUEST", {"field": "authorization"})
    return None


def _auth_scheme(client: httpx.Client, kit_admin: str,
                 replay_dir: Path | None = None) -> hostile.HostileRow:
    rows = hostile.run_checks(client, kit_admin, "fr", only=("auth_scheme",),
                              replay_dir=replay_dir)
    assert [row.check.name for row in rows] == ["auth_scheme"]
    return rows[0]


@pytest.mark.parametrize("front", [None, one_or_more_spaces, controls_are_a_malformed_head])
def test_each_answer_the_contract_allows_passes(tmp_path: Path, kit_admin: str,
                                                front: Before | None) -> None:
    """The reference as it is (401 for two spaces and for a DEL), a server that reads 1*SP
    as one space, and one whose HTTP stack refuses a control character in the head."""
    with served(tmp_path, kit_admin, front) as client:
        row = _auth_scheme(client, kit_admin)
    assert (row.result, row.message) == ("pass", "")
    assert {"WP-AUTH-2", "WP-AUTH-5", "WP-ERR-5"} <= set(row.check.requirements)


@pytest.mark.parametrize(("front", "shown", "rid"), [
    (lookalike_scheme_accepted, "'bearerx <bob's token>'", "WP-AUTH-2"),
    (two_spaces_invalid, "'Bearer\\x20\\x20<bob's token>'", "RFC 6750"),
    (two_spaces_crash, "'Bearer\\x20\\x20<bob's token>'", "WP-ERR-5"),
    (control_stripped, "'Bearer <bob's token>\\x7f'", "WP-AUTH-2"),
    (control_named_otherwise, "'Bearer \\x7f'", "WP-AUTH-2"),
])
def test_what_neither_answer_allows_fails_showing_the_header_escaped(
        tmp_path: Path, kit_admin: str, front: Before, shown: str, rid: str) -> None:
    with served(tmp_path, kit_admin, front) as client:
        row = _auth_scheme(client, kit_admin)
    assert row.result == "fail"
    assert shown in row.message, row.message
    assert rid in row.message
    assert "Bearer  " not in row.message  # a run of spaces is never shown raw
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", row.message)  # nor a control character
    assert hostile.summary([row])[0] == "fail"


def test_a_failed_check_leaves_its_exchanges_and_the_replay_reruns_it(
        tmp_path: Path, kit_admin: str) -> None:
    replays = tmp_path / "replays"
    with served(tmp_path / "broken", kit_admin, two_spaces_crash) as client:
        row = _auth_scheme(client, kit_admin, replays)
        assert row.replay == str(replays / "fr-hostile-auth_scheme.json")
        said: list[str] = []
        assert fuzz_command.replay_hostile("auth_scheme", client, kit_admin,
                                           out=said.append) is not None
        assert said[0].startswith("still failing: auth_scheme: ")
    assert row.as_json()["replay"] == row.replay
    text = Path(row.replay).read_text()
    recorded = json.loads(text)
    assert recorded["format"] == hostile.REPLAY_FORMAT
    assert fuzz_command.is_fuzz_replay(Path(row.replay))  # what 'conformance replay' reruns
    assert (recorded["check"], recorded["property"]) == ("auth_scheme", "HOSTILE")
    assert recorded["requirements"] == list(row.check.requirements)
    assert recorded["message"] == row.message
    last = recorded["exchanges"][-1]
    assert (last["method"], last["path"], last["status"]) == ("GET", "/v1/feed", 500)
    assert last["headers"]["Authorization"] == "Bearer  <bob's token>"
    assert "INTERNAL" in last["answer"]
    assert kit_admin not in text  # no secret: every token is masked
    assert not re.search(r"(Bearer|Basic) +[A-Za-z0-9]", text)
    with served(tmp_path / "fixed", kit_admin) as client:
        said = []
        assert fuzz_command.replay_hostile("auth_scheme", client, kit_admin,
                                           out=said.append) is None
        assert said == ["passes now: hostile auth_scheme (pass)"]


def test_a_passing_check_writes_no_file(tmp_path: Path, kit_admin: str) -> None:
    with served(tmp_path, kit_admin) as client:
        row = _auth_scheme(client, kit_admin, tmp_path / "replays")
    assert (row.result, row.replay) == ("pass", None)
    assert "replay" not in row.as_json()  # the kit report's hostile rows keep their members
    assert not (tmp_path / "replays").exists()


def token_without_secret(scope: Scope, body: bytes, answer: Answer) -> Answer:
    """A token issue answered 201 without the token's secret."""
    status, headers, content = answer
    if scope["path"].endswith("/tokens") and status == 201:
        return status, headers, json.dumps({**json.loads(content), "token": None}).encode()
    return answer


def spaces_refused(scope: Scope, body: bytes) -> Answer | None:
    if scope["path"] == "/admin/v1/spaces" and scope["method"] == "POST":
        return _envelope(503, "UNAVAILABLE", {})
    return None


@pytest.mark.parametrize(("before", "after", "rid"), [
    (None, token_without_secret, "WP-CTRL-11"),
    (spaces_refused, None, "WP-CTRL-3, WP-CTRL-6"),
])
def test_a_control_plane_that_refuses_the_checks_space_fails_the_row_naming_it(
        tmp_path: Path, kit_admin: str, before: Before | None, after: After | None,
        rid: str) -> None:
    """The check's own setup: a failed row with the requirement and the exchanges, then the
    next check, never an exception that ends the phase."""
    with served(tmp_path, kit_admin, before, after) as client:
        rows = hostile.run_checks(client, kit_admin, "cp", only=("auth_scheme", "numbers"),
                                  replay_dir=tmp_path / "replays")
    assert sorted((row.check.name, row.result) for row in rows) == [("auth_scheme", "fail"),
                                                                    ("numbers", "fail")]
    for row in rows:
        assert "no fresh space for the check" in row.message
        assert f"({rid})" in row.message, row.message
        assert row.replay is not None
        exchanges = json.loads(Path(row.replay).read_text())["exchanges"]
        assert exchanges[-1]["path"].startswith("/admin/v1/spaces")


def test_a_kit_run_writes_the_failed_hostile_checks_exchanges(tmp_path: Path,
                                                              kit_admin: str) -> None:
    """The whole run (quick profile) against the same broken server: the HOSTILE row fails
    and names the replay file of the failed check, in the run's replay directory."""
    replays = tmp_path / "replays"
    with served(tmp_path / "broken", kit_admin, two_spaces_crash) as client:
        report = runner.run("broken", client, kit_admin, profile="quick", seed=3,
                            replay_dir=replays, shrink_seconds=0)
    row = next(o for o in report.outcomes if o.prop.pid == "HOSTILE")
    assert row.result == "fail"
    assert row.replay is not None
    assert Path(row.replay).parent == replays
    assert json.loads(Path(row.replay).read_text())["check"] == "auth_scheme"
