"""Every plan's guard and outcome read, as they run, against the committed files in ``golden/``.

One file per plan holds its rules (the verdict, and the error a client gets), its guard's SQL and
its outcome read's SQL, in the ``:name`` form the plan is written in: a port author reads a whole
plan's guard there. A change to a plan's SQL shows here as a diff; ``WAYPOST_UPDATE_GOLDEN=1``
rewrites the files.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from tests.support.api import PRINCIPAL
from waypost.reference.domain.contract import STATUS
from waypost.reference.storage import (
    acks,
    admin_sessions,
    control,
    memory,
    messages,
    plan,
    publish_rules,
    submissions,
    uploads,
)
from waypost.reference.storage.plan import CommitPlan, guard_sql
from waypost.reference.storage.rows import names
from waypost.reference.storage.rules import Rule

GOLDEN = Path(__file__).parent / "golden"
UPDATE = "WAYPOST_UPDATE_GOLDEN"
KEY = ("space.create", "r", b"\0" * 32)
FINGERPRINT = b"\0" * 32


class _Keeping:
    """A driver stand-in that keeps the reservation's plan instead of running it."""

    plan: CommitPlan

    async def run(self, kept: CommitPlan) -> list[tuple[Any, ...]]:
        self.plan = kept
        return [("ok", None, *([None] * (len(names(submissions.SubmissionRecord)) + 1)))]


def _reservation(**checks: Any) -> CommitPlan:
    driver = _Keeping()
    asyncio.run(submissions.reserve(driver, PRINCIPAL, 0, "memory.publish",  # type: ignore[arg-type]
                                    "r", FINGERPRINT, "sub", "c", **checks))
    return driver.plan


def _send(new_thread: bool, reply: bool) -> CommitPlan:
    """A send into a new thread to the space's default actor, or a reply in a thread to listed
    recipients with an attachment (between them, every rule a send checks)."""
    return messages.send_message(PRINCIPAL, 0, messages.MessageSend(
        "r", FINGERPRINT, "sub", "msg", "thr", new_thread, "fi", None if new_thread else ["b"],
        "m0" if reply else None, "note", "s", "{}", [] if new_thread else ["blb"], None))


def _plans() -> dict[str, list[tuple[str, Callable[[], CommitPlan]]]]:
    """Each golden file's plans: a plan of each shape whose guard or outcome read differs."""
    slot = uploads.Slot("sub", "upl", "blb", "obj", 1, FINGERPRINT, "text/plain", None, 0)
    commit = memory.RevisionCommit("sub", "c", 0, "delta", b"\1" * 32, FINGERPRINT, "upl")
    token = control.TokenRow("tok", b"d", "a1", "c1", False, b"f", None, ["message.send"],
                             ["a2"], [("col", "read")], ["blb"])
    return {
        "send_message": [
            ("a new thread, to the space's default actor", lambda: _send(True, False)),
            ("a reply in a thread, to listed recipients, with attachments",
             lambda: _send(False, True))],
        "acknowledge": [("", lambda: acks.acknowledge(PRINCIPAL, 0, acks.AckWrite(
            "r", FINGERPRINT, "sub", [], None, "")))],
        "prepare_upload": [("", lambda: uploads.prepare(PRINCIPAL, 0, "r", FINGERPRINT, slot))],
        "mark_stored": [("", lambda: uploads.mark_stored("s1", "upl", 0))],
        "seal_upload": [("", lambda: uploads.seal(PRINCIPAL, 0, "r", FINGERPRINT, "sub", "upl"))],
        "claim_expired": [("", lambda: uploads.claim_expired(0))],
        "mark_cleaned": [("", lambda: uploads.mark_cleaned("s1", "upl"))],
        "reserve": [
            ("a key of an operation with no checks of its own", _reservation),
            ("a publish's key, with the check of its entries' blobs", lambda: _reservation(
                checks=publish_rules.entry_blob_checks(["blb"])))],
        "record_failure": [("", lambda: submissions.record_failure(PRINCIPAL, 0, "sub", 400,
                                                                   "X", ""))],
        "stage_publish": [("", lambda: memory.stage(PRINCIPAL, 0, "sub", [], FINGERPRINT, 0))],
        "commit_revision": [("", lambda: memory.commit_revision(PRINCIPAL, 0, commit))],
        "create_space": [("", lambda: control.create_space(KEY, 0, "s1", "S", "u", "a1", "agent",
                                                           "A"))],
        "create_actor": [("", lambda: control.create_actor(KEY, 0, "s1", "a1", "agent", "A"))],
        "disable_actor": [("", lambda: control.disable_actor(KEY, 0, "s1", "a1"))],
        "create_consumer": [("", lambda: control.create_consumer(KEY, 0, "s1", "c1", "a1",
                                                                 "inbox", {}))],
        "change_view": [("", lambda: control.change_view(KEY, 0, "s1", "c1", "inbox", {}))],
        "create_collection": [("", lambda: control.create_collection(KEY, 0, "s1", "col", "a1",
                                                                     "x"))],
        "issue_token": [("", lambda: control.issue_token(KEY, 0, "s1", token, {}))],
        "revoke_token": [("", lambda: control.revoke_token(KEY, 0, "tok"))],
        "add_thread_members": [("", lambda: control.add_thread_members(KEY, 0, "s1", "t",
                                                                       ["a1"]))],
        "create_admin_session": [("", lambda: admin_sessions.create(b"d", 0, 1, 2))],
        "touch_admin_session": [("", lambda: admin_sessions.touch(b"d", 0))],
        "revoke_admin_session": [("", lambda: admin_sessions.revoke(b"d", 0))],
    }


PLANS = _plans()


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The ``:name`` text each compiled statement was written as (recorded as plans bind them)."""
    texts: dict[str, str] = {}
    compile_sql = plan._compile

    def recording(sql: str) -> Any:
        compiled = compile_sql(sql)
        texts[compiled[0]] = dedent(sql).strip()
        return compiled

    monkeypatch.setattr(plan, "_compile", recording)
    return texts


def _rule_line(rule: Rule) -> str:
    if not rule.code:
        return f"--   {rule.verdict}: no error; {rule.message}"
    field = f", field {rule.field}" if rule.field else ""
    reason = f", reason {rule.reason}" if rule.reason else ""
    return f"--   {rule.verdict}: {STATUS[rule.code]} {rule.code}{field}{reason}: {rule.message}"


def _section(shape: str, built: CommitPlan, written: dict[str, str]) -> str:
    guard, outcome = (written[statement.sql] for statement in (built.writes[0], built.outcome))
    assert guard == guard_sql(built.rules), f"{built.name}: its guard does not check its rules"
    rules = [_rule_line(rule) for rule in built.rules] or ["--   none: the guard says 'ok'"]
    return "\n".join([
        f"-- plan {built.name}{f' ({shape})' if shape else ''}",
        "-- rules, in the order the guard checks them (verdict: the client's error):",
        *rules, "", "-- guard", f"{guard};", "", "-- outcome read", f"{outcome};", ""])


def render(name: str, written: dict[str, str]) -> str:
    """The golden file of plan ``name``."""
    head = (f"-- The guard and outcome read of the plan {name}, as they run.\n"
            "-- Generated by tests/reference/storage/test_golden_plans.py;"
            f" {UPDATE}=1 rewrites it.\n\n")
    return head + "\n".join(_section(shape, build(), written) for shape, build in PLANS[name])


@pytest.mark.parametrize("name", sorted(PLANS))
def test_a_plan_runs_the_guard_and_outcome_read_of_its_golden_file(
        name: str, written: dict[str, str]) -> None:
    path = GOLDEN / f"{name}.sql"
    text = render(name, written)
    if os.environ.get(UPDATE) == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path.name} is missing: run the tests with {UPDATE}=1"
    assert path.read_text() == text, (
        f"plan {name} changed its guard or outcome read: check the diff against"
        f" {path.relative_to(GOLDEN.parents[3])}, then rerun with {UPDATE}=1 to accept it")


def test_every_golden_file_is_a_plan() -> None:
    stale = {path.stem for path in GOLDEN.glob("*.sql")} - set(PLANS)
    assert not stale, f"golden files of no plan: {sorted(stale)} (remove them)"


def test_every_plan_of_the_server_has_a_golden_file() -> None:
    """Every plan the storage modules assemble (``plan("name", …)``, ``admin_plan("name", …)``)."""
    source = Path(plan.__file__).parent
    assembled = {match.group(1) for path in source.glob("*.py")
                 for match in re.finditer(r'plan\(\s*"(\w+)"', path.read_text())}
    assert assembled == set(PLANS)
