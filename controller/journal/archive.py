"""Archiving: the whole journal copied to a dated file, the live one cut to its newest snapshot and what follows.

Why: a table's journal grows with every card; archiving keeps the live file short without breaking the chain.
The continuation's chain starts at the archive's hash before the kept rows (a :class:`ChainBase` sealed in
``meta.chain_base``), and the archive's ``meta.continued_by`` names its continuation, so ``tablectl journal
verify`` checks that the two join. The writer (:meth:`controller.journal.writer.Journal.archive`) deletes the
archived rows and starts the chain anew in one transaction; what to cut and the copy are here.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Protocol

from controller.journal.chain import ChainBase, dumps
from controller.journal.errors import JournalError
from controller.journal.snapshots import Snapshot

__all__ = ["Archivable", "copy_out", "cut_point", "link_continuation", "position_hash"]


class Archivable(Protocol):
    """What :func:`cut_point` reads of a journal."""

    @property
    def path(self) -> Path: ...

    @property
    def verified(self) -> bool: ...

    @property
    def base(self) -> ChainBase: ...

    @property
    def delivered_upto(self) -> int: ...

    def snapshot_ids(self) -> list[int]: ...

    def snapshot_at(self, input_id: int) -> Snapshot: ...

    def position_hash(self, input_id: int, seq: int) -> bytes | None: ...


def position_hash(conn: sqlite3.Connection, base: ChainBase, input_id: int, seq: int) -> bytes | None:
    """The chain hash just after input ``input_id`` and the records up to ``seq`` (None: not a position
    of this journal's chain)."""
    if (input_id, seq) == (base.input, base.seq):
        return base.hash
    rec = conn.execute("SELECT input_id, hash FROM outbox WHERE seq = ?", (seq,)).fetchone()
    if seq > base.seq and rec is not None and rec[0] == input_id:
        return bytes(rec[1])
    if rec is not None and rec[0] is not None and int(rec[0]) > input_id:
        return None
    found = conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()
    return bytes(found[0]) if found and found[0] is not None else None


def cut_point(journal: Archivable, conn: sqlite3.Connection) -> tuple[int, int, bytes]:
    """Where to cut: the newest snapshot's input, the last record before it and the chain hash there.
    :class:`JournalError` unless the journal was verified, has a snapshot after its chain's start that checks,
    and every record before the cut was published."""
    if not journal.verified:
        raise JournalError(f"journal {journal.path}: verify it before archiving")
    ids = journal.snapshot_ids()
    cut = ids[0] if ids else 0
    if cut - 1 <= journal.base.input:
        raise JournalError(f"journal {journal.path}: nothing to archive: no snapshot after the chain's start "
                           "(the table saves one every snapshot_every inputs)")
    journal.snapshot_at(cut)  # it must check: the continuation starts from it
    (before,) = conn.execute("SELECT MAX(seq) FROM outbox WHERE input_id < ?", (cut,)).fetchone()
    base_seq = max(int(before or 0), journal.base.seq)
    delivered = journal.delivered_upto
    if base_seq > delivered:
        raise JournalError(f"journal {journal.path}: records up to seq {base_seq} are not all published yet "
                           f"(delivered up to {delivered}): start the table to drain them first")
    prev = journal.position_hash(cut - 1, base_seq)
    if prev is None:
        raise JournalError(f"journal {journal.path}: no chain position after input {cut - 1}, seq {base_seq}")
    return cut, base_seq, prev


def copy_out(conn: sqlite3.Connection, path: Path, to_dir: str | os.PathLike[str], first_input: int,
             last_input: int) -> Path:
    """Copy the whole journal to a new dated file (mode 0600) in ``to_dir`` (made 0700); return its path."""
    to = Path(to_dir)
    to.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    archive = to / f"{path.stem}-{stamp}-inputs-{first_input}-{last_input}.journal"
    if archive.exists():
        raise JournalError(f"archive {archive}: already exists")
    old_umask = os.umask(0o077)
    try:
        conn.execute("VACUUM INTO ?", (str(archive),))
    finally:
        os.umask(old_umask)
    os.chmod(archive, 0o600)
    return archive


def link_continuation(archive: Path, path: Path, base: ChainBase) -> None:
    """Name, in the archive's ``meta.continued_by``, the journal that continues it and where its chain starts."""
    link = dumps({"journal": str(path.resolve()), "input": base.input, "seq": base.seq, "hash": base.hash.hex()})
    copy = sqlite3.connect(archive, isolation_level=None)
    try:
        copy.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('continued_by', ?)", (link,))
    finally:
        copy.close()
