"""Migration 0003 turns 0002's copy of every entry per revision into rows valid over revision
ranges: every revision of an upgraded database reads exactly as it did, tombstones included."""

from __future__ import annotations

from typing import Any

import apsw

from waypost.reference.storage import memory
from waypost.reference.storage.migrations import LEDGER, RECORD, all_migrations

#: A history as 0002 stored it: every revision's complete entry set, (kind, path, metadata).
HISTORY: list[dict[str, tuple[str, str | None, str | None]]] = [
    {"a": ("active", "a.md", "{}"), "b": ("active", 'b"\u00e9.md', '{"k":1}')},
    {"a": ("active", "a.md", "{}"), "b": ("tombstone", None, None),
     "c": ("active", "c.md", "{}")},
    {"a": ("active", "moved.md", "{}"), "b": ("tombstone", None, None),
     "c": ("active", "c.md", "{}")},
    {"a": ("active", "moved.md", "{}"), "b": ("active", "b.md", "{}"),
     "c": ("tombstone", None, None)},
    {"a": ("active", "moved.md", "{}"), "b": ("active", "b.md", "{}"),
     "c": ("tombstone", None, None)},
]


def _migrate(connection: apsw.Connection, versions: range) -> None:
    for migration in all_migrations():
        if migration.version in versions:
            with connection:
                connection.execute(migration.sql)
                connection.execute(RECORD, (migration.version, migration.name))


def _deleted_in(item_id: str, revision: int) -> int:
    """When the tombstone ``item_id`` holds at ``revision`` was made (0002 kept it)."""
    while revision > 1 and HISTORY[revision - 2].get(item_id, ("",))[0] == "tombstone":
        revision -= 1
    return revision


def _old_database() -> apsw.Connection:
    connection = apsw.Connection(":memory:")
    connection.execute(LEDGER)
    _migrate(connection, range(1, 3))
    connection.execute("PRAGMA foreign_keys = OFF")  # the history's other rows are not needed
    connection.execute("INSERT INTO collections VALUES ('s1', 'notes', 'alice', 'x', 0, 0)")
    for revision, state in enumerate(HISTORY, start=1):
        connection.execute(
            "INSERT INTO memory_revisions VALUES ('s1', 'notes', ?1, ?1 - 1, 'sub' || ?1,"
            " 'blb' || ?1, zeroblob(32), 'fi' || ?1, 0)", (revision,))
        for item_id, (kind, path, metadata) in state.items():
            deleted = _deleted_in(item_id, revision) if kind == "tombstone" else None
            connection.execute(
                "INSERT INTO memory_revision_items VALUES ('s1', 'notes', ?, ?, ?, ?, ?, ?, ?)",
                (revision, item_id, kind, None if path is None else "blb_x", path, metadata,
                 deleted))
        connection.execute("UPDATE collections SET current_revision = ?", (revision,))
    return connection


def _read(connection: apsw.Connection, revision: int) -> list[tuple[Any, ...]]:
    statement = memory.entries_statement("s1", "notes", revision)
    return [tuple(row) for row in connection.execute(statement.sql, statement.params)]


def test_every_revision_reads_as_it_did_before_the_migration() -> None:
    connection = _old_database()
    before = {r: [tuple(row) for row in connection.execute(
        "SELECT item_id, entry_kind, path, blob_id, metadata_json, deleted_in_revision"
        " FROM memory_revision_items WHERE revision = ? ORDER BY item_id", (r,))]
        for r in range(1, len(HISTORY) + 1)}
    _migrate(connection, range(3, 4))
    assert {r: _read(connection, r) for r in before} == before
    # one row per run of revisions an entry stayed the same, the last runs open
    ranges = [tuple(row) for row in connection.execute(
        "SELECT item_id, from_revision, until_revision FROM memory_entries"
        " ORDER BY item_id, from_revision")]
    assert ranges == [("a", 1, 3), ("a", 3, None), ("b", 1, 2), ("b", 2, 4), ("b", 4, None),
                      ("c", 2, 4), ("c", 4, None)]
