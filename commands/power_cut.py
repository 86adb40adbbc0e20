"""A power-cut simulator for SQLite files (fault injection for test deployments only), used
by the embedded adapter and the reference consumer alike (``waypost.power_cut``, in the root
package, so that the consumer, which imports nothing of the server, can use it too):
an apsw VFS under which nothing SQLite writes reaches the disk until SQLite syncs it. Writes
and truncations wait in memory, shared by every connection of the process to the same file,
and every read sees them; ``xSync`` applies them to the file and syncs it. Killing the process
(``SIGKILL``) then loses exactly what a power cut loses: everything written but not yet
synced; a kill during a sync's apply leaves its writes torn. In the manner of SQLite's crash
test VFS (``test6.c``) and Jepsen's LazyFS.

``waypost serve --test-hooks --simulate-power-cuts`` opens its database through it. With
``--synchronous full`` nothing acknowledged may be lost; with ``normal`` (the WAL synced only at
checkpoints) acknowledged commits are lost, which proves that the simulator bites
(``tests/adapters/test_power_cut.py``). A consumer started with
``WAYPOST_CONSUMER_POWER_CUTS=1`` opens its local file through it
(``waypost conformance consumer-matrix --power-loss``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import apsw

NAME = "waypost-power-cut"


@dataclass
class _Pending:
    """One file's writes and truncations since its last sync, in order."""

    ops: list[tuple[int, bytes | None]] = field(default_factory=list)  # (offset, data) or
    lock: threading.Lock = field(default_factory=threading.Lock)      # (size, None): truncate


_PENDING: dict[str, _Pending] = {}  # by file name: every connection's handle shares it
_REGISTRY = threading.Lock()


def _key(name: apsw.URIFilename | str | None) -> str:
    return str(name.filename() if isinstance(name, apsw.URIFilename) else name)


def _pending(name: str) -> _Pending:
    with _REGISTRY:
        return _PENDING.setdefault(name, _Pending())


class PowerCutFile(apsw.VFSFile):
    """A file whose writes wait in memory until it is synced."""

    def __init__(self, inherit: str, name: apsw.URIFilename | str | None, flags: list[int]):
        super().__init__(inherit, name, flags)
        self._shared = _pending(_key(name))

    def _size(self) -> int:
        size = super().xFileSize()
        for offset, data in self._shared.ops:
            size = offset if data is None else max(size, offset + len(data))
        return size

    def xFileSize(self) -> int:
        with self._shared.lock:
            return self._size()

    def xRead(self, amount: int, offset: int) -> bytes:
        with self._shared.lock:
            if not self._shared.ops:
                return super().xRead(amount, offset)
            base_size = super().xFileSize()
            read = bytearray(super().xRead(amount, offset) if offset < base_size else b"")
            read.extend(bytes(amount - len(read)))
            size = base_size
            for at, data in self._shared.ops:
                if data is None:  # a truncation: what lay beyond it reads as nothing
                    size = at
                    if at < offset + amount:
                        cut = max(at - offset, 0)
                        read[cut:] = bytes(amount - cut)
                    continue
                size = max(size, at + len(data))
                start, end = max(at, offset), min(at + len(data), offset + amount)
                if start < end:
                    read[start - offset:end - offset] = data[start - at:end - at]
            return bytes(read[:max(0, min(amount, size - offset))])

    def xWrite(self, data: bytes, offset: int) -> None:
        with self._shared.lock:
            self._shared.ops.append((offset, bytes(data)))

    def xTruncate(self, newsize: int) -> None:
        with self._shared.lock:
            self._shared.ops.append((newsize, None))

    def xSync(self, flags: int) -> None:
        with self._shared.lock:
            for at, data in self._shared.ops:
                if data is None:
                    super().xTruncate(at)
                else:
                    super().xWrite(data, at)
            self._shared.ops.clear()
            super().xSync(flags)


class PowerCutVFS(apsw.VFS):
    """The VFS of :class:`PowerCutFile`, over the default VFS."""

    def __init__(self) -> None:
        super().__init__(NAME, "")

    def xOpen(self, name: apsw.URIFilename | str | None, flags: list[int]) -> PowerCutFile:
        return PowerCutFile("", name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        with _REGISTRY:  # a file made again later starts with nothing pending
            _PENDING.pop(_key(filename), None)
        super().xDelete(filename, syncdir)


_INSTALLED: list[PowerCutVFS] = []


def install() -> str:
    """Register the VFS in this process (once); its name, for ``apsw.Connection(vfs=…)``."""
    with _REGISTRY:
        if not _INSTALLED:
            _INSTALLED.append(PowerCutVFS())
    return NAME
