"""Numbered migrations of the reference consumer's local database; never edited once released."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

#: The ledger of applied migrations, created before anything else.
LEDGER = ("CREATE TABLE IF NOT EXISTS local_migrations ("
          " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)")

#: The ledger row a migration writes with itself (``?1`` version, ``?2`` name).
RECORD = ("INSERT INTO local_migrations (version, name, applied_at)"
          " VALUES (?1, ?2, CAST(unixepoch('subsec') * 1000 AS INTEGER))")


@dataclass(frozen=True)
class Migration:
    """One numbered migration: ``0001_local.sql`` → version 1, name ``local``."""

    version: int
    name: str
    sql: str


def all_migrations() -> list[Migration]:
    """Every migration shipped with the package, in order."""
    found = []
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text()))
    return sorted(found, key=lambda migration: migration.version)
