"""The kit must catch defects that only concurrency, retries, restarts and time reveal: what real
deployments ship in their front ends, caches and process managers (docs/spec.md, "Defects
that timing reveals"). Each server below is the reference with one such defect — patched in
this test process only, or behind a front end of the test's — and the kit's ``ci`` run, with
the property the defect breaks selected, must fail and name that property, through the check
made for it (its first requirement id)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import pytest
from starlette.testclient import TestClient

from tests.conformance.test_crash_matrix_broken import replays_forgotten_after_a_restart
from tests.properties.rules.test_kit_broken import SEED
from tests.support import front_ends
from tests.support.inprocess import Front, kit_client
from waypost.conformance import runner
from waypost.properties.coverage.catalogue import select
from waypost.properties.verdicts.owners import property_of
from waypost.reference.service import feed, messages, submissions, wakeups
from waypost.reference.service.context import Context, Outcome

pytestmark = pytest.mark.slow
KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
Patch = Callable[[pytest.MonkeyPatch, TestClient], None]
HOUR_MS = 3_600_000


def last_waiter_woken(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """Long polls miss their wake-up when two readers wait on one space: each new waiter
    replaces the space's earlier waiters, so only the last one is woken; the others answer
    when their wait is up (the reference reads once more only when woken: an empty page)."""
    original = wakeups.FeedSignal.listen

    def listen(self: wakeups.FeedSignal, principal: Any) -> wakeups.Waiter:
        for waiters in self._waiters.values():  # an earlier waiter of the space is dropped
            waiters.difference_update({w for w in waiters if w.space_id == principal.space_id})
        return original(self, principal)

    mp.setattr(wakeups.FeedSignal, "listen", listen)


def missed_wakeups_answer_empty(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """As :func:`last_waiter_woken`, and a poll whose wait runs out answers the page it read
    before waiting, without reading again: the message is never shown to it."""
    last_waiter_woken(mp, client)
    original = feed.read_feed

    async def read_feed(ctx: Context, principal: Any, cursor_text: str | None,
                        limit_text: str | None, wait_text: str | None,
                        remembered: bool = False) -> Outcome:
        if wait_text is None or not re.fullmatch(r"[0-9]{1,4}", wait_text) \
                or not 0 < int(wait_text) <= ctx.limits.wait_seconds \
                or not principal.has("event.subscribe"):
            return await original(ctx, principal, cursor_text, limit_text, wait_text,
                                  remembered)
        waiter = ctx.signal.listen(principal)
        try:
            outcome = await original(ctx, principal, cursor_text, limit_text, None, remembered)
            if outcome.body["items"]:
                return outcome
            await waiter.park(int(wait_text))
            if waiter.woken:
                return await original(ctx, principal, cursor_text, limit_text, None)
            return outcome  # the time ran out: the page read before waiting
        finally:
            ctx.signal.forget(waiter)

    mp.setattr(feed, "read_feed", read_feed)


def keys_expire_after_an_hour(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """Idempotency records of sends expire an hour (server clock) after their commit, as in a
    key cache with a time to live: a retry later runs as a first attempt."""
    original = messages.send

    async def send(ctx: Context, principal: Any, raw: Any) -> Outcome:
        if isinstance(raw, dict) and isinstance(raw.get("request_id"), str):
            found = await submissions.find(ctx, principal, "message.send", raw["request_id"])
            now = ctx.clock.now_ms()
            if found is not None and found[0].committed_at is not None \
                    and found[0].committed_at < now - HOUR_MS:
                raw = {**raw, "request_id": f"{raw['request_id']}.{now // HOUR_MS}"}
        return await original(ctx, principal, raw)

    mp.setattr(messages, "send", send)


def write_behind(flushed: Path) -> Front:
    """A server that answers data-plane writes before they are durable: they wait in a buffer
    flushed only when the control plane writes, and a restart loses the buffer. On SQLite:
    after each control-plane write the database is copied to ``flushed``, and a restart first
    puts that copy back."""

    def flush(connection: apsw.Connection) -> None:
        target = apsw.Connection(str(flushed))
        try:
            with target.backup("main", connection, "main") as backup:
                backup.step()
        finally:
            target.close()

    def lose_buffer(connection: apsw.Connection) -> None:
        if flushed.exists():
            source = apsw.Connection(str(flushed))
            try:
                with connection.backup("main", source, "main") as backup:
                    backup.step()
            finally:
                source.close()

    def wrap(app: Any) -> Any:
        async def on_writer(function: Callable[[apsw.Connection], None]) -> None:
            await asyncio.wrap_future(app.state.context.driver.writer.call(function))

        async def front(scope: Any, receive: Any, send: Any) -> None:
            http = scope["type"] == "http"
            if http and (scope["method"], scope["path"]) == ("POST", "/_test/restart"):
                await on_writer(lose_buffer)
            statuses: list[int] = []

            async def watched(message: Any) -> None:
                if message["type"] == "http.response.start":
                    statuses.append(int(message["status"]))
                await send(message)

            await app(scope, receive, watched)
            if http and scope["method"] == "POST" and scope["path"].startswith("/admin/") \
                    and statuses and 200 <= statuses[0] < 300:
                await on_writer(flush)
        return front
    return wrap


def dedup_forgotten_at_restart(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """Deduplication kept in memory only (the crash matrix's broken recovery): after a restart
    a committed key runs again."""
    replays_forgotten_after_a_restart(mp, client.app)


@dataclass(frozen=True)
class Case:
    """A broken server: the property it breaks, a patch of the reference or a front end (made
    for the test's directory), whether the run needs the test hooks, and the requirement the
    failing check must name first."""

    pid: str
    what: str
    patch: Patch | None = None
    front: Callable[[Path], Front] | None = None
    hooks: bool = False
    first: tuple[str, ...] = ()  # the ids one of which the first failing check names first


CASES = [
    Case("P11", "a gateway retries a publish that lost its CAS and answers the retry",
         # the head's CAS check or the race's "exactly one wins", whichever the draws reach
         front=lambda tmp: front_ends.cas_retried, first=("WP-MEM-16", "WP-MEM-18")),
    Case("P06", "only the last of two long polls of one space is woken",
         patch=last_waiter_woken, first=("WP-FEED-7",)),
    Case("P06", "a long poll that misses its wake-up answers an empty page",
         patch=missed_wakeups_answer_empty, first=("WP-FEED-7",)),
    Case("P05", "writes are answered before they are durable and lost at a restart",
         front=lambda tmp: write_behind(tmp / "flushed.sqlite3"), hooks=True,
         first=("WP-LOAD-3",)),
    Case("P03", "idempotency records expire an hour after their commit",
         patch=keys_expire_after_an_hour, hooks=True, first=("WP-IDEM-6",)),
    Case("P03", "deduplication is kept in memory and forgotten at a restart",
         patch=dedup_forgotten_at_restart, hooks=True, first=("WP-IDEM-6",)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.pid}: {c.what}" for c in CASES])
def test_the_kit_catches_a_defect_that_timing_reveals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_app: KitApp, kit_admin: str,
        case: Case) -> None:
    front = None if case.front is None else case.front(tmp_path)
    with kit_app(tmp_path / "data", test_hooks=case.hooks) as client:
        if case.patch is not None:
            case.patch(monkeypatch, client)
        report = runner.run("broken", kit_client(client, front), kit_admin, profile="ci",
                            seed=SEED, selected=select(case.pid),
                            replay_dir=tmp_path / "replays", shrink_seconds=0)
        monkeypatch.undo()
    outcome = next(o for o in report.outcomes if o.prop.pid == case.pid)
    assert outcome.result == "fail", (case.what, [(o.prop.pid, o.result, o.checks, o.message)
                                                  for o in report.outcomes if o.checks])
    named = tuple(outcome.evidence["requirements"])
    assert property_of(named) == case.pid, outcome.message
    assert named[0] in case.first, outcome.message
    assert outcome.replay is not None
    assert Path(outcome.replay).exists()
