"""Cutting the last commits off a crashed journal's ``-wal`` with nothing but ``truncate`` (no key, no sqlite3):
the insider's move of issue #33. A prefix of a valid chain is valid, so only a witness can tell.

SQLite's WAL file: a 32-byte header (page size at byte 8, the salts at 16), then frames of a 24-byte header and
one page each; a frame whose "database size after commit" (byte 4 of its header) is not 0 ends a commit, and
only frames carrying the header's salts belong to the current log. A journal is cut back by one commit by
truncating the file at the end of the commit before its last one; the next opener (the first after a crash)
rebuilds the WAL index from what is left.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
import tempfile
from contextlib import closing
from pathlib import Path

__all__ = ["commit_ends", "cut_back", "position"]

_HEADER = 32
_FRAME_HEADER = 24


def last_seq(journal: Path) -> int:
    """The last published ``seq`` of a journal in use (read-only; 0 while it cannot be read yet)."""
    try:
        with closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5)) as db:
            return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])
    except sqlite3.Error:
        return 0


def commit_ends(wal: Path) -> list[int]:
    """The byte offsets at which each commit of the current log ends, oldest first."""
    data = wal.read_bytes()
    if len(data) < _HEADER:
        return []
    page_size = struct.unpack(">I", data[8:12])[0] or 65536
    salts = data[16:24]
    ends: list[int] = []
    offset = _HEADER
    while offset + _FRAME_HEADER + page_size <= len(data):
        frame = data[offset:offset + _FRAME_HEADER]
        if frame[8:16] != salts:
            break  # a frame of an older log, left behind after a reset
        offset += _FRAME_HEADER + page_size
        if struct.unpack(">I", frame[4:8])[0]:
            ends.append(offset)
    return ends


def position(journal: Path, wal_size: int | None = None) -> tuple[int, int]:
    """(last input id, last seq) of ``journal`` with its ``-wal`` cut at ``wal_size`` (None: as it is), read on
    a copy (the original is left as it is)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / journal.name
        shutil.copyfile(journal, copy)
        wal = Path(f"{journal}-wal")
        if wal.exists():
            shutil.copyfile(wal, f"{copy}-wal")
            if wal_size is not None:
                with open(f"{copy}-wal", "r+b") as f:
                    f.truncate(wal_size)
        with closing(sqlite3.connect(copy)) as db:
            row = db.execute("SELECT (SELECT COALESCE(MAX(id), 0) FROM inputs), "
                             "(SELECT COALESCE(MAX(seq), 0) FROM outbox)").fetchone()
    return int(row[0]), int(row[1])


def cut_back(journal: Path, commits: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Truncate ``journal``'s ``-wal`` so that its last ``commits`` commits that added rows are gone (commits that
    only moved a bookkeeping mark do not count); return (position before, position after)."""
    wal = Path(f"{journal}-wal")
    whole = position(journal)
    seen = [whole]
    for end in reversed(commit_ends(wal)[:-1]):
        at = position(journal, end)
        if at != seen[-1]:
            seen.append(at)
        if len(seen) == commits + 1:
            with open(wal, "r+b") as f:
                f.truncate(end)
            return whole, at
    raise AssertionError(f"{wal}: fewer than {commits} commits that added rows to cut (found {len(seen) - 1})")
