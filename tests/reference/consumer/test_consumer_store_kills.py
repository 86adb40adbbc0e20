"""The reference consumer's local file (reference/consumer/store.py; written against the
surviving mutants of that module, docs/mutation.md): durable settings, migrations once,
all-or-nothing transactions, the profile that binds the file to one server, the checkpoint of
the current view epoch. A real SQLite file through apsw."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from waypost.reference.consumer.client import ConsumerError
from waypost.reference.consumer.store import LocalStore, Profile, now_ms

SERVER = "http://127.0.0.1:1"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    local = LocalStore(tmp_path / "c.sqlite3", create=True)
    yield local
    local.close()


def test_a_missing_file_is_not_created_unless_asked(tmp_path: Path) -> None:
    with pytest.raises(ConsumerError, match="waypost consumer init"):
        LocalStore(tmp_path / "missing.sqlite3")
    assert not (tmp_path / "missing.sqlite3").exists()
    with pytest.raises(ConsumerError, match="cannot open"):
        LocalStore(tmp_path, create=True)  # a directory is no database


def test_the_file_is_durable_and_checks_its_keys(store: LocalStore) -> None:
    pragma = store.connection.pragma
    assert (pragma("journal_mode"), pragma("foreign_keys"), pragma("synchronous")) == ("wal", 1, 2)
    assert pragma("busy_timeout") == 10_000
    assert store.connection.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, -1) == 1


def test_migrations_are_applied_once_and_recorded(tmp_path: Path) -> None:
    first = LocalStore(tmp_path / "c.sqlite3", create=True)
    try:
        recorded = first.rows("SELECT version, name FROM local_migrations")
        assert [row["version"] for row in recorded] == [1, 2]
        assert first.migrate() == []
    finally:
        first.close()
    again = LocalStore(tmp_path / "c.sqlite3")
    try:
        assert again.rows("SELECT version, name FROM local_migrations") == recorded
    finally:
        again.close()


def _fail_midway(store: LocalStore) -> None:
    with store.transaction():
        store.execute("INSERT INTO notes VALUES ('lost')")
        raise ValueError("midway")


def test_a_transaction_keeps_all_or_nothing(store: LocalStore) -> None:
    store.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(ValueError, match="midway"):
        _fail_midway(store)
    assert not store.connection.in_transaction
    with store.transaction():
        store.execute("INSERT INTO notes VALUES ('kept')")
    other = apsw.Connection(str(store.path))  # committed: another connection sees it
    try:
        assert [row[0] for row in other.execute("SELECT text FROM notes")] == ["kept"]
    finally:
        other.close()


def test_reads_give_rows_by_column_name_or_none(store: LocalStore) -> None:
    assert store.row("SELECT 1 AS one WHERE 0") is None
    assert store.value("SELECT 1 WHERE 0") is None
    assert store.rows("SELECT 1 AS one, 'x' AS two UNION ALL SELECT 2, 'y'") == [
        {"one": 1, "two": "x"}, {"one": 2, "two": "y"}]
    assert store.row("SELECT ? AS a, ? AS b", (3, 4)) == {"a": 3, "b": 4}
    assert store.value("SELECT ? + 1", (41,)) == 42
    assert store.row("SELECT 1 AS n UNION ALL SELECT 2") == {"n": 1}  # the first row
    assert store.value("SELECT 'first', 'second'") == "first"  # its first column


def test_the_profile_binds_the_file_to_one_server(store: LocalStore) -> None:
    assert store.profile() is None
    with pytest.raises(ConsumerError, match="not initialised"):
        store.require_profile()
    profile = store.init_profile(SERVER + "/", "mine")
    assert profile == Profile(SERVER, "mine", 1)
    assert store.init_profile(SERVER, "another label") == profile  # the same server: a no-op
    assert store.require_profile() == profile
    for other in ("http://127.0.0.1:0", "http://127.0.0.1:2"):  # before and after it
        with pytest.raises(ConsumerError, match=re.escape(other)):
            store.init_profile(other, "mine")
    created = store.value("SELECT created_at FROM local_profile")
    assert abs(created - time.time() * 1000) < 60_000


def test_a_profile_is_an_immutable_value(store: LocalStore) -> None:
    profile = store.init_profile(SERVER, "default")
    assert {profile, store.require_profile()} == {profile}
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.view_epoch = 2


def test_a_checkpoint_belongs_to_its_view_epoch(store: LocalStore) -> None:
    profile = store.init_profile(SERVER, "default")
    assert store.checkpoint(profile) is None
    store.execute("INSERT INTO local_feed_items (item_id, sequence, item_type, producer_id,"
                  " resource_id, committed_at, view_epoch, stored_at)"
                  " VALUES ('fi_1', 7, 'message', 'alice', 'msg_1', 'now', 1, 0)")
    store.execute("INSERT INTO local_checkpoints VALUES ('default', 1, 'c1', 7, 1, 5)")
    assert store.checkpoint(profile) == {"cursor": "c1", "last_sequence": 7, "pages": 1,
                                         "saved_at": 5}
    store.next_view_epoch()
    renewed = store.require_profile()
    assert renewed.view_epoch == 2
    assert store.checkpoint(renewed) is None


def test_now_is_in_milliseconds() -> None:
    before = time.time()
    now = now_ms()
    assert before * 1000 - 1 <= now <= time.time() * 1000
