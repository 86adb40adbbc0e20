"""Directories that survive a power cut: a new directory entry is durable only once the
directory that holds it is synced (a file's own fsync does not make its name durable). The
data directory, the blob store's root and its shard directories are made with
:func:`make_dirs`; a rename or unlink a commit relies on is followed by :func:`sync_dir`
(docs/spec.md, "What survives a power cut")."""

from __future__ import annotations

import os
from pathlib import Path


def sync_dir(directory: Path) -> None:
    """fsync a directory: the entries made, renamed or removed in it are on disk after this."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: Path, *, durable: bool = True) -> list[Path]:
    """``mkdir -p path``, then sync the parent of every directory this made, outermost first,
    so that each new entry survives a power cut; the directories made, outermost first (none
    when ``path`` existed). ``durable=False`` (throwaway test targets) skips the syncs."""
    made: list[Path] = []
    missing = path
    while not missing.exists():
        made.append(missing)
        missing = missing.parent
    if not made:  # the usual case (a shard that exists): no system call beyond one stat
        return made
    made.reverse()
    path.mkdir(parents=True, exist_ok=True)
    if durable:
        for directory in made:
            sync_dir(directory.parent)
    return made
