"""docs/schema.md is generated from the live schema; it must never be stale."""

from __future__ import annotations

from tools.schema_doc import CONSUMER_OUT, OUT, build, build_consumer
from waypost.reference.consumer.migrations import all_migrations as consumer_migrations
from waypost.reference.storage.migrations import all_migrations


def test_schema_doc_is_current() -> None:
    assert OUT.read_text() == build(), "stale docs/schema.md: run python tools/schema_doc.py"


def test_every_table_and_trigger_is_documented() -> None:
    """Every table and trigger a migration creates, except a table a migration drops again
    (with its triggers: SQLite drops them with it, e.g. 0003's memory_revision_items)."""
    text = OUT.read_text()
    every = "\n".join(migration.sql for migration in all_migrations())
    dropped = {line.split()[2].rstrip(";") for line in every.splitlines()
               if line.startswith("DROP TABLE ")}
    for migration in all_migrations():
        for line in migration.sql.splitlines():
            words = line.split()
            if not line.startswith("CREATE ") or len(words) < 3 or words[1] not in (
                    "TABLE", "TRIGGER"):
                continue
            table = words[2] if words[1] == "TABLE" else words[-1]
            if table not in dropped:
                assert words[2] in text, words[2]


def test_consumer_schema_doc_is_current() -> None:
    assert CONSUMER_OUT.read_text() == build_consumer(), \
        "stale docs/consumer-schema.md: run python tools/schema_doc.py"
    text = CONSUMER_OUT.read_text()
    for migration in consumer_migrations():
        for line in migration.sql.splitlines():
            if line.startswith(("CREATE TABLE", "CREATE TRIGGER")):
                assert line.split()[2] in text, line
