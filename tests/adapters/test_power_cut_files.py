"""The power-cut shim for the blob store and the data directory (adapters/power_cut_files.py),
on real files: what was synced survives :func:`revert`, what was not is undone: a file's bytes
not fsync'd, a new entry or an unlink whose directory was not fsync'd, a directory whose own
entry was not (with all it holds). The whole server under it: tests/adapters/test_power_cut.py."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

from waypost.adapters.blobs.files import FileBlobStore
from waypost.adapters.durable import make_dirs
from waypost.adapters.power_cut_files import Journal, Shim, journal_dir, revert

REF = "obj_" + "a" * 24 + "zz"
OTHER = "obj_" + "b" * 24 + "yy"  # in another shard
CONTENT = b"sealed bytes " * 100


def _journal(data_dir: Path) -> Journal:
    return Journal(journal_dir(data_dir))


def _put(store: FileBlobStore, content: bytes = CONTENT, ref: str = REF) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield content

    asyncio.run(store.create_only(ref, chunks()))


def _cut(data_dir: Path) -> None:
    """The power goes (the journal is what a killed process left) and comes back."""
    revert(journal_dir(data_dir))


def test_a_stored_object_survives_and_its_leftovers_are_only_names(tmp_path: Path) -> None:
    data = tmp_path / "data"
    calls = _journal(data).calls()
    make_dirs(data, calls=calls)
    store = FileBlobStore(data / "objects", calls=calls)
    _put(store)
    _cut(data)
    assert store.path(REF).read_bytes() == CONTENT
    # the temp file's unlink was never synced: its name comes back, with its synced bytes
    leftovers = [p for p in store.path(REF).parent.iterdir() if p.name.startswith(".tmp-")]
    assert [p.read_bytes() for p in leftovers] == [CONTENT]


def test_bytes_never_fsynced_are_gone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_dirs(data)
    store = FileBlobStore(data / "objects", calls=_journal(data).calls(frozenset({"files"})))
    _put(store)
    _cut(data)
    assert store.path(REF).read_bytes() == b""  # its name was synced, its bytes were not


def test_entries_whose_directory_was_not_fsynced_are_gone(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_dirs(data / "objects")
    store = FileBlobStore(data / "objects", calls=_journal(data).calls(frozenset({"dirs"})))
    _put(store)
    _cut(data)
    assert list((data / "objects").iterdir()) == []  # the new shard went, the object in it


def test_a_data_directory_never_synced_in_its_parent_goes_whole(tmp_path: Path) -> None:
    data = tmp_path / "data"
    calls = _journal(data).calls()
    make_dirs(data / "objects", durable=False, calls=calls)
    with calls.create(data / "file") as out:  # synced, but its directory's entry was not
        out.write(b"x")
        calls.fsync(out)
    calls.sync_dir(data)
    _cut(data)
    assert not data.exists()


def test_an_unlink_not_synced_comes_back_and_a_synced_one_does_not(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_dirs(data)
    calls: Shim = _journal(data).calls()
    store = FileBlobStore(data / "objects", calls=calls)
    _put(store)
    _put(store, b"other", OTHER)
    calls.unlink(store.path(REF))
    asyncio.run(store.remove(OTHER))  # the store syncs its directory (not REF's)
    _cut(data)
    assert hashlib.sha256(store.path(REF).read_bytes()).digest() == \
        hashlib.sha256(CONTENT).digest()
    assert not store.path(OTHER).exists()
