"""Which b-trees a transaction writes: the frames of a live SQLite WAL, by commit and by the
table or index that owns each page (SQLite's ``dbstat``), read beside the running server.

The WAL holds the frames written since its last restart (a checkpoint lets the next writer
start it over): each frame is one page, and a frame with a non-zero commit field ends a
transaction. With one send per transaction (one connection), frames per commit are the pages
one send writes.
"""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path
from typing import Any

import apsw

_HEADER = 32
_FRAME_HEADER = 24


def _frames(wal: bytes) -> list[tuple[int, int]]:
    """``(page, commit)`` of each valid frame of the WAL's current generation."""
    if len(wal) < _HEADER:
        return []
    page_size = struct.unpack(">I", wal[8:12])[0]
    salt = wal[16:24]
    frames, at = [], _HEADER
    while at + _FRAME_HEADER + page_size <= len(wal):
        page, commit = struct.unpack(">II", wal[at:at + 8])
        if wal[at + 8:at + 16] != salt:  # a frame of an earlier generation: the end
            break
        frames.append((page, commit))
        at += _FRAME_HEADER + page_size
    return frames


def wal_pages(database: Path, last_commits: int = 20) -> dict[str, Any] | None:
    """Frames per commit over the WAL's last ``last_commits`` transactions, and by owner (a
    table or index, ``sqlite_schema`` for page 1, ``free`` for a page no b-tree owns); None
    when the WAL holds no whole transaction or SQLite has no ``dbstat``."""
    try:
        frames = _frames(Path(f"{database}-wal").read_bytes())
    except OSError:
        return None
    ends = [i for i, (_, commit) in enumerate(frames) if commit]
    if not ends:
        return None
    ends = ends[-(last_commits + 1):]
    first = ends[0] + 1 if len(ends) > 1 else 0
    commits = len(ends) - 1 if len(ends) > 1 else 1
    written = [page for page, _ in frames[first:ends[-1] + 1]]
    reader = apsw.Connection(f"file:{database}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY
                             | apsw.SQLITE_OPEN_URI)
    try:
        owner = {int(page): str(name) for name, page in
                 reader.execute("SELECT name, pageno FROM dbstat")}
    except apsw.SQLError:  # a SQLite built without the dbstat table
        return None
    finally:
        reader.close()
    by = Counter(owner.get(page, "free") for page in written)
    return {"commits": commits, "frames_per_commit": round(len(written) / commits, 2),
            "by_btree": {name: round(count / commits, 2) for name, count in by.most_common()}}
