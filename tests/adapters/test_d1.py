"""The D1 adapter on real D1: the gateway Worker on local workerd (miniflare), the reference over
it in-process. Every commit plan is one batch and nothing else; a failed guard writes nothing;
the largest revision D1 publishes commits; 64-bit numbers cross JavaScript exactly."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import pytest
from starlette.testclient import TestClient

from tests.support.api import (
    NOTES,
    PRINCIPAL,
    Api,
    content_of,
    entries,
    item,
    prepare,
    publish,
    put,
    rid,
    sealed_blob,
    with_notes,
)
from waypost.adapters.d1.driver import ColumnShapes, D1Budget, D1Driver, D1Error
from waypost.reference.domain.published_limits import D1_LIMITS
from waypost.reference.server import Settings, build_app, served_context
from waypost.reference.service.blobs import sweep
from waypost.reference.storage import memory as memory_sql
from waypost.reference.storage import submissions as submission_sql
from waypost.reference.storage.plan import Statement
from waypost.reference.storage.tokens import load_token

T = TypeVar("T")
TRANSACTION_CONTROL = ("BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")


pytestmark = pytest.mark.d1


@pytest.fixture
def d1(d1_settings: Settings) -> Iterator[Api]:
    """Spaces s1 and s2 (as in conftest) on a fresh D1 database and R2 bucket."""
    with TestClient(build_app(d1_settings), raise_server_exceptions=False) as client:
        api = Api(client)
        api.space("s1")
        api.space("s2", ("dave", "erin"))
        yield api


def driver(api: Api) -> D1Driver:
    found = served_context(api.client.app).driver
    assert isinstance(found, D1Driver)
    return found


def on_loop(api: Api, work: Coroutine[Any, Any, T]) -> T:
    """Run driver calls on the app's own event loop (its HTTP client lives there)."""
    portal = api.client.portal
    assert portal is not None

    async def run() -> T:
        return await work

    return portal.call(run)


def batch(api: Api, statements: Sequence[Statement]) -> list[list[tuple[Any, ...]]]:
    return on_loop(api, driver(api).batch(statements))


def snapshot(api: Api) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, in a fixed order."""
    (tables,) = batch(api, [Statement(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        " AND name NOT LIKE '_cf_%' ORDER BY name")])
    names = [str(name) for (name,) in tables]
    rows = batch(api, [Statement(f"SELECT * FROM {name}") for name in names])
    return {name: sorted(found, key=repr) for name, found in zip(names, rows, strict=True)}


def test_every_write_is_whole_plans_in_batches_never_a_transaction(d1: Api) -> None:
    sent: list[Sequence[Statement]] = []
    driver(d1).on_batch = sent.append
    with_notes(d1)
    message = d1.must_send("s1/alice", recipient_ids=["bob"])
    page = d1.feed("s1/bob")
    ack = d1.as_("s1/bob", "POST", "/v1/acks", {
        "request_id": rid(), "items": [{"item_id": message["feed_item_id"], "stage": "received"}],
        "checkpoint": {"cursor": page["next_cursor"]}})
    assert ack.status_code == 200, ack.text
    blob = sealed_blob(d1, "writer", b"entry")
    assert content_of(d1, "writer", blob).content == b"entry"
    assert publish(d1, 0, items=[item("a", blob)]).status_code == 201
    assert [e["item_id"] for e in entries(d1, 1)] == ["a"]

    statements = [s for one in sent for s in one]
    assert statements, "nothing reached D1"
    assert not [s.sql for s in statements if s.sql.lstrip().upper().startswith(TRANSACTION_CONTROL)]
    plans = [one for one in sent if any("INSERT INTO commit_guards" in s.sql for s in one)]
    assert len(plans) >= 8  # control plane, reserve, commit, ack, prepare, seal, stage, publish
    for one in plans:  # a plan travels whole: one guard, its writes, the verdict row dropped last
        assert sum("INSERT INTO commit_guards" in s.sql for s in one) == 1
        assert "INSERT INTO commit_guards" in one[0].sql
        assert one[-1].sql.startswith("DELETE FROM commit_guards")
    with pytest.raises(D1Error, match="transaction"):
        batch(d1, [Statement("BEGIN")])  # and D1 would refuse one anyway


def test_a_send_a_feed_read_and_an_ack_are_one_batch_once_the_token_is_known(d1: Api) -> None:
    sent: list[Sequence[Statement]] = []
    driver(d1).on_batch = sent.append
    try:
        d1.must_send("s1/alice", recipient_ids=["bob"])
        assert len(sent) == 2  # a token not seen before: its read, then the plan
        sent.clear()
        message = d1.must_send("s1/alice", recipient_ids=["bob"])
    finally:
        driver(d1).on_batch = None
    assert len(sent) == 1  # one round trip: the plan's guard checks the token itself
    plan = [s.sql for s in sent[0]]
    assert plan[0].startswith("INSERT INTO commit_guards")
    assert any(sql.startswith(("INSERT INTO messages", "INSERT INTO feed_items"))
               for sql in plan)
    read = d1.as_("s1/bob", "GET", f"/v1/messages/{message['message_id']}")
    assert read.json()["body"] == {"text": "hi", "options": [], "source_uri": None}
    sent.clear()
    driver(d1).on_batch = sent.append
    try:
        d1.feed("s1/bob")
        sent.clear()
        page = d1.feed("s1/bob")  # the checkpoint, the page, the token's and view's check
    finally:
        driver(d1).on_batch = None
    assert len(sent) == 1
    sent.clear()
    driver(d1).on_batch = sent.append
    try:
        ack = d1.as_("s1/bob", "POST", "/v1/acks", {
            "request_id": rid(), "items": [{"item_id": message["feed_item_id"],
                                            "stage": "processed"}],
            "checkpoint": {"cursor": page["next_cursor"]}})
    finally:
        driver(d1).on_batch = None
    assert ack.status_code == 200, ack.text
    assert ack.json()["items"][0] == {"item_id": message["feed_item_id"], "stage": "processed",
                                      "receipt_version": 1, "changed": True}
    assert len(sent) == 1  # the key, the rules, the receipts, the checkpoint and the answer


def test_a_publish_of_a_known_token_is_a_read_and_its_three_plans(d1: Api) -> None:
    """The collection, its head and the key in one read; reserve, stage, commit; the answer
    from the commit's outcome read (docs/d1.md "Round trips")."""
    with_notes(d1)
    blob = sealed_blob(d1, "writer", b"entry")
    assert publish(d1, 0, items=[item("a", blob)]).status_code == 201  # the token is now known
    sent: list[Sequence[Statement]] = []
    driver(d1).on_batch = sent.append
    try:
        answer = publish(d1, 1, items=[item("b", blob)])
    finally:
        driver(d1).on_batch = None
    assert answer.status_code == 201, answer.text
    assert answer.json() == {"revision": 2, "parent_revision": 1, "changed": True}
    plans = [one[0].sql.startswith("INSERT INTO commit_guards") for one in sent]
    assert plans == [False, True, True, True]
    assert [e["item_id"] for e in entries(d1, 2)] == ["a", "b"]


def test_a_failed_guard_writes_nothing(d1: Api) -> None:
    token_id = d1.tokens["s1/alice"].split(".")[0]
    state = on_loop(d1, load_token(driver(d1), token_id))
    assert state is not None
    revoked = d1.admin("POST", f"/admin/v1/tokens/{token_id}/revoke",
                       {"request_id": rid()})
    assert revoked.status_code == 200, revoked.text
    before = snapshot(d1)
    reservation = on_loop(d1, submission_sql.reserve(
        driver(d1), state.principal, 0, "message.send", "late", b"\0" * 32, "sub_late", "msg_late",
        thread_id="thr_late", feed_item_id="fi_late", object_ref="obj_late"))
    assert reservation.verdict == "UNAUTHENTICATED"
    assert snapshot(d1) == before  # no submission, no recipients, no verdict row left behind
    # A batch is all or nothing on D1: a failing statement takes the earlier ones with it.
    with pytest.raises(D1Error):
        batch(d1, [Statement("INSERT INTO commit_guards (plan_id, verdict) VALUES ('p', 'ok')"),
                   Statement("INSERT INTO commit_guards (plan_id, verdict) VALUES ('p', 'ok')")])
    assert snapshot(d1) == before


def test_the_largest_revision_d1_publishes_commits_within_its_limits(d1: Api) -> None:
    described = d1.client.get("/v1/describe").json()
    assert described["capabilities"]["adapter"] == "d1"
    assert described["limits"] == D1_LIMITS.published()
    with_notes(d1)
    blob = sealed_blob(d1, "writer", b"entry")
    most = D1_LIMITS.memory_entries_per_revision
    small = [item(f"i{n:05d}", blob) for n in range(most + 1)]
    too_many = sealed_blob(d1, "writer", json.dumps({"items": small}).encode())
    before = snapshot(d1)
    refused = publish(d1, 0, mode="snapshot", manifest_blob_id=too_many)
    assert refused.status_code == 413, refused.text
    assert refused.json()["error"]["details"]["limit"] == "memory_entries_per_revision"
    assert snapshot(d1) == before  # refused before any side effect
    # The largest input: entries as large as fit manifest_input_bytes, long paths and metadata
    # full of characters JSON escapes.
    repeats = 300
    while True:
        metadata = {"note": "\"quoted\" \u00e9" * repeats}
        items = [item(f"i{n:05d}", blob, path=f"{'d' * 900}/{n:05d}.md", metadata=metadata)
                 for n in range(most)]
        document = json.dumps({"items": items}).encode()
        if len(document) <= D1_LIMITS.manifest_input_bytes:
            break
        repeats -= 10
    manifest = sealed_blob(d1, "writer", document)
    sent: list[Sequence[Statement]] = []
    driver(d1).on_batch = sent.append
    answer = publish(d1, 0, mode="snapshot", manifest_blob_id=manifest)
    assert answer.status_code == 201, answer.text
    assert max(len(one) for one in sent) <= driver(d1).budget.queries_per_batch
    assert len(entries(d1, 1, limit=100)) == most


def test_numbers_beyond_javascript_integers_survive_exactly(d1: Api) -> None:
    first = d1.must_send("s1/alice", recipient_ids=["bob"])
    base = 2**53 + 5
    batch(d1, [Statement("UPDATE sqlite_sequence SET seq = CAST(?1 AS INTEGER)"
                         " WHERE name = 'feed_items'", (base,))])
    sent = [d1.must_send("s1/alice", recipient_ids=["bob"]) for _ in range(2)]
    assert [m["sequence"] for m in sent] == [str(base + 1), str(base + 2)]
    items = d1.all_items("s1/bob", limit=1)  # page by page: cursors carry the positions
    assert [i["sequence"] for i in items] == [first["sequence"], str(base + 1), str(base + 2)]
    upto = d1.feed("s1/bob", limit=2)  # its cursor stands after base + 1
    ack = d1.as_("s1/bob", "POST", "/v1/acks", {
        "request_id": "ack-big", "items": [{"item_id": sent[0]["feed_item_id"],
                                            "stage": "received"}],
        "checkpoint": {"cursor": upto["next_cursor"]}})
    assert ack.status_code == 200, ack.text
    assert ack.json()["checkpoint_sequence"] == str(base + 1)
    after = d1.feed("s1/bob")["items"]  # starts at the checkpoint
    assert [i["sequence"] for i in after if i["type"] == "message"] == [str(base + 2)]
    looked_up = d1.as_("s1/bob", "GET", "/v1/submissions/receipt.ack/ack-big")
    assert looked_up.json()["result"]["body"]["checkpoint_sequence"] == str(base + 1), looked_up.text

    with_notes(d1)
    blob = sealed_blob(d1, "writer", b"entry")
    assert publish(d1, 0, items=[item("a", blob)]).status_code == 201
    top = 2**53 - 1
    _move_revision_one_to(d1, top - 1)
    answer = publish(d1, top - 1, items=[item("b", blob)])
    assert answer.status_code == 201, answer.text
    assert answer.json()["revision"] == top
    collection = d1.as_("reader", "GET", NOTES)
    assert collection.json()["current_revision"] == top, collection.text
    revision = d1.as_("reader", "GET", f"{NOTES}/revisions/{top}").json()
    assert (revision["revision"], revision["parent_revision"]) == (top, top - 1)
    assert [e["item_id"] for e in entries(d1, top)] == ["a", "b"]
    beyond = publish(d1, top, items=[item("c", blob)])
    assert (beyond.status_code, beyond.json()["error"]["code"]) == (413, "RESOURCE_LIMIT")
    assert d1.as_("reader", "GET", NOTES).json()["current_revision"] == top


def _move_revision_one_to(api: Api, revision: int) -> None:
    """Test surgery, not an operation: renumber the notes collection's revision 1 (and its
    entries and head) as ``revision``, with the guarding triggers set aside for one batch."""
    names = ("collections_head_forward_only", "memory_revisions_immutable",
             "memory_entries_close_only")
    (triggers,) = batch(api, [Statement(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name IN (?1, ?2, ?3)", names)])
    where = "WHERE space_id = 's1' AND collection_id = 'notes'"
    batch(api, [
        Statement("PRAGMA defer_foreign_keys = on"),
        *(Statement(f"DROP TRIGGER {name}") for name in names),
        Statement(f"UPDATE memory_entries SET from_revision = ?1 {where}", (revision,)),
        Statement(f"UPDATE memory_revisions SET revision = ?1, parent_revision = ?1 - 1 {where}",
                  (revision,)),
        Statement(f"UPDATE collections SET current_revision = ?1 {where}", (revision,)),
        *(Statement(str(sql)) for (sql,) in triggers),
    ])


def test_one_key_sent_twice_at_once_commits_once(d1: Api) -> None:
    """Requests interleave on D1 (each batch is an await): one key sent twice at once still
    commits once and both answers agree."""
    body = {"request_id": "twice", "thread": {"new": True}, "kind": "info", "subject": "s",
            "body": {"text": "t"}, "recipient_ids": ["bob"]}

    async def both() -> list[Any]:
        import httpx

        transport = httpx.ASGITransport(app=d1.client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://d1") as client:
            headers = {"Authorization": f"Bearer {d1.tokens['s1/alice']}"}
            return list(await asyncio.gather(*(
                client.post("/v1/messages", json=body, headers=headers) for _ in range(2))))

    answers = on_loop(d1, both())
    assert sorted(a.status_code for a in answers) == [201, 201]
    assert len({a.json()["message_id"] for a in answers}) == 1
    inbox = [i for i in d1.all_items("s1/bob") if i["type"] == "message"]
    assert len(inbox) == 1


def test_the_cli_serves_and_cleans_on_d1(d1_settings: Settings) -> None:
    env = {**os.environ, "WAYPOST_GATEWAY_SECRET": str(d1_settings.gateway_secret)}
    gateway = ["--storage", "d1", "--gateway", str(d1_settings.gateway_url)]
    cleaned = subprocess.run([sys.executable, "-m", "waypost.cli", "gc", "--data-dir",
                              str(d1_settings.data_dir), *gateway],
                             capture_output=True, text=True, env=env, timeout=120)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "cleaned 0 expired upload(s)" in cleaned.stdout
    no_secret = {k: v for k, v in env.items() if k != "WAYPOST_GATEWAY_SECRET"}
    for command in ("gc", "serve"):
        refused = subprocess.run([sys.executable, "-m", "waypost.cli", command, *gateway],
                                 capture_output=True, text=True, env=no_secret, timeout=60)
        assert refused.returncode == 2
        assert "WAYPOST_GATEWAY_SECRET" in refused.stderr


def test_serve_and_gc_say_in_one_line_why_the_gateway_cannot_be_used(
        d1_settings: Settings) -> None:
    """A gateway that refuses the secret, or one that is not listening: one line on stderr,
    exit 1, no traceback."""
    live = ["--storage", "d1", "--gateway", str(d1_settings.gateway_url)]
    dead = ["--storage", "d1", "--gateway", "http://127.0.0.1:9"]
    for flags, secret, says in ((live, "not-the-secret", "401"), (dead, "x", "unreachable")):
        env = {**os.environ, "WAYPOST_GATEWAY_SECRET": secret, "WAYPOST_ADMIN_TOKEN": "a"}
        for command in ("gc", "serve"):
            failed = subprocess.run([sys.executable, "-m", "waypost.cli", command, *flags,
                                     "--data-dir", str(d1_settings.data_dir)],
                                    capture_output=True, text=True, env=env, timeout=60)
            assert failed.returncode == 1, failed.stderr
            assert "Traceback" not in failed.stderr
            (line,) = [x for x in failed.stderr.splitlines() if x.startswith(f"waypost {command}:")]
            assert says in line


def test_the_worst_staging_of_the_published_maximum_fits_one_batch() -> None:
    """Every entry as large as its JSON can be once escaped: a 1 KiB path of control
    characters (\\u00XX each), metadata of 4 KiB of quotes, 96-character ids. The prepare batch
    of the published maximum must still pass the driver's D1 checks."""
    metadata = json.dumps({"a": '"' * 2044}, separators=(",", ":"))  # quotes: 2 bytes each
    assert len(metadata.encode()) == 4096
    worst = [memory_sql.StagedInput(f"{n:096d}", "\x01" * 1024, "b" * 96, metadata)
             for n in range(D1_LIMITS.memory_entries_per_revision)]
    plan = memory_sql.stage(PRINCIPAL, 0, "sub", worst, b"\0" * 32, 1)
    budget = D1Budget()
    assert len(plan.statements) <= budget.queries_per_batch
    D1Driver.check(cast(D1Driver, SimpleNamespace(budget=budget, shapes=ColumnShapes())),
                   plan.statements)


def test_expired_uploads_are_swept_on_d1(d1_settings: Settings) -> None:
    settings = replace(d1_settings, test_hooks=True)
    with TestClient(build_app(settings), raise_server_exceptions=False) as client:
        api = Api(client)
        api.space("s1")
        kept = sealed_blob(api, "s1/alice", b"kept")
        slots = [prepare(api, "s1/alice", b"left %d" % n) for n in range(2)]
        assert put(api, "s1/alice", slots[0]["upload_id"], b"left 0").status_code == 200
        api.admin("POST", "/_test/clock", {"advance_ms": 3600 * 1000 + 1})
        ctx = served_context(client.app)
        assert client.portal is not None
        cleaned = client.portal.call(sweep, ctx)
        assert sorted(cleaned) == sorted(s["upload_id"] for s in slots)
        assert client.portal.call(sweep, ctx) == []
        assert content_of(api, "s1/alice", kept).content == b"kept"
        late = api.as_("s1/alice", "POST", f"/v1/uploads/{slots[0]['upload_id']}/commit",
                       {"request_id": rid()})
        assert late.json()["error"]["code"] == "UPLOAD_EXPIRED"
