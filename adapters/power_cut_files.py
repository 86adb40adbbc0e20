"""A power-cut shim for the blob store's files and the data directory (fault injection for
test deployments only: ``waypost serve --test-hooks --simulate-power-cuts``, beside the SQLite
VFS of ``waypost/power_cut.py``). It stands in for :class:`~waypost.adapters.durable.FileCalls`
(mkdir, create, fsync, link, unlink, directory fsync: every call the blob store, the data
directory and the cursor key make that changes the disk; the blob store renames nothing).

An undo journal: each call goes to the disk at once (so the process reads what it wrote), but
first the shim appends to a journal how to undo it, and each sync, once it returns, appends
what it made durable:

- a file's bytes are durable up to its size when its last fsync began (the files made through
  :meth:`Shim.create` are written once, front to back, so that size is exact);
- a new entry (mkdir, create, link) or a removed one (unlink) is durable once an fsync of its
  parent directory begun after the call has returned.

:func:`revert` then puts the disk back to what a power cut leaves: it undoes every entry change
that was not durable, newest first (an unlinked file comes back from a hard link the shim made
before unlinking it; a directory whose own entry was not durable goes whole, with all it
holds), and cuts each file made under the journal back to its synced size (nothing of a file
never synced survives; no write is torn). A simulated cut is a ``SIGKILL`` of the server: the
kernel keeps what the process wrote, so the journal is written, never synced.

The journal lives beside the data directory, in ``<data dir>.power-cut/`` (a cut during the
first start takes the data directory itself). :func:`install`, at the server's start under the
flag and before anything is opened, reverts what the last run left unsynced, then starts a new
journal: killing the server and starting it again with the flag is a power cut and the reboot.

The control (``tests/adapters/test_power_cut.py``): with :data:`DROP_SYNCS_ENVIRONMENT` set to
``files``, ``dirs`` or ``all``, the blob store's fsyncs of its files, of its directories, or
both are skipped (neither made nor journaled), and a cut must lose or damage sealed blobs.

Not covered: the files SQLite makes (the VFS holds back their unsynced bytes, not their
entries)."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from waypost.adapters.durable import FileCalls, sync_dir

logger = logging.getLogger("waypost.power_cut")

JOURNAL = "journal"
STASH = "stash"
#: ``files``, ``dirs`` or ``all``: the blob store's fsyncs the shim skips (the control).
DROP_SYNCS_ENVIRONMENT = "WAYPOST_POWER_CUT_DROP_BLOB_SYNCS"
_DROPS = {"files": frozenset({"files"}), "dirs": frozenset({"dirs"}),
          "all": frozenset({"files", "dirs"})}


def journal_dir(data_dir: Path) -> Path:
    """Where the shim keeps its journal and unlinked files for ``data_dir`` (beside it)."""
    return data_dir.with_name(data_dir.name + ".power-cut")


class Journal:
    """The records of one run, appended in order (a record's number is its line's index)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        (directory / STASH).mkdir(parents=True)
        self._fd = os.open(directory / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.lock = threading.Lock()  # one record at a time, each with its call
        self.count = 0

    def append(self, **record: Any) -> None:
        """Write one record (the caller holds :attr:`lock`)."""
        os.write(self._fd, (json.dumps(record) + "\n").encode())
        self.count += 1

    def stash(self) -> Path:
        """A fresh name to keep an unlinked file under (the caller holds :attr:`lock`)."""
        return self.directory / STASH / str(self.count)

    def calls(self, drop: frozenset[str] = frozenset()) -> Shim:
        """File calls journaled here; ``drop`` names the syncs skipped (``files``, ``dirs``)."""
        return Shim(self, drop)


class Shim(FileCalls):
    """:class:`FileCalls` that journal how to undo each change and what each sync made durable.
    Entry changes hold the journal's lock across their check, record and call, so a record
    names exactly what the call changed."""

    def __init__(self, journal: Journal, drop: frozenset[str]) -> None:
        self.journal = journal
        self.drop = drop

    def mkdir(self, path: Path) -> None:
        with self.journal.lock:
            _absent(path)
            self.journal.append(add=_name(path), dir=True)
            path.mkdir()

    def create(self, path: Path, mode: int = 0o666) -> BinaryIO:
        with self.journal.lock:
            _absent(path)
            self.journal.append(add=_name(path))
            file = super().create(path, mode)
            self.journal.append(file=_name(path), ino=os.fstat(file.fileno()).st_ino)
        return file

    def fsync(self, file: BinaryIO) -> None:
        file.flush()
        if "files" in self.drop:
            return
        facts = os.fstat(file.fileno())
        os.fsync(file.fileno())
        with self.journal.lock:
            self.journal.append(synced=facts.st_ino, size=facts.st_size)

    def link(self, source: Path, target: Path) -> None:
        with self.journal.lock:
            _absent(target)
            self.journal.append(add=_name(target))
            os.link(source, target)

    def unlink(self, path: Path) -> None:
        with self.journal.lock:
            if not os.path.lexists(path):
                return
            stash = self.journal.stash()
            self.journal.append(remove=_name(path), stash=str(stash))
            os.link(path, stash)
            path.unlink()

    def sync_dir(self, directory: Path) -> None:
        if "dirs" in self.drop:
            return
        with self.journal.lock:
            upto = self.journal.count  # what was recorded before the sync began
        sync_dir(directory)
        with self.journal.lock:
            self.journal.append(dirsync=_name(directory), upto=upto)


def _name(path: Path) -> str:
    return os.path.abspath(path)  # one spelling per entry, whatever the caller's


def _absent(path: Path) -> None:
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))


@dataclass(frozen=True)
class Reverted:
    """What :func:`revert` undid."""

    entries: int  # directory entries made or removed, undone
    files: int  # files cut back to their synced size


def _records(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for line in path.read_bytes().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:  # a record the kill cut short: its call was never made
            break
    return records


def revert(directory: Path) -> Reverted:
    """Put the disk back to what was durable by the journal in ``directory`` (which stays)."""
    records = _records(directory / JOURNAL)
    return Reverted(_undo_entries(records), _cut_files(records))


def _undo_entries(records: list[dict[str, Any]]) -> int:
    """Undo each entry change no later sync of its directory covered, newest first."""
    synced_upto: dict[str, int] = {}  # by directory: records before its last sync began
    for record in records:
        if "dirsync" in record:
            synced_upto[record["dirsync"]] = max(synced_upto.get(record["dirsync"], 0),
                                                 record["upto"])
    undone = 0
    for number in reversed(range(len(records))):
        record = records[number]
        name = record.get("add") or record.get("remove")
        if name is not None and synced_upto.get(os.path.dirname(name), 0) <= number:
            undone += _undo(record, Path(name))
    return undone


def _undo(record: dict[str, Any], path: Path) -> int:
    """Undo one entry change (1), or nothing where it left nothing to undo (0)."""
    if "remove" in record:  # the name comes back, to the file it named
        stash = Path(record["stash"])
        if os.path.lexists(path) or not stash.exists() or not path.parent.is_dir():
            return 0
        os.link(stash, path)
    elif record.get("dir"):  # a directory whose entry is lost takes what it holds along
        if not path.is_dir():
            return 0
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()
    else:
        return 0
    return 1


def _cut_files(records: list[dict[str, Any]]) -> int:
    """Cut each file made under the journal, by whichever of its names is left, back to the
    size its last fsync covered (nothing if it was never synced)."""
    synced: dict[int, int] = {}  # by inode
    for record in records:
        if "file" in record:
            synced[record["ino"]] = 0
        elif "synced" in record and record["synced"] in synced:
            synced[record["synced"]] = record["size"]
    cut = 0
    names: set[str] = {str(name) for record in records
                       if (name := record.get("add") or record.get("remove"))}
    for name in sorted(names):
        try:
            facts = os.lstat(name)
        except FileNotFoundError:
            continue
        size = synced.get(facts.st_ino)
        if size is not None and facts.st_size > size:
            os.truncate(name, size)
            cut += 1
    return cut


_INSTALLED: dict[Path, Journal] = {}
_REGISTRY = threading.Lock()


def install(data_dir: Path) -> Journal:
    """Once per process and data directory: revert what the last run left unsynced (a power
    cut), then start a new journal."""
    with _REGISTRY:
        if data_dir in _INSTALLED:
            return _INSTALLED[data_dir]
        directory = journal_dir(data_dir)
        if (directory / JOURNAL).exists():
            reverted = revert(directory)
            logger.info("power-cut simulation: %d directory entries undone, %d files cut back "
                        "to their synced size", reverted.entries, reverted.files)
        shutil.rmtree(directory, ignore_errors=True)
        directory.parent.mkdir(parents=True, exist_ok=True)
        journal = _INSTALLED[data_dir] = Journal(directory)
        return journal


def dropped_syncs() -> frozenset[str]:
    """The blob store's syncs the control skips (:data:`DROP_SYNCS_ENVIRONMENT`)."""
    value = os.environ.get(DROP_SYNCS_ENVIRONMENT, "")
    if value and value not in _DROPS:
        raise ValueError(f"{DROP_SYNCS_ENVIRONMENT} is one of {', '.join(_DROPS)}, not {value!r}")
    return _DROPS.get(value, frozenset())
