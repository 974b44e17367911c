"""The table's durable journal: input events, the MQTT outbox, snapshots, metadata (SQLite).

How it works
------------
One SQLite file per table in WAL mode. Every input event of the round engine is appended
(:meth:`Journal.append_input`) and committed durably *before* its effects leave the process;
the engine's public records get the table's next gapless ``seq`` numbers in the *same*
transaction (:meth:`Journal.add_records`), so after a crash either both are there or neither::

    with journal.transaction():
        input_id = journal.append_input(to_json(event), ts=now)
        seqs = journal.add_records([{"ts": now, "type": r.type, **r.data} for r in records])
    # committed and fsynced here; now publish / drive devices

(:meth:`Journal.commit_event` does exactly that in one call.) The outbox body stored is the
exact JSON text published on ``events`` with ``seq`` first, so a repeat after a crash carries the
same ``seq`` and body. The publisher reads :meth:`Journal.undelivered` in ``seq`` order and calls
:meth:`Journal.mark_delivered` after each PUBACK; losing such a mark in a crash only causes a
repeat, so that commit skips the fsync.

Recovery: :meth:`Journal.latest_snapshot` (engine state saved at some input id, an opaque JSON
value of the engine's choosing) then :meth:`Journal.inputs_since` that id replays the rest; when
that snapshot is unusable the older ones (:meth:`Journal.snapshot_ids`, :meth:`Journal.snapshot_at`)
or a replay from the start. :meth:`Journal.prune_snapshots` keeps the newest few.

Durability: ``synchronous=FULL`` by default: each commit fsyncs the WAL (on the build VM about
0.4 ms back to back, 0.9-1.0 ms after an idle pause, as a card's commit is: ``benchmarks/latency.py``),
surviving power loss. ``NORMAL`` (WAL appended, fsync at checkpoints) survives a
``kill -9`` of the process but not a power cut; it is offered for benches only.

Secrecy: inputs contain every card, the hole card included, so the database and its ``-wal`` /
``-shm`` files are created with mode 0600 (the file is pre-created with ``os.open(..., 0o600)``
and the umask is 077 while SQLite creates its side files); an existing journal is chmod-ed back
to 0600 on open.

One writer: the journal is opened in SQLite's ``EXCLUSIVE`` locking mode and its write lock
is taken at once and held until :meth:`Journal.close` (or the process's end, ``kill -9``
included: the kernel drops the lock). A second program on the same journal (a second
``tablectl run`` on the same state directory) is refused at start with :class:`JournalError`
instead of interleaving its inputs and ``seq`` numbers with the first's. It also spares every commit the
file-lock calls and the shared-memory index a shared journal needs (the WAL index lives in this
process's memory; after a crash SQLite rebuilds it from the WAL on open).

Thread safety: one connection guarded by a lock, so the service may commit from a worker thread
(``asyncio.to_thread``) while the publisher reads on the event loop.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["InputRow", "Journal", "JournalError", "OutboxRow", "Snapshot"]

SCHEMA_VERSION = 1
_CHUNK = 512
#: committed outbox records kept in memory for the publisher (a window's worth and more)
RECENT_KEPT = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inputs (
    id    INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    event TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    seq       INTEGER PRIMARY KEY,
    input_id  INTEGER,
    body      TEXT    NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS snapshots (
    input_id INTEGER PRIMARY KEY,
    seq      INTEGER NOT NULL,
    ts       REAL    NOT NULL,
    state    TEXT    NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

Synchronous = Literal["FULL", "NORMAL"]


class JournalError(RuntimeError):
    """The journal cannot be opened or is not one of ours (path and reason in the message)."""


@dataclass(frozen=True, slots=True)
class InputRow:
    """One journaled input event: its id (gapless from 1), when it was written, its JSON object."""

    id: int
    ts: float
    event: dict[str, Any]


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One public event to publish: ``body`` is the exact JSON text, ``seq`` included."""

    seq: int
    body: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Engine state after input ``input_id`` (when the last record had ``seq``)."""

    input_id: int
    seq: int
    ts: float
    state: Any


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Journal:
    """A table's SQLite journal. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: Synchronous = "FULL") -> None:
        self.path = Path(path)
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.synchronous: Synchronous = synchronous
        self._lock = threading.RLock()
        self._depth = 0
        #: the newest committed outbox records, so the publisher reads what was just committed
        #: from memory instead of querying it back (``seq`` contiguous, oldest first)
        self._recent: deque[OutboxRow] = deque(maxlen=RECENT_KEPT)
        self._uncommitted: list[OutboxRow] = []
        self._conn = self._open()
        self._last_seq = int(self._conn.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])
        self._last_input = int(self._conn.execute("SELECT COALESCE(MAX(id), 0) FROM inputs").fetchone()[0])
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'delivered_upto'").fetchone()
        self._delivered = int(row[0]) if row else 0

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise JournalError(f"journal {self.path}: cannot open: {exc.strerror}") from exc
        os.close(fd)
        old_umask = os.umask(0o077)
        try:
            for suffix in ("", "-wal", "-shm"):
                side = Path(f"{self.path}{suffix}")
                if side.exists() and side.stat().st_mode & 0o077:
                    os.chmod(side, 0o600)
            # timeout=0: a journal held by another program is refused now, not after a wait
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
            try:
                conn.execute("PRAGMA locking_mode=EXCLUSIVE")  # before the first access (see the docstring)
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise JournalError(f"journal {self.path}: cannot switch to WAL mode (got {mode})")
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                conn.execute("PRAGMA foreign_keys=OFF")
                version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                if version > SCHEMA_VERSION:
                    raise JournalError(
                        f"journal {self.path}: schema version {version} is newer than this program's {SCHEMA_VERSION}"
                    )
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("BEGIN IMMEDIATE")  # the write lock, held from now on
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                conn.close()
                if getattr(exc, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                    raise JournalError(
                        f"journal {self.path}: in use by another program (one table service per journal; "
                        "is another tablectl running on this state directory?)"
                    ) from exc
                raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc
            except BaseException:
                conn.close()
                raise
        finally:
            os.umask(old_umask)
        return conn

    def close(self) -> None:
        """Checkpoint and close (the journal stays valid if this is never called)."""
        with self._lock:
            with suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one durable commit (nests: only the outermost one commits)."""
        with self._lock:
            outer = self._depth == 0
            saved = (self._last_seq, self._last_input, self._delivered)
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if outer:
                    self._uncommitted.clear()
                    self._conn.execute("ROLLBACK")
                    self._last_seq, self._last_input, self._delivered = saved
                raise
            self._depth -= 1
            if outer:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._uncommitted.clear()
                    self._last_seq, self._last_input, self._delivered = saved
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
                if self._uncommitted:
                    self._recent.extend(self._uncommitted)
                    self._uncommitted.clear()

    # -- inputs ----------------------------------------------------------------------------

    def append_input(self, event: Mapping[str, Any] | str, *, ts: float | None = None) -> int:
        """Journal one input event (a JSON object or its text); return its id (gapless from 1)."""
        text = event if isinstance(event, str) else _dumps(event)
        with self._lock, self.transaction():
            cur = self._conn.execute(
                "INSERT INTO inputs (ts, event) VALUES (?, ?)", (time.time() if ts is None else ts, text)
            )
            self._last_input = int(cur.lastrowid or 0)
            return self._last_input

    def inputs_since(self, input_id: int = 0) -> Iterator[InputRow]:
        """Inputs with id > ``input_id`` in order (read in chunks; safe for long journals)."""
        after = input_id
        while True:
            with self._lock:
                rows = self._conn.execute(
                    "SELECT id, ts, event FROM inputs WHERE id > ? ORDER BY id LIMIT ?", (after, _CHUNK)
                ).fetchall()
            for rid, ts, text in rows:
                yield InputRow(int(rid), float(ts), json.loads(text))
            if len(rows) < _CHUNK:
                return
            after = int(rows[-1][0])

    @property
    def last_input_id(self) -> int:
        return self._last_input

    # -- outbox ----------------------------------------------------------------------------

    def add_records(self, bodies: Sequence[Mapping[str, Any]], *, input_id: int | None = None) -> list[int]:
        """Give each public record the next ``seq`` and queue it; return the seqs.

        The stored body is ``{"seq": n, **body}`` as compact JSON (a ``seq`` in ``body`` is replaced).
        ``input_id`` defaults to the last input appended.
        """
        if not bodies:
            return []
        with self._lock, self.transaction():
            first = self._last_seq + 1
            src = self._last_input if input_id is None else input_id
            rows = []
            for offset, body in enumerate(bodies):
                seq = first + offset
                rows.append((seq, src, _dumps({"seq": seq, **{k: v for k, v in body.items() if k != "seq"}})))
            self._conn.executemany("INSERT INTO outbox (seq, input_id, body) VALUES (?, ?, ?)", rows)
            self._uncommitted.extend(OutboxRow(seq, body) for seq, _, body in rows)
            self._last_seq = first + len(bodies) - 1
            return list(range(first, self._last_seq + 1))

    def commit_event(
        self, event: Mapping[str, Any] | str, records: Sequence[Mapping[str, Any]], *, ts: float | None = None
    ) -> tuple[int, list[int]]:
        """Append an input and its records in one durable commit; return (input id, seqs)."""
        with self.transaction():
            input_id = self.append_input(event, ts=ts)
            return input_id, self.add_records(records, input_id=input_id)

    @property
    def last_seq(self) -> int:
        """The highest ``seq`` given so far (0 when none): the next record gets ``last_seq + 1``."""
        return self._last_seq

    @property
    def delivered_upto(self) -> int:
        """Every record with ``seq <=`` this has been acknowledged by the broker."""
        return self._delivered

    def undelivered(self, after_seq: int | None = None, *, limit: int | None = None) -> Iterator[OutboxRow]:
        """Records not yet delivered with ``seq > after_seq``, in ``seq`` order."""
        after = self._delivered if after_seq is None else max(after_seq, 0)
        with self._lock:
            # Delivered records are always a prefix (mark_delivered), so "not delivered" is
            # "after delivered_upto"; the newest ones come from memory when it holds them all.
            start = max(after, self._delivered) + 1
            recent = self._recent
            cached = (list(itertools.islice(recent, start - recent[0].seq, None))
                      if recent and recent[0].seq <= start and self._depth == 0 else None)
        if cached is not None:
            yield from cached if limit is None else cached[:limit]
            return
        remaining = limit
        while remaining is None or remaining > 0:
            n = _CHUNK if remaining is None else min(_CHUNK, remaining)
            with self._lock:
                rows = self._conn.execute(
                    "SELECT seq, body FROM outbox WHERE seq > ? AND delivered = 0 ORDER BY seq LIMIT ?", (after, n)
                ).fetchall()
            for seq, body in rows:
                yield OutboxRow(int(seq), str(body))
            if remaining is not None:
                remaining -= len(rows)
            if len(rows) < n:
                return
            after = int(rows[-1][0])

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[OutboxRow]:
        """Every stored record (delivered or not) in ``[from_seq, to_seq]``: the public event log."""
        after = from_seq - 1
        last = self._last_seq if to_seq is None else to_seq
        while after < last:
            with self._lock:
                rows = self._conn.execute(
                    "SELECT seq, body FROM outbox WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?",
                    (after, last, _CHUNK),
                ).fetchall()
            if not rows:
                return
            for seq, body in rows:
                yield OutboxRow(int(seq), str(body))
            after = int(rows[-1][0])

    def mark_delivered(self, upto_seq: int) -> None:
        """The broker acknowledged every record up to ``upto_seq``.

        Not fsynced on its own (the next durable commit carries it): a mark lost in a crash only
        makes the publisher send that record again, with the same ``seq`` and body.
        """
        with self._lock:
            if upto_seq <= self._delivered:
                return
            upto = min(upto_seq, self._last_seq)
            nested = self._depth > 0
            if not nested:
                self._conn.execute("PRAGMA synchronous=OFF")
            try:
                with self.transaction():
                    self._conn.execute(
                        "UPDATE outbox SET delivered = 1 WHERE seq > ? AND seq <= ? AND delivered = 0",
                        (self._delivered, upto),
                    )
                    self._set_meta("delivered_upto", str(upto))
                    self._delivered = upto
            finally:
                if not nested:
                    self._conn.execute(f"PRAGMA synchronous={self.synchronous}")

    def prune_delivered(self, keep: int) -> int:
        """Delete delivered records older than the last ``keep`` seqs; return how many went."""
        with self._lock, self.transaction():
            cur = self._conn.execute(
                "DELETE FROM outbox WHERE delivered = 1 AND seq <= ?", (min(self._delivered, self._last_seq - keep),)
            )
            return int(cur.rowcount)

    # -- snapshots -------------------------------------------------------------------------

    def save_snapshot(self, state: Any, *, input_id: int | None = None, ts: float | None = None) -> None:
        """Store engine state (JSON-ready) as of ``input_id`` (default: the last input)."""
        iid = self._last_input if input_id is None else input_id
        with self._lock, self.transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO snapshots (input_id, seq, ts, state) VALUES (?, ?, ?, ?)",
                (iid, self._last_seq, time.time() if ts is None else ts, _dumps(state)),
            )

    def latest_snapshot(self) -> Snapshot | None:
        """The newest snapshot, or None; :class:`JournalError` if its stored text is not JSON."""
        ids = self.snapshot_ids()
        return self.snapshot_at(ids[0]) if ids else None

    def snapshot_ids(self) -> list[int]:
        """The input ids snapshots were saved at, newest first (recovery tries them in turn)."""
        with self._lock:
            rows = self._conn.execute("SELECT input_id FROM snapshots ORDER BY input_id DESC").fetchall()
        return [int(r[0]) for r in rows]

    def snapshot_at(self, input_id: int) -> Snapshot:
        """The snapshot saved at ``input_id``; :class:`JournalError` if there is none or it does not decode."""
        with self._lock:
            row = self._conn.execute(
                "SELECT input_id, seq, ts, state FROM snapshots WHERE input_id = ?", (input_id,)
            ).fetchone()
        if row is None:
            raise JournalError(f"journal {self.path}: no snapshot at input {input_id}")
        try:
            state = json.loads(row[3])
        except (TypeError, ValueError) as exc:
            raise JournalError(f"journal {self.path}: snapshot at input {input_id} is not JSON: {exc}") from exc
        return Snapshot(int(row[0]), int(row[1]), float(row[2]), state)

    def prune_snapshots(self, keep: int = 2) -> int:
        """Delete all but the newest ``keep`` snapshots (at least one is kept); return how many went."""
        with self._lock, self.transaction():
            cur = self._conn.execute(
                "DELETE FROM snapshots WHERE input_id NOT IN "
                "(SELECT input_id FROM snapshots ORDER BY input_id DESC LIMIT ?)",
                (max(keep, 1),),
            )
            return int(cur.rowcount)

    # -- metadata --------------------------------------------------------------------------

    def _set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def set_meta(self, key: str, value: str) -> None:
        """Store a string (e.g. ``table_opened_at``, ``deck_set_opened_at``); durable like an input."""
        with self._lock, self.transaction():
            self._set_meta(key, value)

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {str(k): str(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}
