"""docs/schema.md is generated from the live schema; it must never be stale."""

from __future__ import annotations

from tools.schema_doc import OUT, build
from waypost.reference.storage.migrations import all_migrations


def test_schema_doc_is_current() -> None:
    assert OUT.read_text() == build(), "stale docs/schema.md: run python tools/schema_doc.py"


def test_every_table_and_trigger_is_documented() -> None:
    text = OUT.read_text()
    for migration in all_migrations():
        for word, name in (line.split()[1:3] for line in migration.sql.splitlines()
                           if line.startswith("CREATE ") and len(line.split()) > 2):
            if word in ("TABLE", "TRIGGER"):
                assert f"{name}" in text, name
