"""The journal's file and its lock: opening it to write (one writer, mode 0600) or to read beside its writer.

One writer: a second program opening the journal to write is refused (:class:`JournalError`, "in use by another
program") by an exclusive ``flock`` on the journal file itself (:func:`take_writer_lock`), held until the writer
closes (the kernel drops it when the process dies, ``kill -9`` included). Readers (``tablectl journal verify``,
``recall``, ``report``) open the database read-only beside the running table (WAL: they never block its commits),
or a copy without write bits (an evidence copy) without writing anything beside it.

Secrecy: inputs contain every card, the hole card included, so the database and its ``-wal`` / ``-shm`` files are
created with mode 0600 (the file is pre-created with ``os.open(..., 0o600)`` and the umask is 077 while SQLite
creates its side files); an existing journal is chmod-ed back to 0600 on open.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sqlite3
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from controller.journal.chain import ChainBase
from controller.journal.errors import JournalError
from controller.journal.schema import SCHEMA, SCHEMA_VERSION, check_format

__all__ = ["CHUNK", "End", "Synchronous", "input_hash", "last_input_with", "lock_writer", "open_reader",
           "open_writer", "read_chunks", "read_end", "read_only_connection", "take_writer_lock"]

Synchronous = Literal["FULL", "NORMAL"]
#: rows read per query when iterating a long journal
CHUNK = 512


def read_only_copy(path: Path) -> bool:
    """A journal nothing may be written beside: the file or its folder without write bits (or not writable to
    this user): an evidence copy."""
    return any(not stat.S_IMODE(p.stat().st_mode) & 0o222 or not os.access(p, os.W_OK) for p in (path, path.parent))


def read_only_connection(path: Path, *, check_same_thread: bool = True) -> tuple[sqlite3.Connection, Path | None]:
    """A read-only SQLite connection to the journal at ``path`` and the private folder to remove after it (None:
    none made): ``mode=ro`` beside its writer; for a copy without write bits (:func:`read_only_copy`),
    ``immutable`` when it has no ``-wal`` to read, else on a private copy of the file and its ``-wal`` (SQLite
    would want a ``-shm`` beside them): nothing is ever written beside such a copy."""
    target, options, scratch = path.resolve(), "mode=ro", None
    if read_only_copy(target):
        wal = Path(f"{target}-wal")
        if wal.is_file() and wal.stat().st_size > 0:
            scratch = Path(tempfile.mkdtemp(prefix="tablectl-evidence-"))
            for source, name in ((target, target.name), (wal, f"{target.name}-wal")):
                shutil.copyfile(source, scratch / name)
                os.chmod(scratch / name, 0o600)
            target = scratch / target.name
        else:
            options += "&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{quote(str(target))}?{options}", uri=True, isolation_level=None,
                               check_same_thread=check_same_thread, timeout=5)
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    return conn, scratch


def take_writer_lock(path: Path) -> int:
    """Take the journal's one-writer lock: an exclusive ``flock`` on the journal file itself (created 0600 when
    missing), dropped when the returned descriptor is closed or the process dies; :class:`JournalError` "in use by
    another program". Not on a side file: a lock file deleted under a running writer let a second one in.
    SQLite's own locks are ``fcntl`` locks, which a ``flock`` does not touch (Linux keeps the two apart; WAL
    journals are never on a network file system, where they would meet), so readers are never blocked by it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise JournalError(f"journal {path}: cannot open: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise JournalError(
            f"journal {path}: in use by another program (one table service per journal; "
            "is another tablectl running on this state directory?)"
        ) from None
    return fd



def lock_writer(path: Path, create: bool) -> int:
    """The writer's lock on the journal at ``path`` (:func:`take_writer_lock`); ``create=False`` refuses a
    journal that does not exist yet."""
    if not create and not path.exists():
        raise JournalError(f"journal {path}: no such journal")
    path.parent.mkdir(parents=True, exist_ok=True)
    return take_writer_lock(path)


def open_writer(path: Path, synchronous: Synchronous, *, create: bool, key_id: str) -> sqlite3.Connection:
    """The writer's connection (WAL, ``synchronous`` as asked), the format checked before anything is written; a
    new journal made when the file holds nothing and ``create`` allows it (:func:`_create`)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise JournalError(f"journal {path}: cannot open: {exc.strerror}") from exc
    os.close(fd)
    old_umask = os.umask(0o077)
    try:
        for suffix in ("", "-wal", "-shm"):
            side = Path(f"{path}{suffix}")
            if side.exists() and side.stat().st_mode & 0o077:
                os.chmod(side, 0o600)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5)
        try:
            # what the file holds decides, before anything is written to it (a trigger added by hand
            # would run on our first insert): nothing is ever signed at open
            new = check_format(conn, path)
            if new and not create:
                raise JournalError(f"journal {path}: holds nothing (emptied?): refused")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise JournalError(f"journal {path}: cannot switch to WAL mode (got {mode})")
            conn.execute(f"PRAGMA synchronous={synchronous}")
            conn.execute("PRAGMA foreign_keys=OFF")
            if new:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    _create(conn, key_id)
                    conn.execute("COMMIT")
                except BaseException:
                    with suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                    raise
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise JournalError(f"journal {path}: not a usable SQLite journal: {exc}") from exc
        except BaseException:
            conn.close()
            raise
    finally:
        os.umask(old_umask)
    return conn


def open_reader(path: Path) -> tuple[sqlite3.Connection, Path | None]:
    """Read-only beside its writer, if any; a copy without write bits as a lab gets it, without writing
    anything beside it (:func:`read_only_connection`). Returns the connection and the private folder to remove
    after it (None: none made)."""
    if not path.is_file():
        raise JournalError(f"journal {path}: no such journal")
    try:
        conn, scratch = read_only_connection(path, check_same_thread=False)
    except sqlite3.Error as exc:
        raise JournalError(f"journal {path}: cannot open: {exc}") from exc
    try:
        if check_format(conn, path):
            raise JournalError(f"journal {path}: holds nothing: not a table journal")
    except sqlite3.DatabaseError as exc:
        conn.close()
        _remove(scratch)
        raise JournalError(f"journal {path}: not a usable SQLite journal: {exc}") from exc
    except BaseException:
        conn.close()
        _remove(scratch)
        raise
    return conn, scratch


def _remove(scratch: Path | None) -> None:
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


def _create(conn: sqlite3.Connection, key_id: str) -> None:
    """A new journal: the chained schema, its random id and the id of its key (nothing else is ever created
    or signed at open: an older journal waits for ``tablectl journal migrate``)."""
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    for key, value in (("journal_id", uuid.uuid4().hex), ("key_id", key_id),
                       ("created_at", str(round(time.time(), 3)))):
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def input_hash(conn: sqlite3.Connection, base: ChainBase, input_id: int) -> bytes:
    """The stored chain hash of input ``input_id`` (the chain's start's at the base; empty when none)."""
    if input_id == base.input:
        return base.hash
    found = conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()
    return bytes(found[0]) if found and found[0] is not None else b""


def read_chunks(conn: sqlite3.Connection, lock: AbstractContextManager[Any], query: str, after: int, *bounds: int | str,
                upto: int | None = None) -> Iterator[tuple[Any, ...]]:
    """The rows of ``query`` (its first column the key, its parameters ``after``, ``bounds`` and a ``LIMIT``) in
    key order after ``after``, read :data:`CHUNK` at a time under ``lock`` (safe for long journals, and the
    writer goes on between chunks); ``upto``: stop there (or at the first empty chunk)."""
    while upto is None or after < upto:
        with lock:
            rows = conn.execute(query, (after, *bounds, CHUNK)).fetchall()
        if not rows:
            return
        yield from rows
        if upto is None and len(rows) < CHUNK:
            return
        after = int(rows[-1][0])


@dataclass(frozen=True, slots=True)
class End:
    """Where a journal's file ends, as its writer resumes it: the last ``seq`` and input, the chain's head and the
    row there, the last input's and the last record's hashes, and the last seal."""

    last_seq: int
    last_input: int
    head: bytes
    head_row: tuple[str, int]
    last_input_hash: bytes
    last_record_hash: bytes | None
    seal_n: int
    seal_mac: bytes
    sealed_upto: tuple[int, int]


def read_end(conn: sqlite3.Connection, base: ChainBase) -> End:
    """The journal's :class:`End` as its rows say (checked later, by a verify)."""
    max_seq, max_in = conn.execute(
        "SELECT (SELECT MAX(seq) FROM outbox), (SELECT MAX(id) FROM inputs)").fetchone()
    last_seq = max(int(max_seq or 0), base.seq)
    last_input = max(int(max_in or 0), base.input)
    head, head_row = base.hash, ("base", base.input)
    last_input_hash = base.hash
    if max_in is not None:
        (h,) = conn.execute("SELECT hash FROM inputs WHERE id = ?", (max_in,)).fetchone()
        last_input_hash = bytes(h or b"")
        head, head_row = last_input_hash, ("inputs", int(max_in))
    last_record_hash: bytes | None = None
    if max_seq is not None:
        iid, h = conn.execute("SELECT input_id, hash FROM outbox WHERE seq = ?", (max_seq,)).fetchone()
        last_record_hash = bytes(h) if h else None
        if iid is not None and int(iid) >= last_input:
            head, head_row = bytes(h or b""), ("outbox", int(max_seq))
    row = conn.execute("SELECT n, last_input, last_seq, mac FROM seals ORDER BY n DESC LIMIT 1").fetchone()
    return End(last_seq, last_input, head, head_row, last_input_hash, last_record_hash,
               int(row[0]) if row else 0, bytes(row[3]) if row else base.hash,
               (int(row[1]), int(row[2])) if row else (base.input, base.seq))


def last_input_with(conn: sqlite3.Connection, key: str, floor: int) -> tuple[Any, ...] | None:
    """The row (id, ts, event) of the last input after ``floor`` whose JSON object has ``key``, or None."""
    row: tuple[Any, ...] | None = conn.execute(
        "SELECT id, ts, event FROM inputs WHERE id > ? AND json_extract(event, ?) IS NOT NULL "
        "ORDER BY id DESC LIMIT 1", (floor, f"$.{key}")).fetchone()
    return row
