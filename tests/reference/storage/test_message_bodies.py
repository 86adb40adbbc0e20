"""A send is one commit plan that keeps the body in the message's row; the migrations of an empty
database build exactly the schema."""

from __future__ import annotations

from pathlib import Path

import apsw
from starlette.testclient import TestClient

from tests.support.api import ADMIN_TOKEN, Api
from waypost.reference.server import DATABASE, Settings, build_app, served_context
from waypost.reference.storage.migrations import all_migrations


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    connection = apsw.Connection(str(path))
    try:
        return list(connection.execute(sql))
    finally:
        connection.close()


SCHEMA = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'" \
         " AND name <> 'schema_migrations' ORDER BY type, name"


def test_migrating_an_empty_database_gives_exactly_the_schema(tmp_path: Path) -> None:
    """The server's migrations on an empty data directory build what the schema file says, and
    the ledger names each migration once; a send keeps its body in the message's row."""
    data_dir = tmp_path / "data"
    with TestClient(build_app(Settings(data_dir, ADMIN_TOKEN, sweep_seconds=0))) as client:
        api = Api(client)
        api.space("s1", ("alice", "bob"))
        sent = api.must_send("s1/alice", recipient_ids=["bob"])
    direct = tmp_path / "direct.sqlite3"
    connection = apsw.Connection(str(direct))
    for migration in all_migrations():
        connection.execute(migration.sql)
    connection.close()
    migrated = data_dir / DATABASE
    assert _rows(migrated, SCHEMA) == _rows(direct, SCHEMA)
    assert [row[:2] for row in _rows(migrated, "SELECT version, name FROM schema_migrations")] \
        == [(m.version, m.name) for m in all_migrations()]
    assert _rows(migrated, "SELECT message_id, length(body) > 0 FROM messages") == [
        (sent["message_id"], 1)]
    assert _rows(migrated, "PRAGMA foreign_key_check") == []
    triggers = {row[0] for row in _rows(
        migrated, "SELECT name FROM sqlite_master WHERE type = 'trigger'"
                  " AND tbl_name IN ('messages', 'message_recipients')")}
    assert triggers == {"messages_permanent", "messages_immutable",
                        "message_recipients_immutable", "message_recipients_permanent"}
    assert not (data_dir / "objects").exists() or not [
        p for p in (data_dir / "objects").rglob("*") if p.is_file()]  # a send writes no object


def test_a_send_is_one_plan(api: Api) -> None:
    """One send, one commit plan on the writer (no reservation or prepare step of its own)."""
    driver = served_context(api.client.app).driver
    before = driver.stats.plans
    sent = api.must_send("s1/alice", recipient_ids=["bob"])
    assert driver.stats.plans - before == 1
    message = api.as_("s1/bob", "GET", f"/v1/messages/{sent['message_id']}").json()
    assert message["body"] == {"text": "hi", "options": [], "source_uri": None}
