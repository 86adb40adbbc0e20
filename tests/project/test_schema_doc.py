"""docs/schema.md is generated from the live schema; it must never be stale."""

from __future__ import annotations

from tools.schema_doc import CONSUMER_OUT, OUT, build, build_consumer
from waypost.reference.consumer.migrations import all_migrations as consumer_migrations
from waypost.reference.storage.migrations import all_migrations


def test_schema_doc_is_current() -> None:
    assert OUT.read_text() == build(), "stale docs/schema.md: run python tools/schema_doc.py"


def test_every_table_and_trigger_is_documented() -> None:
    """Every table and trigger a migration creates, except a copy it drops again itself."""
    text = OUT.read_text()
    for migration in all_migrations():
        for word, name in (line.split()[1:3] for line in migration.sql.splitlines()
                           if line.startswith("CREATE ") and len(line.split()) > 2):
            if word in ("TABLE", "TRIGGER") and f"DROP TABLE {name};" not in migration.sql:
                assert f"{name}" in text, name


def test_consumer_schema_doc_is_current() -> None:
    assert CONSUMER_OUT.read_text() == build_consumer(), \
        "stale docs/consumer-schema.md: run python tools/schema_doc.py"
    text = CONSUMER_OUT.read_text()
    for migration in consumer_migrations():
        for line in migration.sql.splitlines():
            if line.startswith(("CREATE TABLE", "CREATE TRIGGER")):
                assert line.split()[2] in text, line
