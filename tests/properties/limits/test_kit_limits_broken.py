"""Servers that bend a published limit must fail a ``ci`` run, in the limit phase, named by the
limit and by its property (the style of ``test_kit_broken.py``: the reference with one
defect patched in this test process, served in-process)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from waypost.conformance import runner
from waypost.reference.domain import values
from waypost.reference.service import acks, feed, messages
from waypost.reference.service.context import Context, Outcome

SEED = 20261130  # the ci-profile seed of the broken servers (test_kit_broken.py)
Patch = Callable[[pytest.MonkeyPatch], None]
KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
pytestmark = pytest.mark.slow


def ack_split_in_two(mp: pytest.MonkeyPatch) -> None:
    """An ACK past the bound is saved as two ACKs, answered as one."""
    original = acks.acknowledge

    async def acknowledge(ctx: Context, principal: Any, raw: Any,
                          remembered: bool = False) -> Outcome:
        bound = ctx.limits.ack_items
        if not (isinstance(raw, dict) and isinstance(raw.get("items"), list)
                and len(raw["items"]) > bound):
            return await original(ctx, principal, raw, remembered)
        rest = {key: value for key, value in raw.items() if key != "checkpoint"}
        first = await original(ctx, principal, {**rest, "items": raw["items"][:bound]})
        second = await original(ctx, principal, {**raw, "request_id": raw["request_id"] + ".2",
                                                 "items": raw["items"][bound:]})
        return Outcome(200, {**second.body, "items": first.body["items"]
                             + second.body["items"]})
    mp.setattr(acks, "acknowledge", acknowledge)


def page_cut_to_the_limit(mp: pytest.MonkeyPatch) -> None:
    """A feed ``limit`` above the bound is cut to it silently instead of refused."""
    original = feed.parse_limit

    def parse_limit(ctx: Context, raw: str | None, field: str = "limit",
                    default: int = 50) -> int:
        if raw is not None and raw.isdigit() and int(raw) > ctx.limits.page_limit:
            raw = str(ctx.limits.page_limit)
        return original(ctx, raw, field, default)
    mp.setattr(feed, "parse_limit", parse_limit)


def one_recipient_too_many(mp: pytest.MonkeyPatch) -> None:
    """A send takes one recipient more than the published bound."""
    original = messages.parse_send
    mp.setattr(messages, "parse_send", lambda raw, limits: original(
        raw, replace(limits, recipients=limits.recipients + 1)))


def subject_in_characters(mp: pytest.MonkeyPatch) -> None:
    """The subject bound is counted in characters, not UTF-8 bytes."""
    def subject(value: Any, field: str = "subject") -> str:
        text = values.string(value, field)
        if not text or len(text) > values.MAX_SUBJECT_BYTES:
            raise values.over_limit(field, "subject_bytes", values.MAX_SUBJECT_BYTES)
        return text
    mp.setattr(values, "subject", subject)


VARIANTS: dict[str, tuple[Patch, str, str]] = {
    "an ACK past the bound is split in two": (ack_split_in_two, "ack_items", "P10"),
    "a page is cut to the limit silently": (page_cut_to_the_limit, "page_limit", "P06"),
    "one recipient too many is accepted": (one_recipient_too_many, "recipients", "P05"),
    "the subject is counted in characters": (subject_in_characters, "subject_bytes", "P05"),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_kit_catches_and_names_a_bent_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                kit_app: KitApp, kit_admin: str,
                                                name: str) -> None:
    patch, limit, pid = VARIANTS[name]
    with kit_app(tmp_path / "data") as client:
        patch(monkeypatch)
        report = runner.run("broken", kit_client(client), kit_admin, profile="quick", seed=SEED,
                            replay_dir=tmp_path / "replays", shrink_seconds=5)
        monkeypatch.undo()
    rows = {row.name: row for row in report.limits}
    assert rows[limit].result == "fail", rows[limit]
    assert rows[limit].over_limit == "FAIL"
    assert rows[limit].replay
    assert Path(rows[limit].replay).exists()
    assert {r.result for n, r in rows.items() if n != limit} <= {
        "pass", "not published", "not checked"}, [r for r in rows.values() if r.name != limit]
    outcome = next(o for o in report.outcomes if o.prop.pid == pid)
    assert outcome.result == "fail", [(o.prop.pid, o.result, o.message) for o in report.outcomes]
    assert limit in outcome.message
