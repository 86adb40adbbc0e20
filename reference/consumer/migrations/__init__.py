"""Numbered migrations of the reference consumer's local database; never edited once released."""

from __future__ import annotations

from waypost.reference.migration_files import Migration, numbered

#: The ledger of applied migrations, created before anything else.
LEDGER = ("CREATE TABLE IF NOT EXISTS local_migrations ("
          " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")

#: The ledger row a migration writes with itself (``?1`` version, ``?2`` name).
RECORD = ("INSERT INTO local_migrations (version, name, applied_at)"
          " VALUES (?1, ?2, CAST(unixepoch('subsec') * 1000 AS INTEGER))")


def all_migrations() -> list[Migration]:
    """Every migration shipped with the package, in order."""
    return numbered(__name__)
