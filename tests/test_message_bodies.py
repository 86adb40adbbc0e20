"""A send is one commit plan that keeps the body in the message's row (migration 0004); a body
stored as an object before that migration still reads, and the migration keeps every message."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import apsw
from starlette.testclient import TestClient

from tests.conftest import ADMIN_TOKEN, Api
from waypost.adapters.blobs.files import FileBlobStore
from waypost.reference.domain.canonical import canonical_json, digest
from waypost.reference.domain.published_limits import Limits
from waypost.reference.domain.requests import parse_send
from waypost.reference.server import DATABASE, Settings, build_app
from waypost.reference.storage.blob_store import one_chunk
from waypost.reference.storage.migrations import LEDGER, RECORD, all_migrations

LEGACY_BODY = {"text": "written before 0004", "options": [], "source_uri": None}
#: The request the legacy message answered (its key's fingerprint is this request's).
LEGACY_SEND = {"request_id": "old-send", "thread": {"new": True}, "recipient_ids": ["bob"],
               "kind": "info", "subject": "old", "body": {"text": "written before 0004"}}

_LEGACY_ROWS = """
INSERT INTO spaces VALUES ('s1', 'Old space', 'waypost://old/s1', 'alice', 1);
INSERT INTO actors (space_id, actor_id, kind, display_name, created_at)
    VALUES ('s1', 'alice', 'agent', 'Alice', 1), ('s1', 'bob', 'agent', 'Bob', 1);
INSERT INTO threads VALUES ('s1', 'thr_old', 2);
INSERT INTO thread_members VALUES ('s1', 'thr_old', 'alice', 2), ('s1', 'thr_old', 'bob', 2);
INSERT INTO submissions (submission_id, space_id, producer_id, operation, request_id,
    fingerprint, state, reserved_at, resource_id, thread_id, feed_item_id, object_ref,
    object_sha256, object_size, prepared_at, result_status, committed_at)
    VALUES ('sub_old', 's1', 'alice', 'message.send', 'old-send', :fingerprint, 'committed', 2,
        'msg_old', 'thr_old', 'fi_old', 'obj_old', :sha, :size, 2, 201, 2);
INSERT INTO messages VALUES ('s1', 'msg_old', 'sub_old', 'alice', 'thr_old', NULL, 'info',
    'old', 'obj_old', :sha, :size, NULL, 2);
INSERT INTO message_recipients VALUES ('s1', 'msg_old', 'bob');
INSERT INTO feed_items (item_id, space_id, item_type, producer_id, thread_id, resource_id,
    committed_at) VALUES ('fi_old', 's1', 'message', 'alice', 'thr_old', 'msg_old', 2);
INSERT INTO feed_recipients VALUES ('s1', 'fi_old', 'bob', 1);
"""


def _database_before_0004(data_dir: Path) -> None:
    """A data directory as the reference left it before migration 0004: one message whose
    body is an object of the file store."""
    data_dir.mkdir(parents=True)
    body = canonical_json(LEGACY_BODY)
    connection = apsw.Connection(str(data_dir / DATABASE))
    connection.pragma("foreign_keys", True)
    connection.execute(LEDGER)
    for migration in all_migrations()[:3]:
        with connection:
            connection.execute(migration.sql)
            connection.execute(RECORD, (migration.version, migration.name))
    with connection:
        connection.execute(_LEGACY_ROWS, {
            "sha": hashlib.sha256(body).digest(), "size": len(body),
            "fingerprint": digest(parse_send(LEGACY_SEND, Limits()).normalised)})
    connection.close()
    asyncio.run(FileBlobStore(data_dir / "objects").create_only("obj_old", one_chunk(body)))


def _rows(data_dir: Path, sql: str) -> list[tuple[object, ...]]:
    connection = apsw.Connection(str(data_dir / DATABASE))
    try:
        return list(connection.execute(sql))
    finally:
        connection.close()


def test_a_body_stored_as_an_object_before_0004_still_reads(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _database_before_0004(data_dir)
    objects_before = sorted(p.name for p in (data_dir / "objects").rglob("*") if p.is_file())
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN, sweep_seconds=0))) as client:
        api = Api(client)
        for actor in ("alice", "bob"):
            api.consumer("s1", actor, f"{actor}-inbox", "inbox")
            api.token("s1", actor, f"{actor}-inbox", name=f"s1/{actor}")
        old = api.as_("s1/bob", "GET", "/v1/messages/msg_old")
        assert old.status_code == 200, old.text
        assert old.json()["body"] == LEGACY_BODY
        assert [i["message"]["message_id"] for i in api.all_items("s1/bob")] == ["msg_old"]
        replay = api.as_("s1/alice", "POST", "/v1/messages", LEGACY_SEND)  # the old key holds
        assert replay.headers.get("Waypost-Replayed") == "true"
        assert replay.json()["message_id"] == "msg_old"
        reply = api.must_send("s1/bob", thread={"thread_id": "thr_old"}, in_reply_to="msg_old",
                              recipient_ids=["alice"], request_id="new-send")
        new = api.as_("s1/alice", "GET", f"/v1/messages/{reply['message_id']}")
        assert new.json()["body"] == {"text": "hi", "options": [], "source_uri": None}
    stored = dict((row[0], row[1:]) for row in _rows(
        data_dir, "SELECT message_id, body_ref, body IS NOT NULL FROM messages"))
    assert stored == {"msg_old": ("obj_old", 0), reply["message_id"]: (None, 1)}
    objects_after = sorted(p.name for p in (data_dir / "objects").rglob("*") if p.is_file())
    assert objects_after == objects_before == ["obj_old"]  # a send writes no object any more
    assert _rows(data_dir, "PRAGMA foreign_key_check") == []
    triggers = {row[0] for row in _rows(
        data_dir, "SELECT name FROM sqlite_master WHERE type = 'trigger'"
                  " AND tbl_name IN ('messages', 'message_recipients')")}
    assert triggers == {"messages_permanent", "messages_immutable",
                        "message_recipients_immutable", "message_recipients_permanent"}


def test_a_send_is_one_plan(api: Api) -> None:
    """One send, one commit plan on the writer (no reservation or prepare step of its own)."""
    driver = api.client.app.state.context.driver  # type: ignore[attr-defined]
    before = driver.stats.plans
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    assert driver.stats.plans - before == 1
    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["body"] == {"text": "hi", "options": [], "source_uri": None}
