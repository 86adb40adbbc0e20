"""New directories survive a power cut (adapters/durable.py): after ``mkdir -p`` the parent of
every directory made is synced, outermost first; the data directory and the blob store's root
and shards are made this way. The syncs are the real ones, only watched (which directory each
fsync'd descriptor is, read from /proc)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from waypost.adapters import durable
from waypost.adapters.blobs.files import FileBlobStore


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The directories fsync'd from now on, in order (files fsync'd are left out)."""
    seen: list[Path] = []
    real = os.fsync

    def watched(fd: int) -> None:
        target = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if target.is_dir():
            seen.append(target)
        real(fd)
    monkeypatch.setattr(os, "fsync", watched)
    return seen


def test_every_directory_made_has_its_entry_synced_outermost_first(
        tmp_path: Path, synced: list[Path]) -> None:
    leaf = tmp_path / "a" / "b" / "c"
    made = durable.make_dirs(leaf)
    assert made == [tmp_path / "a", tmp_path / "a" / "b", leaf]
    assert leaf.is_dir()
    assert synced == [tmp_path, tmp_path / "a", tmp_path / "a" / "b"]


def test_a_directory_that_exists_is_left_alone(tmp_path: Path, synced: list[Path]) -> None:
    assert durable.make_dirs(tmp_path) == []
    assert synced == []


def test_the_blob_store_syncs_its_new_root_and_each_new_shard(
        tmp_path: Path, synced: list[Path]) -> None:
    root = tmp_path / "data" / "objects"
    store = FileBlobStore(root)
    assert synced == [tmp_path, tmp_path / "data"]

    async def chunks() -> AsyncIterator[bytes]:
        yield b"hello"

    async def put() -> None:
        await store.create_only("obj_" + "a" * 24 + "zz", chunks())
    synced.clear()
    asyncio.run(put())
    assert synced[0] == root  # the shard's entry, before the object is written into it
    assert root / "zz" in synced  # the object's own entry in its shard
