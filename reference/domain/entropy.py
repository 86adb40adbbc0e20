"""Random bytes for server-generated ids, drawn from the operating system's CSPRNG in blocks.

A send makes five ids (submission, message, thread, feed item, plan); one ``os.urandom`` call
each was a system call per id on the request path. The pool reads :data:`BLOCK` bytes at once
and hands them out in slices, so ids keep their full randomness at a fraction of the calls. A
forked child starts with an empty pool, so it never repeats its parent's bytes.
"""

from __future__ import annotations

import os
import threading

#: Bytes read from the OS per refill (256 ids of 128 bits).
BLOCK = 4096


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._block = b""
        self._at = 0

    def take(self, count: int) -> bytes:
        with self._lock:
            if self._at + count > len(self._block):
                self._block, self._at = os.urandom(max(BLOCK, count)), 0
            taken = self._block[self._at:self._at + count]
            self._at += count
            return taken

    def forget(self) -> None:
        self._block, self._at, self._lock = b"", 0, threading.Lock()


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def random_bytes(count: int) -> bytes:
    """``count`` bytes from the OS's CSPRNG, never handed out twice."""
    return _POOL.take(count)
