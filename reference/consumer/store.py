"""The consumer's local SQLite file (apsw): one connection, WAL, foreign keys on,
``synchronous=FULL``; every write in ``BEGIN IMMEDIATE … COMMIT``; rows decoded by name."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from waypost.reference.consumer.client import ConsumerError
from waypost.reference.consumer.faults import POWER_CUTS_ENVIRONMENT
from waypost.reference.consumer.migrations import LEDGER, RECORD, all_migrations

Row = dict[str, Any]


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Profile:
    """What ``init`` fixed: the server this file belongs to, and the consumer's label."""

    server_url: str
    label: str
    view_epoch: int


def _as_dict(cursor: apsw.Cursor, row: tuple[Any, ...]) -> Row:
    return dict(zip((column[0] for column in cursor.get_description()), row, strict=True))


def _vfs() -> str | None:
    """The power-cut simulator's VFS when a fault test asks for it, else None (the default)."""
    if not os.environ.get(POWER_CUTS_ENVIRONMENT):
        return None
    from waypost import power_cut

    return power_cut.install()


class LocalStore:
    """The local database of one consumer."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        if not create and not path.exists():
            raise ConsumerError(f"no consumer database at {path}: run 'waypost consumer init "
                                "--db FILE --url URL' first")
        self.path = path
        try:
            vfs = _vfs()
            self.connection = apsw.Connection(str(path), vfs=vfs) if vfs \
                else apsw.Connection(str(path))
        except apsw.Error as error:
            raise ConsumerError(f"cannot open {path}: {error}") from None
        self.connection.set_busy_timeout(10_000)
        # statements keep their first plan (see the server's SQLite driver: STAT4 re-planning)
        self.connection.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
        self.connection.pragma("journal_mode", "wal")
        self.connection.pragma("foreign_keys", True)
        self.connection.pragma("synchronous", "FULL")
        self.migrate()

    def close(self) -> None:
        self.connection.close()

    def migrate(self) -> list[int]:
        """Apply the migrations not yet applied, each in one transaction with its record."""
        self.connection.execute(LEDGER)
        done = {row[0] for row in self.connection.execute("SELECT version FROM local_migrations")}
        applied = []
        for migration in all_migrations():
            if migration.version not in done:
                with self.connection:
                    self.connection.execute(migration.sql)
                    self.connection.execute(RECORD, (migration.version, migration.name))
                applied.append(migration.version)
        return applied

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any error rolls everything back."""
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.connection.in_transaction:
                self.connection.execute("ROLLBACK")
            raise
        self.connection.execute("COMMIT")

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> None:
        self.connection.execute(sql, params)

    def rows(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[Row]:
        """The rows of a query as dicts keyed by column name."""
        cursor = self.connection.cursor()
        cursor.row_trace = _as_dict
        return list(cursor.execute(sql, params))

    def row(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Row | None:
        found = self.rows(sql, params)
        return found[0] if found else None

    def value(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        for row in self.connection.execute(sql, params):
            return row[0]
        return None

    # The profile: one row, written by init.

    def init_profile(self, server_url: str, label: str) -> Profile:
        """Fix the server (and label) of this file; the same again is a no-op, another server
        is refused."""
        found = self.profile()
        if found is not None:
            if found.server_url != server_url.rstrip("/"):
                stored = self.value("SELECT (SELECT count(*) FROM local_feed_items)"
                                    " + (SELECT count(*) FROM local_outbound)")
                how = ("nothing is stored in it yet: delete it and run init again"
                       if not stored else "use that URL, or give another --db file")
                raise ConsumerError(f"{self.path} belongs to {found.server_url}, not "
                                    f"{server_url}: {how}")
            return found
        self.execute("INSERT INTO local_profile (profile_id, server_url, label, view_epoch,"
                     " created_at) VALUES (1, ?, ?, 1, ?)",
                     (server_url.rstrip("/"), label, now_ms()))
        profile = self.profile()
        assert profile is not None
        return profile

    def profile(self) -> Profile | None:
        row = self.row("SELECT server_url, label, view_epoch FROM local_profile")
        return Profile(row["server_url"], row["label"], row["view_epoch"]) if row else None

    def require_profile(self) -> Profile:
        found = self.profile()
        if found is None:
            raise ConsumerError(f"{self.path} is not initialised: run 'waypost consumer init'")
        return found

    def checkpoint(self, profile: Profile) -> Row | None:
        """The local checkpoint of the current view epoch (None before the first page)."""
        return self.row("SELECT cursor, last_sequence, pages, saved_at FROM local_checkpoints"
                        " WHERE consumer_key = ? AND view_epoch = ?",
                        (profile.label, profile.view_epoch))

    def next_view_epoch(self) -> None:
        """The server said the view or the grants changed (CURSOR_STALE): start a new epoch,
        read from the server's checkpoint of the new view (which starts at 0)."""
        with self.transaction():
            self.execute("UPDATE local_profile SET view_epoch = view_epoch + 1")
