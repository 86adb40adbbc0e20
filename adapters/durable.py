"""Directories that survive a power cut: a new directory entry is durable only once the
directory that holds it is synced (a file's own fsync does not make its name durable). The
data directory, the blob store's root and its shard directories are made with
:func:`make_dirs`; a rename or unlink a commit relies on is followed by :func:`sync_dir`
(docs/spec.md, "What survives a power cut").

The file calls the blob store and the data directory make go through a :class:`FileCalls`
(:data:`DISK`, the plain system calls), so that a test deployment can put the power-cut shim
(``adapters/power_cut_files.py``) in their place."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO


def sync_dir(directory: Path) -> None:
    """fsync a directory: the entries made, renamed or removed in it are on disk after this."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FileCalls:
    """The file calls that change what is on disk, as the system makes them."""

    def mkdir(self, path: Path) -> None:
        """Make one directory (``FileExistsError`` if it is there)."""
        path.mkdir()

    def create(self, path: Path, mode: int = 0o666) -> BinaryIO:
        """A new file, open for writing (``FileExistsError`` if it is there); the caller
        closes it."""
        return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb")

    def fsync(self, file: BinaryIO) -> None:
        """Flush and fsync a file made by :meth:`create`: its bytes are on disk after this."""
        file.flush()
        os.fsync(file.fileno())

    def link(self, source: Path, target: Path) -> None:
        """A second name for a file (``FileExistsError`` if ``target`` is there)."""
        os.link(source, target)

    def unlink(self, path: Path) -> None:
        """Remove a name (nothing if it is not there)."""
        path.unlink(missing_ok=True)

    def sync_dir(self, directory: Path) -> None:
        """:func:`sync_dir`."""
        sync_dir(directory)


#: The plain system calls (every deployment but a power-cut simulation).
DISK = FileCalls()


def make_dirs(path: Path, *, durable: bool = True, calls: FileCalls = DISK) -> list[Path]:
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
    for directory in made:
        try:
            calls.mkdir(directory)
        except FileExistsError:  # made meanwhile by another thread (an upload to the shard)
            if not directory.is_dir():
                raise
    if durable:
        for directory in made:
            calls.sync_dir(directory.parent)
    return made
