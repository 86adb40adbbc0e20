"""The kit must fail on broken servers, and name the property each breaks.

Each variant below is the reference with one deliberate defect, patched in this test process
only (the reference itself never carries them). The kit runs with the ``ci`` profile against
the variant through the ASGI app (the defects are about logic, not transport).
"""

from __future__ import annotations

import functools
import hashlib
import io
import itertools
import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.support.inprocess import kit_client
from waypost.conformance import runner
from waypost.properties.coverage.catalogue import select
from waypost.reference.domain.errors import Forbidden, NotFound
from waypost.reference.server import served_context
from waypost.reference.service import (
    acks,
    auth,
    feed,
    manifest_build,
    memory,
    messages,
    submissions,
)
from waypost.reference.service.context import Context, Outcome
from waypost.reference.storage import feed as feed_sql
from waypost.reference.storage import memory as memory_sql
from waypost.reference.storage.plan import CommitPlan, Statement

#: The ci-profile seed each broken server is run with.
SEED = 20261130
Patch = Callable[[pytest.MonkeyPatch, TestClient], None]
KitApp = Callable[..., AbstractContextManager[TestClient]]  # the conftest fixture kit_app
pytestmark = pytest.mark.slow


def replay_ignores_fingerprint(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    mp.setattr(submissions, "check_fingerprint", lambda record, fingerprint: None)


def no_idempotency(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    original = messages.send
    attempts = itertools.count()

    async def send(ctx: Context, principal: Any, raw: Any) -> Outcome:
        if isinstance(raw, dict) and "request_id" in raw:
            raw = {**raw, "request_id": f"{raw['request_id']}-{next(attempts)}"}
        return await original(ctx, principal, raw)
    mp.setattr(messages, "send", send)


def receipts_may_regress(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.reference.storage import acks as plan

    ctx: Context = served_context(client.app)
    ctx.driver.call_writer(
        lambda connection: connection.execute("DROP TRIGGER receipts_forward_only"))
    mp.setattr(plan, "ADVANCED", "(requested_stage <> prior_stage)")
    # the plan's SQL is built once: a fresh cache for the patched text, the original's after
    plan._ack_sql.cache_clear()
    mp.setattr(plan, "_ack_sql", functools.cache(plan._ack_sql.__wrapped__))


def foreign_ids_answer_differently(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    original = messages.read_message

    async def read_message(ctx: Context, principal: Any, message_id: str) -> Outcome:
        try:
            return await original(ctx, principal, message_id)
        except NotFound:
            (rows,) = await ctx.driver.read([Statement(
                "SELECT 1 FROM messages WHERE message_id = ?", (message_id,))])
            if rows:
                raise Forbidden("message belongs elsewhere") from None
            raise
    mp.setattr(messages, "read_message", read_message)


def cursor_not_bound_to_consumer(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    def binding_fault(principal: Any, decoded: Any) -> str:
        return ""
    mp.setattr(feed, "binding_fault", binding_fault)
    mp.setattr(acks, "binding_fault", binding_fault)


def ack_saved_partially(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    original = acks.acknowledge

    async def acknowledge(ctx: Context, principal: Any, raw: Any,
                          remembered: bool = False) -> Outcome:
        try:
            return await original(ctx, principal, raw, remembered)
        except NotFound:
            (rows,) = await ctx.driver.read([feed_sql.visible_items_statement(
                principal, [item["item_id"] for item in raw["items"]])])
            visible = {row[0] for row in rows if row[1] != "receipt"}
            kept = [item for item in raw["items"] if item["item_id"] in visible]
            if kept:
                await original(ctx, principal, {"request_id": raw["request_id"] + ".part",
                                                "items": kept})
            raise
    mp.setattr(acks, "acknowledge", acknowledge)


def revoked_token_still_reads(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.reference.storage import tokens

    original = tokens.load_token

    async def load_token(driver: Any, token_id: str) -> Any:
        state = await original(driver, token_id)
        return None if state is None else tokens.TokenState(
            state.digest, False, state.expires_at, state.actor_disabled,
            state.consumer_disabled, state.principal)
    mp.setattr(auth, "load_token", load_token)
    from waypost.reference.storage import authority
    from waypost.reference.storage import feed as feed_sql
    from waypost.reference.storage import submissions as submission_sql

    lenient = authority.NOT_LIVE.replace("t.revoked_at IS NULL", "1")
    for module in (authority, feed_sql):
        mp.setattr(module, "NOT_LIVE", lenient)
    # a reservation and a recorded failure check the token with their rules
    dead = authority.TOKEN_DEAD._replace(condition=lenient)
    mp.setattr(submission_sql, "TOKEN_DEAD", dead)
    mp.setattr(submission_sql, "RECORD_FAILURE_RULES", (submission_sql.ALREADY_SETTLED, dead))


def inbox_shows_other_recipients(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.reference.storage import feed as feed_sql

    original = feed_sql.visibility_params

    def visibility_params(principal: Any) -> dict[str, Any]:
        params = original(principal)
        params["all_messages"] = params["all_messages"] or params["inbox_messages"]
        return params
    mp.setattr(feed_sql, "visibility_params", visibility_params)


def late_put_overwrites(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.adapters.blobs import files
    from waypost.reference.storage.blob_store import ObjectFacts, Written

    async def overwrite(self: files.FileBlobStore, object_ref: str, chunks: Any,
                        expected: Any = None) -> Any:
        data = b"".join([chunk async for chunk in chunks])
        path = self.path(object_ref)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)  # no verification, no create-only
        return Written.CREATED, ObjectFacts(len(data), hashlib.sha256(data).digest())
    mp.setattr(files.FileBlobStore, "create_only", overwrite)


def blobs_readable_by_anyone(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.reference.storage import uploads
    from waypost.reference.storage.plan import stmt

    mp.setattr(uploads, "blob_readers_statement", lambda principal, blob_id: stmt("SELECT 1"))


def keys_ignore_the_producer(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    from waypost.reference.storage import submissions as submission_sql
    from waypost.reference.storage.plan import stmt

    def lookup_statement(principal: Any, operation: str, request_id: str) -> Any:
        return stmt(f"""SELECT {submission_sql.SUBMISSION_COLUMNS}, f.sequence
            FROM submissions s LEFT JOIN feed_items f ON f.item_id = s.feed_item_id
            WHERE s.space_id = :space_id AND s.operation = :operation
              AND s.request_id = :request_id""",
            {"space_id": principal.space_id, "operation": operation, "request_id": request_id})
    mp.setattr(submission_sql, "lookup_statement", lookup_statement)


def cas_skipped(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """The server publishes on whatever the head is, ignoring expected_revision."""
    original = memory.publish

    async def publish(ctx: Context, principal: Any, collection_id: str, raw: Any) -> Outcome:
        (rows,) = await ctx.driver.read([memory_sql.collection_statement(principal.space_id,
                                                                         collection_id)])
        if rows and isinstance(raw, dict) and isinstance(raw.get("expected_revision"), int) \
                and raw["expected_revision"] <= 2**53 - 1:
            raw = {**raw, "expected_revision": rows[0][3]}
        return await original(ctx, principal, collection_id, raw)
    mp.setattr(memory, "publish", publish)


def noop_creates_a_revision(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """Every state looks new: an unchanged publish makes a revision and a feed item."""
    counter = iter(range(10**9))
    decide, write = memory.decide, manifest_build.write

    def always_changed(*args: Any) -> Any:
        return replace(decide(*args), unchanged=False)

    async def new_fingerprint(*args: Any) -> tuple[bytes, Any]:
        _, facts = await write(*args)
        return hashlib.sha256(str(next(counter)).encode()).digest(), facts
    mp.setattr(memory, "decide", always_changed)
    mp.setattr(manifest_build, "write", new_fingerprint)


def _rewrite(plan: CommitPlan, marker: str, old: str, new: str) -> CommitPlan:
    writes = tuple(Statement(re.sub(old, new, w.sql), w.params) if marker in w.sql else w
                   for w in plan.writes)
    return CommitPlan(plan.name, plan.plan_id, writes, plan.outcome, plan.cleanup, plan.rules)


def _break_snapshots(mp: pytest.MonkeyPatch, marker: str, old: str, new: str) -> None:
    """Rewrite the snapshot commit's statement holding ``marker``: ``old`` becomes ``new``."""
    original = memory_sql.commit_revision

    def commit_revision(principal: Any, now: int, commit: Any) -> CommitPlan:
        plan = original(principal, now, commit)
        if commit.mode != "snapshot":
            return plan
        return _rewrite(plan, marker, old, new)
    mp.setattr(memory_sql, "commit_revision", commit_revision)


def snapshot_drops_tombstones(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """A snapshot forgets the tombstones of earlier revisions instead of carrying them: it
    closes their rows too."""
    _break_snapshots(mp, "SET until_revision", r"entry_kind = 'active' AND TRUE", "TRUE")


def snapshot_deletes_instead_of_tombstoning(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """A snapshot removes unlisted entries outright instead of keeping them as tombstones."""
    _break_snapshots(mp, "'tombstone',", r"AND e.entry_kind = 'active'",
                     "AND e.entry_kind = 'active' AND FALSE")


def fixed_revision_follows_the_head(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """Item pages of any revision show the head's entries (a mutable 'current items' table)."""
    original = memory_sql.page_statement

    def page_statement(*args: Any) -> Statement:
        statement = original(*args)
        fixed = r"from_revision <= \?(\d+) AND \(until_revision IS NULL OR until_revision > \?\1\)"
        head_only = re.sub(fixed, "until_revision IS NULL", statement.sql)
        assert head_only != statement.sql
        return Statement(head_only, statement.params)
    mp.setattr(memory_sql, "page_statement", page_statement)


def cursor_not_bound_to_grants(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """A feed cursor is bound to its consumer, view and filter, but not to the grant
    fingerprint: an old cursor read through a regranted token still answers (WP-CUR-4)."""
    original = feed.binding_fault

    def binding_fault(principal: Any, decoded: Any) -> str:
        return original(principal, replace(decoded, grant_fingerprint=principal.grant_fingerprint.hex()))
    mp.setattr(feed, "binding_fault", binding_fault)
    mp.setattr(acks, "binding_fault", binding_fault)


def delta_may_delete_what_it_upserts(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """A delta that deletes an id it also upserts is accepted: the upsert wins (P14's
    counterexample)."""
    from waypost.reference.domain import memory_requests

    original = memory_requests.parse_publish

    def parse_publish(raw: Any, collection_id: str, limits: Any) -> Any:
        if isinstance(raw, dict) and isinstance(raw.get("delete_ids"), list) \
                and isinstance(raw.get("items"), list):
            upserted = {item.get("item_id") for item in raw["items"] if isinstance(item, dict)}
            raw = {**raw, "delete_ids": [i for i in raw["delete_ids"] if i not in upserted]}
        return original(raw, collection_id, limits)
    mp.setattr(memory, "parse_publish", parse_publish)


def attachments_of_anyone(mp: pytest.MonkeyPatch, client: TestClient) -> None:
    """A send may attach any sealed blob of its space, whoever owns it and whatever the token's
    grants (P16's counterexample)."""
    from waypost.reference.storage import messages as messages_sql

    mp.setattr(messages_sql, "referenceable", lambda blob_id, owner: (
        f"EXISTS (SELECT 1 FROM blobs b WHERE b.space_id = :space_id AND b.blob_id = {blob_id})"))
    messages_sql._send_sql.cache_clear()
    mp.setattr(messages_sql, "_send_sql",
               functools.lru_cache(maxsize=64)(messages_sql._send_sql.__wrapped__))


VARIANTS: dict[str, tuple[Patch | str, set[str]]] = {
    # a retried publish is rewritten too, so it conflicts with its own key (P03)
    "CAS is skipped": (cas_skipped, {"P11", "P03"}),
    "a no-op creates a revision": (noop_creates_a_revision, {"P12"}),
    # a state without its tombstones makes the model's next no-op publish a real change on the
    # server: the unexpected revision (P12) may be the first thing the kit sees
    "a snapshot drops earlier tombstones": (snapshot_drops_tombstones, {"P12", "P13", "P14"}),
    "a snapshot deletes instead of tombstoning": (snapshot_deletes_instead_of_tombstoning,
                                                  {"P12", "P13", "P14"}),
    "a fixed revision changes after a later publish": (fixed_revision_follows_the_head,
                                                       {"P13"}),
    "idempotency keys ignore the producer": (keys_ignore_the_producer, {"P03"}),
    "a late PUT overwrites content": (late_put_overwrites, {"P15"}),
    "a blob is readable by a non-recipient": (blobs_readable_by_anyone, {"P16", "P01"}),
    "replay ignores the fingerprint": (replay_ignores_fingerprint, {"P03"}),
    # the extra messages show in views (P08) before a retry compares answers (P03)
    "retries create new messages": (no_idempotency, {"P03", "P08"}),
    "a page edge drops an item": ("drop_page_edges", {"P06"}),  # conftest fixtures
    "a page edge repeats an item": ("repeat_page_edges", {"P06"}),
    "receipts may regress": (receipts_may_regress, {"P09"}),
    # a foreign message answering 403 is a visibility fault (P08) as much as a leak (P01)
    "a foreign id answers unlike a missing one": (foreign_ids_answer_differently, {"P01", "P08"}),
    "a cursor is not bound to its consumer": (cursor_not_bound_to_consumer, {"P07", "P01"}),
    "an ACK is saved partially": (ack_saved_partially, {"P05", "P06", "P08", "P09", "P10"}),
    "a revoked token still works": (revoked_token_still_reads, {"P02"}),
    "an inbox shows items for others": (inbox_shows_other_recipients, {"P08"}),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_the_kit_catches_and_names_a_broken_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        kit_app: KitApp, kit_admin: str, name: str) -> None:
    """Each variant must be caught by a ci-profile run and named by its property; whatever
    the broken server answers, the kit reports a property violation, not an error of its
    own."""
    patch, named = VARIANTS[name]
    apply: Patch = request.getfixturevalue(patch) if isinstance(patch, str) else patch
    with kit_app(tmp_path / "data") as client:
        apply(monkeypatch, client)
        report = runner.run("broken", kit_client(client), kit_admin, profile="ci", seed=SEED,
                            replay_dir=tmp_path / "replays", shrink_seconds=0)
        monkeypatch.undo()
    failed = {o.prop.pid for o in report.outcomes if o.result == "fail"}
    assert failed & named, (f"{name}: failed {failed}, expected one of {named}: "
                            f"{[(o.prop.pid, o.message) for o in report.outcomes if o.message]}")
    assert "ERROR" not in failed
    replays = [o.replay for o in report.outcomes if o.replay]
    assert replays
    recorded = json.loads(Path(replays[0]).read_text())
    assert recorded["commands"]
    assert recorded["exchanges"]


def test_the_kit_catches_a_temporary_error_recorded_as_final(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit_app: KitApp, kit_admin: str,
        record_temporary_errors_as_final: Patch) -> None:
    """With the fault hooks on, a server that records a 503 as the key's final result fails
    P18 (the key must stay retryable). The run draws only P18's rules, so most steps are
    faults."""
    record_temporary_errors_as_final(monkeypatch, None)  # patches the module, for every app
    with kit_app(tmp_path / "data", test_hooks=True) as client:
        report = runner.run("broken", kit_client(client), kit_admin, profile="ci", seed=SEED,
                            selected=select("P18"), replay_dir=tmp_path / "replays",
                            shrink_seconds=0)
    failed = {o.prop.pid for o in report.outcomes if o.result == "fail"}
    assert "P18" in failed, [(o.prop.pid, o.message) for o in report.outcomes if o.message]
    assert "ERROR" not in failed
    replay = next(o.replay for o in report.outcomes if o.prop.pid == "P18")
    assert replay is not None
    commands = json.loads(Path(replay).read_text())["commands"]
    assert any(c["command"] == "fault_send" for c in commands)  # the replay carries the fault
    for attempt in ("again", "once more"):  # and reruns it the same way each time
        with kit_app(tmp_path / attempt, test_hooks=True) as client:
            violation = runner.replay_file(Path(replay), kit_client(client), kit_admin,
                                           out=io.StringIO())
        assert violation is not None
        assert violation.pid == "P18"
