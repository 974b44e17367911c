"""The central recorder's database: every table's published events, gapless per table, with the chain heads
and ratings the tables published, over SQLite (a file) or PostgreSQL (psycopg 3) behind one API.

How it works
------------
:func:`open_store` takes a URL: ``postgresql://...`` (or ``postgres://``) opens PostgreSQL, anything else is
an SQLite file path (``sqlite:///PATH`` works too). Both backends run the same SQL (written with ``?``
placeholders; PostgreSQL's ``%s`` are put in: :mod:`controller.recorder.backends`), in explicit transactions, so a crash
never leaves half a move.

Per table, ``tables.last_seq`` is the end of the gapless prefix held in ``events``. :meth:`add_event`::

    seq <= last_seq       -> compared byte for byte with the stored body: "repeat" (dropped) or "conflict"
    seq == last_seq + 1   -> stored; then every ``held`` row that now follows without a gap moves into
                             ``events`` in the same transaction: "stored"
    seq >  last_seq + 1   -> kept in ``held`` (persisted) until the gap fills: "held"; a second body at a
                             held seq is compared the same way ("repeat" / "conflict"), never overwritten

A table's record is the record of one journal. A table that publishes a journal it took on purpose (its
``journal_started``, seq 1 of a journal created on purpose, or its ``journal_adopted``: both name the journal's id,
and the table's start witnesses refuse a journal swapped without them) while the recorder holds another journal of
it starts a new record of the table: the old one is kept whole, renamed ``<table_id>@<journal_id>`` (its events,
heads, held events and ratings; :meth:`records` lists them, every reader takes that name), and the new record
begins at that event's seq ("new_journal"). Any other body at a seq the recorder holds stays a "conflict".

``heads`` keeps the chain head each table published with its ``state`` at that ``seq``
(:meth:`note_state`); ``tables.head_seq``/``head`` is the latest of those at or below ``last_seq``, the
position a table's start may be checked against (``<prefix>/recorder/<table_id>``). ``ratings`` are
upserted by ``(table_id, rating_id)`` while one rating grows (an open copy by a later one, then its ended copy),
an open copy never replacing an ended one; another rating's body under a held id (another player or start, or
another ended body) is a "conflict": never overwritten, the first kept.

Schema (version :data:`SCHEMA_VERSION`, in ``meta``; a version-1 database is migrated by its first writer:
:mod:`controller.recorder.dealer_column`)::

    meta    (key PK, value)                      -- schema = tablectl-recorder, version = 2
    tables  (table_id PK, pit, journal_id, last_seq, head_seq, head, state_seq, updated_at)
    events  (table_id, seq, ts, type, body, received_at, dealer_id)   PK (table_id, seq): the gapless prefix only
    held    (table_id, seq, ts, type, body, received_at, dealer_id)   PK (table_id, seq): beyond a gap
    heads   (table_id, seq, journal_id, head)              PK (table_id, seq)
    ratings (table_id, rating_id, player, spot, started, ended, body)   PK (table_id, rating_id)

A database of another schema, another version, or not a recorder's at all is refused in one line
(:class:`StoreRefused`), as is a PostgreSQL URL naming a database, user or password the server does not have;
a database that cannot be reached (PostgreSQL down or restarting, an SQLite file
locked past the busy timeout) raises :class:`StoreUnavailable`, which a writer retries on: the store opens a
new connection at its next call.

:meth:`RecorderStore.batch` groups calls in one transaction (one commit). Within a transaction each table's
``tables`` row is locked and read once (a batch told its tables locks them all in one query, in table order) and
its prefix written once, at the end or before a read within it; the writes whose result is not needed (an event
at ``last_seq + 1``, a held event at a seq not held, the prefixes) are sent without waiting: consecutive ones of
one statement as one ``executemany``, and PostgreSQL runs in pipeline mode (:mod:`controller.recorder.backends`).
A batch of events that follow their tables' prefixes then costs PostgreSQL about two round trips, not three an
event (an event alone: two, not five); still waiting for a read each: a repeat, an event beyond a gap at a seq
that may be held, a gap filled with events held before the transaction, a ``state`` with a head.
Figures: docs/floor.md, "The central record" (``benchmarks/recorder_store.py``) and the recorder's catch-up
(``benchmarks/recorder_catchup.py``). A database that is not the recorder's writer (``create=False``: the
readers) reads SQLite in deferred transactions, beside the writer.

Thread safety: one connection guarded by a lock; the recorder service may call from a worker thread.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from controller.recorder.backends import Backend as _Backend
from controller.recorder.backends import Postgres, Sqlite, is_postgres_url, redact
from controller.recorder.backends import Tx as _Tx
from controller.recorder.dealer_column import DEALER_INDEX, dealer_of, migrate_from_1
from controller.recorder.errors import BadRecord, StoreError, StoreRefused, StoreUnavailable

__all__ = [
    "JOURNAL_STARTS",
    "RETIRED",
    "SCHEMA_NAME",
    "SCHEMA_VERSION",
    "BadRecord",
    "Head",
    "Position",
    "Rating",
    "RecorderStore",
    "StoreError",
    "StoreRefused",
    "StoreUnavailable",
    "StoredEvent",
    "TableRecord",
    "is_postgres_url",
    "open_store",
    "redact",
]

SCHEMA_NAME = "tablectl-recorder"
SCHEMA_VERSION = 2
#: events read per query when iterating a table's record
_PAGE = 2000

EventOutcome = Literal["stored", "repeat", "held", "conflict", "new_journal"]
#: the events a table publishes when it takes a journal on purpose, each naming it (``journal_id``)
JOURNAL_STARTS = frozenset({"journal_started", "journal_adopted"})
#: between a table's id and its old journal's in the name of a record kept after a new journal (never in a table id)
RETIRED = "@"
StateOutcome = Literal["stored", "repeat", "conflict"]
RatingOutcome = Literal["stored", "repeat", "stale", "conflict"]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One published event as the recorder holds it; ``body`` is the exact JSON text the table published."""

    seq: int
    ts: float
    type: str
    body: str
    received_at: float


@dataclass(frozen=True, slots=True)
class Head:
    """The journal's chain head a table published with its ``state`` at ``seq``."""

    seq: int
    journal_id: str | None
    head: str


@dataclass(frozen=True, slots=True)
class TableRecord:
    """A table as the recorder knows it: its gapless prefix (``last_seq``) and the latest head within it."""

    table_id: str
    pit: str | None
    journal_id: str | None
    last_seq: int
    head_seq: int | None
    head: str | None
    state_seq: int | None
    updated_at: float


@dataclass(frozen=True, slots=True)
class Position:
    """What the recorder vouches for a table (``<prefix>/recorder/<table_id>`` without its ``ts``)."""

    table_id: str
    seq: int
    journal_id: str | None
    head_seq: int | None
    head: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "seq": self.seq, "journal_id": self.journal_id,
                "head_seq": self.head_seq, "head": self.head}


@dataclass(frozen=True, slots=True)
class Rating:
    """A rating a table published, with the table it ran at; ``body`` is the published JSON, parsed."""

    table_id: str
    rating_id: str
    player: str
    spot: int | None
    started: float
    ended: float | None
    body: dict[str, Any]


# ---------------------------------------------------------------------------------------------------------
# the schema

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS tables (table_id TEXT PRIMARY KEY, pit TEXT, journal_id TEXT,"
    " last_seq BIGINT NOT NULL DEFAULT 0, head_seq BIGINT, head TEXT, state_seq BIGINT,"
    " updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS events (table_id TEXT NOT NULL, seq BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL,"
    " type TEXT NOT NULL, body TEXT NOT NULL, received_at DOUBLE PRECISION NOT NULL, dealer_id TEXT,"
    " PRIMARY KEY (table_id, seq))",
    "CREATE INDEX IF NOT EXISTS events_by_time ON events (table_id, ts)",
    DEALER_INDEX,
    "CREATE INDEX IF NOT EXISTS events_by_type ON events (table_id, type, seq)",
    "CREATE TABLE IF NOT EXISTS held (table_id TEXT NOT NULL, seq BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL,"
    " type TEXT NOT NULL, body TEXT NOT NULL, received_at DOUBLE PRECISION NOT NULL, dealer_id TEXT,"
    " PRIMARY KEY (table_id, seq))",
    "CREATE TABLE IF NOT EXISTS heads (table_id TEXT NOT NULL, seq BIGINT NOT NULL, journal_id TEXT,"
    " head TEXT NOT NULL, PRIMARY KEY (table_id, seq))",
    "CREATE TABLE IF NOT EXISTS ratings (table_id TEXT NOT NULL, rating_id TEXT NOT NULL, player TEXT NOT NULL,"
    " spot BIGINT, started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION, body TEXT NOT NULL,"
    " PRIMARY KEY (table_id, rating_id))",
    "CREATE INDEX IF NOT EXISTS ratings_by_player ON ratings (player, started)",
)
_TABLES = {"meta", "tables", "events", "held", "heads", "ratings"}


def _check_schema(db: _Backend, *, create: bool) -> int:
    """The database's schema version, once checked (a version-1 database migrated when ``create``)."""
    names = db.table_names()
    if not names:
        if not create:
            raise StoreRefused(f"{db.where}: an empty database, not a recorder's")
        with db.transaction() as tx:
            for statement in _SCHEMA:
                tx.run(statement)
            tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                   ("schema", SCHEMA_NAME))
            tx.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                   ("version", str(SCHEMA_VERSION)))
        names = db.table_names()
    if "meta" not in names:
        raise StoreRefused(f"{db.where}: not a recorder's database (no meta table)")
    with db.transaction() as tx:
        meta = dict(tx.rows("SELECT key, value FROM meta"))
    if meta.get("schema") != SCHEMA_NAME:
        raise StoreRefused(f"{db.where}: not a recorder's database (its meta names no {SCHEMA_NAME} schema)")
    if meta.get("version") == "1" and create and not (_TABLES - names):
        with db.transaction() as tx:
            migrate_from_1(tx)
        meta["version"] = str(SCHEMA_VERSION)
    if meta.get("version") not in (str(SCHEMA_VERSION), "1"):  # a reader reads version 1 as it is
        raise StoreRefused(f"{db.where}: recorder schema version {meta.get('version')}, "
                           f"this tablectl reads version {SCHEMA_VERSION}")
    missing = _TABLES - names
    if missing:
        raise StoreRefused(f"{db.where}: not a whole recorder's database (missing {', '.join(sorted(missing))})")
    if create:  # a writer adds the indexes a database of this version made before them lacks (they only speed)
        with db.transaction() as tx:
            for statement in _SCHEMA:
                if statement.startswith("CREATE INDEX"):
                    tx.run(statement)
    return int(str(meta["version"]))


# ---------------------------------------------------------------------------------------------------------
# the store


def _event_fields(table_id: str, seq: int, body: str | bytes) -> tuple[str, float, str, str | None]:
    """The body as text, its ``ts``, ``type`` and dealer of record; a body that is not a table's published event is
    refused."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRecord(f"{table_id} seq {seq}: the body is not UTF-8") from None
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        raise BadRecord(f"{table_id} seq {seq}: the body is not JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise BadRecord(f"{table_id} seq {seq}: the body is not a JSON object")
    if "seq" in data and data["seq"] != seq:
        raise BadRecord(f"{table_id} seq {seq}: the body says seq {data['seq']!r}")
    ts, kind = data.get("ts"), data.get("type")
    if isinstance(ts, bool) or not isinstance(ts, int | float):
        raise BadRecord(f"{table_id} seq {seq}: the body has no numeric ts")
    if not isinstance(kind, str) or not kind:
        raise BadRecord(f"{table_id} seq {seq}: the body has no type")
    return body, float(ts), kind, dealer_of(kind, data)


def _table_id_ok(table_id: object) -> bool:
    return isinstance(table_id, str) and re.fullmatch(r"[A-Za-z0-9._-]{1,64}", table_id) is not None


def _check_table(table_id: str) -> None:
    if not _table_id_ok(table_id):
        raise BadRecord(f"table id {table_id!r}: 1 to 64 of A-Z a-z 0-9 . _ -")


def _check_seq(table_id: str, seq: int) -> None:
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise BadRecord(f"{table_id}: seq {seq!r} is not a positive integer")


@dataclass(slots=True)
class _Row:
    """A table's ``tables`` row as the writing transaction holds it (locked), with what it moved not yet written."""

    last: int
    state_seq: int | None
    #: the seqs the table holds beyond a gap when known exactly (this transaction saw there were none, then
    #: held these), else None (some were held before it: each is looked for in ``held``)
    held: set[int] | None
    #: the prefix moved (``last_seq`` and its head to write, with this ``updated_at``), else None
    moved: float | None = None

    @property
    def holding(self) -> bool:
        return self.held is None or bool(self.held)


def _lock_key(table_id: str) -> int:
    """The PostgreSQL advisory lock key of a table: 64 bits of its id's SHA-256 (a collision only makes two
    tables share a lock; keys are taken in their own order, so it cannot make a circle)."""
    return int.from_bytes(hashlib.sha256(table_id.encode()).digest()[:8], "big", signed=True)


class _Rows:
    """The ``tables`` rows a writing transaction locked and read, each read once and its moved prefix written
    once (at the end of the transaction, or before a read within it), not once an event: a PostgreSQL writer's
    pace is its round trips."""

    #: a table's row, locked (PostgreSQL: ``FOR UPDATE``; SQLite's ``BEGIN IMMEDIATE`` locks the file)
    _READ = ("SELECT table_id, last_seq, state_seq, EXISTS (SELECT 1 FROM held WHERE held.table_id = tables.table_id)"
             " FROM tables WHERE table_id IN ({}) ORDER BY table_id{}")
    #: the latest head at or below the prefix's end, set with it (one statement)
    _SET_PREFIX = ("UPDATE tables SET last_seq = ?, head_seq = (SELECT MAX(seq) FROM heads WHERE heads.table_id = ?"
                   " AND seq <= ?), head = (SELECT head FROM heads WHERE heads.table_id = ? AND seq <= ?"
                   " ORDER BY seq DESC LIMIT 1), updated_at = ? WHERE table_id = ?")

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}

    def _read(self, tx: _Tx, table_ids: list[str]) -> None:
        for i in range(0, len(table_ids), 500):
            chunk = table_ids[i:i + 500]
            for r in tx.rows(self._READ.format(", ".join("?" * len(chunk)), tx.for_update), chunk):
                self._rows[str(r[0])] = _Row(int(r[1]), None if r[2] is None else int(r[2]), None if r[3] else set())

    _MAKE = "INSERT INTO tables (table_id, last_seq, updated_at) VALUES (?, 0, ?) ON CONFLICT (table_id) DO NOTHING"

    def lock(self, tx: _Tx, table_ids: Iterable[str]) -> None:
        """Lock these tables for the transaction and read the rows of those that exist, in one query.

        PostgreSQL: a transaction-scoped advisory lock per table first, taken in the order of their keys, as
        every writer takes them, so two writers at once never wait for each other in a circle, whether a row
        exists yet or not. Row locks alone were not enough: the row of a new table is made at its first event,
        in call order, and two writers each making one the other then wanted deadlocked ('deadlock detected'
        in a fresh-clone CI run; 17 times in 25 runs of its test in a loop). SQLite: ``BEGIN IMMEDIATE``
        already holds the whole file."""
        wanted = sorted({t for t in table_ids if _table_id_ok(t)} - self._rows.keys())
        if not wanted:
            return
        if tx.for_update:
            for key in sorted({_lock_key(t) for t in wanted}):
                tx.send("SELECT pg_advisory_xact_lock(?)", (key,))
        self._read(tx, wanted)

    def get(self, tx: _Tx, table_id: str, now: float) -> _Row:
        """The table's row, locked; made first when new."""
        row = self._rows.get(table_id)
        if row is None:
            self._read(tx, [table_id])
            if table_id not in self._rows:
                tx.send(self._MAKE, (table_id, now))
                self._read(tx, [table_id])
            row = self._rows[table_id]
        return row

    def write(self, tx: _Tx, table_id: str | None = None) -> None:
        """Send the moved prefixes (of ``table_id`` only, when given)."""
        for t in sorted(self._rows) if table_id is None else [table_id]:
            row = self._rows.get(t)
            if row is not None and row.moved is not None:
                tx.send(self._SET_PREFIX, (row.last, t, row.last, t, row.last, row.moved, t))
                row.moved = None

    def forget(self, table_id: str) -> None:
        self._rows.pop(table_id, None)


class RecorderStore:
    """The recorder's database: the writer's methods (``add_event``, ``note_state``, ``add_rating``) and the
    readers' (``tables``, ``events``, ``heads``, ``ratings``, ``position``, ``gaps``)."""

    def __init__(self, backend: _Backend, *, clock: Callable[[], float] = time.time,
                 version: int = SCHEMA_VERSION) -> None:
        self._db = backend
        #: the database's schema version (1: a reader's of a database no writer has migrated yet)
        self.version = version
        self._lock = threading.Lock()
        #: the transaction of :meth:`batch`, the thread that holds it, and the table rows it locked
        self._batch: tuple[_Tx, int, _Rows] | None = None
        self._clock = clock

    @property
    def where(self) -> str:
        """The database, for messages (a PostgreSQL URL without its password)."""
        return self._db.where

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> RecorderStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[_Tx]:
        """A transaction to read in (and to write ratings): inside this thread's batch, its transaction, with
        the prefixes it moved written first."""
        batch = self._batch
        if batch is not None and batch[1] == threading.get_ident():
            batch[2].write(batch[0])
            yield batch[0]
            return
        with self._lock, self._db.transaction() as tx:
            yield tx

    @contextmanager
    def _writing(self) -> Iterator[tuple[_Tx, _Rows]]:
        """The transaction to write events and states in (this thread's batch, or one of its own) and the table
        rows it locked; their moved prefixes are written before its commit."""
        batch = self._batch
        if batch is not None and batch[1] == threading.get_ident():
            yield batch[0], batch[2]
            return
        with self._lock, self._db.transaction() as tx:
            rows = _Rows()
            yield tx, rows
            rows.write(tx)

    @contextmanager
    def batch(self, tables: Iterable[str] = ()) -> Iterator[None]:
        """Every call made inside, on this thread, in one transaction: one commit for many events (the
        recorder's catch-up is bound by commits, each an fsync, and by round trips). All or nothing: an error
        rolls back every write of the batch, and the caller tries them again (outcomes it kept are void).

        ``tables``: the tables the batch will write, their rows locked and read at once (one query) instead of
        each at its first event; every table's row is read once a batch and its prefix written once, at the end
        (or before a read within the batch)."""
        with self._lock, self._db.transaction(pipelined=True) as tx:
            rows = _Rows()
            rows.lock(tx, tables)
            self._batch = (tx, threading.get_ident(), rows)
            try:
                yield
                rows.write(tx)
            finally:
                self._batch = None

    # -- writer ------------------------------------------------------------------------------------------

    _INSERT_EVENT = ("INSERT INTO events (table_id, seq, ts, type, body, received_at, dealer_id)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?)")

    def add_event(self, table_id: str, seq: int, body: str | bytes) -> EventOutcome:
        """Record one published event (see the module's docstring for the outcomes).

        An event at ``last_seq + 1`` is inserted without a read first (sent: on PostgreSQL it waits no round trip):
        the prefix is gapless, so nothing is there, and the primary key refuses a row put there behind the
        store's back, failing the transaction. A repeat, or an event beyond a gap at a seq held before, reads
        the stored body to compare it."""
        _check_table(table_id)
        _check_seq(table_id, seq)
        text, ts, kind, dealer = _event_fields(table_id, seq, body)
        now = self._clock()
        with self._writing() as (tx, rows):
            row = rows.get(tx, table_id, now)
            if kind in JOURNAL_STARTS and (row.last or row.holding) and self._start_record(tx, rows, table_id, seq,
                                                                                           text):
                row = rows.get(tx, table_id, now)  # the new record's row, at seq - 1
                tx.send(self._INSERT_EVENT, (table_id, seq, ts, kind, text, now, dealer))
                row.last, row.moved = seq, now
                return "new_journal"
            if seq <= row.last:
                stored = tx.rows("SELECT body FROM events WHERE table_id = ? AND seq = ?", (table_id, seq))
                return "repeat" if stored and stored[0][0] == text else "conflict"
            if seq > row.last + 1:
                if row.held is None or seq in row.held:
                    held = tx.rows("SELECT body FROM held WHERE table_id = ? AND seq = ?", (table_id, seq))
                    if held:
                        return "repeat" if held[0][0] == text else "conflict"
                tx.send("INSERT INTO held (table_id, seq, ts, type, body, received_at, dealer_id)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)", (table_id, seq, ts, kind, text, now, dealer))
                if row.held is not None:
                    row.held.add(seq)
                return "held"
            tx.send(self._INSERT_EVENT, (table_id, seq, ts, kind, text, now, dealer))
            row.last = self._move_held(tx, table_id, row, seq) if row.holding else seq
            row.moved = now
            return "stored"

    def _start_record(self, tx: _Tx, rows: _Rows, table_id: str, seq: int, text: str) -> bool:
        """Start a new record of the table for a journal-start event when it names a journal other than the one
        the record holds and is not the body already held at its seq (a record whose journal is not known yet, no
        ``state`` seen, only for a body that conflicts with what it holds): the old record kept under its
        journal's name, the table's row cleared for the journal the event names, to begin at ``seq``. True when
        it did."""
        named = json.loads(text).get("journal_id")
        if not isinstance(named, str) or not re.fullmatch(r"[0-9a-f]{16,64}", named):
            return False
        held = tx.rows("SELECT body FROM events WHERE table_id = ? AND seq = ? UNION ALL"
                       " SELECT body FROM held WHERE table_id = ? AND seq = ?", (table_id, seq, table_id, seq))
        if held and held[0][0] == text:
            return False  # a repeat
        current = tx.rows("SELECT journal_id FROM tables WHERE table_id = ?", (table_id,))[0][0]
        if current == named or (current is None and not held):
            return False
        rows.write(tx, table_id)  # the old record kept as it stands
        name = f"{table_id}{RETIRED}{current or 'unnamed'}"
        n = 1
        while tx.rows("SELECT 1 FROM tables WHERE table_id = ?", (name,)):
            n += 1
            name = f"{table_id}{RETIRED}{current or 'unnamed'}.{n}"
        tx.run("INSERT INTO tables (table_id, pit, journal_id, last_seq, head_seq, head, state_seq, updated_at)"
               " SELECT ?, pit, journal_id, last_seq, head_seq, head, state_seq, updated_at FROM tables"
               " WHERE table_id = ?", (name, table_id))
        for kept in ("events", "held", "ratings"):
            tx.run(f"UPDATE {kept} SET table_id = ? WHERE table_id = ?", (name, table_id))
        # heads the new journal's states left before this event stay with the new record
        tx.run("UPDATE heads SET table_id = ? WHERE table_id = ? AND (journal_id IS NULL OR journal_id <> ?)",
               (name, table_id, named))
        tx.run("UPDATE tables SET journal_id = ?, last_seq = ?, head_seq = NULL, head = NULL, state_seq = NULL,"
               " updated_at = ? WHERE table_id = ?", (named, seq - 1, self._clock(), table_id))
        rows.forget(table_id)  # read again: the new record's
        return True

    def _move_held(self, tx: _Tx, table_id: str, row: _Row, last: int) -> int:
        """Move the held rows that now follow ``last`` without a gap into ``events``; the new end of the prefix.
        The held seqs known exactly (``row.held``) are not read."""
        while True:
            if row.held is not None:
                run_end = last
                while run_end + 1 in row.held:
                    run_end += 1
                row.held.difference_update(range(last + 1, run_end + 1))
            else:
                seqs = [int(r[0]) for r in tx.rows(
                    "SELECT seq FROM held WHERE table_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                    (table_id, last, _PAGE))]
                run_end = last
                for s in seqs:
                    if s != run_end + 1:
                        break
                    run_end = s
                if run_end == last and len(seqs) < _PAGE:
                    row.held = set(seqs)  # every held seq beyond the prefix: known from now on
            if run_end == last:
                return last
            tx.send("INSERT INTO events (table_id, seq, ts, type, body, received_at, dealer_id) SELECT table_id, seq,"
                    " ts, type, body, received_at, dealer_id FROM held WHERE table_id = ? AND seq > ? AND seq <= ?",
                    (table_id, last, run_end))
            tx.send("DELETE FROM held WHERE table_id = ? AND seq > ? AND seq <= ?", (table_id, last, run_end))
            last = run_end

    def note_state(self, table_id: str, seq: int, journal_id: str | None, head: str | None,
                   pit: str | None) -> StateOutcome:
        """Record what a table's ``state`` at ``seq`` said: its journal, chain head and pit. A second, different
        head at a seq already noted is a ``"conflict"`` and is not stored."""
        _check_table(table_id)
        _check_seq(table_id, seq)
        for name, value in (("journal_id", journal_id), ("head", head), ("pit", pit)):
            if value is not None and not isinstance(value, str):
                raise BadRecord(f"{table_id} seq {seq}: state {name} {value!r} is not a string")
        if head is not None and not re.fullmatch(r"[0-9a-f]{16,128}", head):
            raise BadRecord(f"{table_id} seq {seq}: state head {head!r} is not a hex hash")
        now = self._clock()
        with self._writing() as (tx, rows):
            row = rows.get(tx, table_id, now)
            outcome: StateOutcome = "stored"
            if head is not None:
                if tx.run("INSERT INTO heads (table_id, seq, journal_id, head) VALUES (?, ?, ?, ?)"
                          " ON CONFLICT (table_id, seq) DO NOTHING", (table_id, seq, journal_id, head)):
                    if seq <= row.last:  # only a head newly stored may be the latest within the prefix
                        row.moved = now
                else:
                    known = tx.rows("SELECT journal_id, head FROM heads WHERE table_id = ? AND seq = ?",
                                    (table_id, seq))
                    outcome = "repeat" if (known[0][0], known[0][1]) == (journal_id, head) else "conflict"
            newest = row.state_seq is None or seq >= row.state_seq
            if newest and outcome != "conflict":
                tx.send("UPDATE tables SET pit = ?, journal_id = ?, state_seq = ?, updated_at = ? WHERE table_id = ?",
                        (pit, journal_id, seq, now, table_id))
                row.state_seq = seq
            return outcome

    def add_rating(self, table_id: str, body: str | bytes) -> RatingOutcome:
        """Upsert one rating a table published (``ratings`` or one of ``ratings/open``). An open copy arriving
        after the rating ended (a retained message read again) is ``"stale"`` and changes nothing; a body that is
        not the held rating's (another player or start, or an ended rating ended otherwise) is ``"conflict"``
        and changes nothing either: a rating is never lost under another's id."""
        _check_table(table_id)
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise BadRecord(f"{table_id}: a rating that is not JSON ({e.msg})") from None
        if not isinstance(data, dict):
            raise BadRecord(f"{table_id}: a rating that is not a JSON object")
        rating_id, player, spot = data.get("rating_id"), data.get("player"), data.get("spot")
        started, ended = data.get("started"), data.get("ended")
        if not isinstance(rating_id, str) or not rating_id:
            raise BadRecord(f"{table_id}: a rating without rating_id")
        if not isinstance(player, str) or not player:
            raise BadRecord(f"{table_id} rating {rating_id}: no player")
        if spot is not None and (isinstance(spot, bool) or not isinstance(spot, int)):
            raise BadRecord(f"{table_id} rating {rating_id}: spot {spot!r} is not a number")
        for name, value in (("started", started), ("ended", ended)):
            if (value is None and name == "started") or (
                    value is not None and (isinstance(value, bool) or not isinstance(value, int | float))):
                raise BadRecord(f"{table_id} rating {rating_id}: {name} {value!r} is not a time")
        with self._tx() as tx:
            known = tx.rows("SELECT ended, body, player, started FROM ratings WHERE table_id = ? AND rating_id = ?",
                            (table_id, rating_id))
            if known and known[0][1] == text:
                return "repeat"
            if known and (known[0][2] != player or float(known[0][3]) != float(started)):  # type: ignore[arg-type]
                return "conflict"
            if known and known[0][0] is not None:
                return "stale" if ended is None else "conflict"
            tx.run("INSERT INTO ratings (table_id, rating_id, player, spot, started, ended, body)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, rating_id) DO UPDATE SET"
                   " player = excluded.player, spot = excluded.spot, started = excluded.started,"
                   " ended = excluded.ended, body = excluded.body",
                   (table_id, rating_id, player, spot, float(started),  # type: ignore[arg-type]
                    None if ended is None else float(ended), text))
            return "stored"

    # -- readers ---------------------------------------------------------------------------------------

    def position(self, table_id: str) -> Position | None:
        """The gapless prefix's end and the latest head within it; ``None`` for a table never recorded."""
        with self._tx() as tx:
            rows = tx.rows("SELECT last_seq, journal_id, head_seq, head FROM tables WHERE table_id = ?", (table_id,))
        if not rows:
            return None
        last, journal_id, head_seq, head = rows[0]
        return Position(table_id, int(last), journal_id, None if head_seq is None else int(head_seq), head)

    def gaps(self, table_id: str) -> list[tuple[int, int]]:
        """The missing seq ranges ``(from, to)`` below the highest held event (none when nothing is held)."""
        with self._tx() as tx:
            rows = tx.rows("SELECT last_seq FROM tables WHERE table_id = ?", (table_id,))
            if not rows:
                return []
            held = [int(r[0]) for r in tx.rows("SELECT seq FROM held WHERE table_id = ? ORDER BY seq", (table_id,))]
        gaps: list[tuple[int, int]] = []
        expected = int(rows[0][0]) + 1
        for s in held:
            if s > expected:
                gaps.append((expected, s - 1))
            expected = s + 1
        return gaps

    _RECORD = "SELECT table_id, pit, journal_id, last_seq, head_seq, head, state_seq, updated_at FROM tables"

    def _records(self, where: str, params: tuple[Any, ...]) -> list[TableRecord]:
        with self._tx() as tx:
            rows = tx.rows(f"{self._RECORD} WHERE {where} ORDER BY table_id", params)
        return [TableRecord(str(r[0]), r[1], r[2], int(r[3]), None if r[4] is None else int(r[4]), r[5],
                            None if r[6] is None else int(r[6]), float(r[7])) for r in rows]

    def tables(self) -> list[TableRecord]:
        """Every table's current record (the records kept after a new journal: :meth:`records`)."""
        return self._records("table_id NOT LIKE ?", (f"%{RETIRED}%",))

    def table(self, table_id: str) -> TableRecord | None:
        """A table's current record, or a kept one by its name (``t01@<journal_id>``)."""
        found = self._records("table_id = ?", (table_id,))
        return found[0] if found else None

    def records(self, table_id: str) -> list[TableRecord]:
        """The records of a table kept after it started a new journal, each named ``<table_id>@<journal_id>``."""
        escaped = table_id.replace("!", "!!").replace("_", "!_").replace("%", "!%")
        return self._records("table_id LIKE ? ESCAPE '!'", (f"{escaped}{RETIRED}%",))

    def events(self, table_id: str, from_seq: int = 1, to_seq: int | None = None) -> Iterator[StoredEvent]:
        """The table's gapless events from ``from_seq`` to ``to_seq`` (inclusive), in seq order, read a page at
        a time (no lock held between pages, so a long read never stalls the writer)."""
        after = from_seq - 1
        while True:
            with self._tx() as tx:
                rows = tx.rows("SELECT seq, ts, type, body, received_at FROM events WHERE table_id = ? AND seq > ?"
                               " AND seq <= ? ORDER BY seq LIMIT ?",
                               (table_id, after, to_seq if to_seq is not None else 2**62, _PAGE))
            for r in rows:
                yield StoredEvent(int(r[0]), float(r[1]), str(r[2]), str(r[3]), float(r[4]))
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][0])

    def last_of_type(self, table_id: str, kind: str, to_seq: int | None = None) -> StoredEvent | None:
        """The table's last stored event of type ``kind`` (at or before ``to_seq``), e.g. its ``rules_changed``."""
        with self._tx() as tx:
            rows = tx.rows("SELECT seq, ts, type, body, received_at FROM events WHERE table_id = ? AND type = ?"
                           " AND seq <= ? ORDER BY seq DESC LIMIT 1",
                           (table_id, kind, to_seq if to_seq is not None else 2**62))
        return StoredEvent(int(rows[0][0]), float(rows[0][1]), str(rows[0][2]), str(rows[0][3]),
                           float(rows[0][4])) if rows else None

    def settlement_of(self, table_id: str, round_no: int) -> StoredEvent | None:
        """The table's first ``round_settled`` event of round ``round_no`` (found by its type and text, checked
        parsed: one query, not a read of the whole record)."""
        with self._tx() as tx:
            rows = tx.rows("SELECT seq, ts, type, body, received_at FROM events WHERE table_id = ? AND type = ?"
                           " AND body LIKE ? ORDER BY seq", (table_id, "round_settled", f'%"round":{int(round_no)}%'))
        for r in rows:
            if json.loads(r[3]).get("round") == round_no:
                return StoredEvent(int(r[0]), float(r[1]), str(r[2]), str(r[3]), float(r[4]))
        return None

    def dealt_by(self, dealer: str, table_id: str | None = None) -> list[tuple[str, int]]:
        """The settlements of the rounds ``dealer`` was the dealer of record of (``table_id``: at that table only),
        as ``(table_id, seq)`` in table and seq order: by the dealer's index (schema 1: by the bodies' text)."""
        where = "dealer_id = ?" if self.version >= 2 else "body LIKE ?"
        sql = f"SELECT table_id, seq, body FROM events WHERE {where} AND type = ?"
        params: list[Any] = [dealer if self.version >= 2 else f'%"dealer_id":{json.dumps(dealer)}%', "round_settled"]
        if table_id is not None:
            sql += " AND table_id = ?"
            params.append(table_id)
        with self._tx() as tx:
            rows = tx.rows(sql + " ORDER BY table_id, seq", params)
        return [(str(r[0]), int(r[1])) for r in rows if json.loads(r[2]).get("dealer_id") == dealer]

    def first_seq_at(self, table_id: str, ts: float) -> int | None:
        """The first stored seq of the table with ``ts`` at or after ``ts`` (a shift's start); ``None`` if none."""
        with self._tx() as tx:
            rows = tx.rows("SELECT MIN(seq) FROM events WHERE table_id = ? AND ts >= ?", (table_id, ts))
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def heads(self, table_id: str, from_seq: int = 1, to_seq: int | None = None) -> list[Head]:
        with self._tx() as tx:
            rows = tx.rows("SELECT seq, journal_id, head FROM heads WHERE table_id = ? AND seq >= ? AND seq <= ?"
                           " ORDER BY seq", (table_id, from_seq, to_seq if to_seq is not None else 2**62))
        return [Head(int(r[0]), r[1], str(r[2])) for r in rows]

    def ratings(self, player: str | None = None, since: float | None = None,
                until: float | None = None) -> list[Rating]:
        """Ratings of every table, oldest first: of one player, and running at or after ``since`` and started
        before ``until`` when given (an open rating counts as running)."""
        sql = "SELECT table_id, rating_id, player, spot, started, ended, body FROM ratings WHERE 1 = 1"
        params: list[Any] = []
        if player is not None:
            sql += " AND player = ?"
            params.append(player)
        if since is not None:
            sql += " AND (ended IS NULL OR ended >= ?)"
            params.append(since)
        if until is not None:
            sql += " AND started < ?"
            params.append(until)
        with self._tx() as tx:
            rows = tx.rows(sql + " ORDER BY started, table_id, rating_id", params)
        return [Rating(str(r[0]), str(r[1]), str(r[2]), None if r[3] is None else int(r[3]), float(r[4]),
                       None if r[5] is None else float(r[5]), json.loads(r[6])) for r in rows]


def open_store(url: str, *, create: bool = True, connect_timeout: float = 5.0) -> RecorderStore:
    """Open the recorder's database at ``url`` (an SQLite path, ``sqlite:///PATH`` or ``postgresql://...``).

    ``create=False`` (the readers) refuses a database that does not exist or holds nothing, instead of making
    one. Raises :class:`StoreRefused` (not a recorder's database, another schema version) or
    :class:`StoreUnavailable` (cannot be reached now)."""
    backend: _Backend
    if is_postgres_url(url):
        backend = Postgres(url, connect_timeout=connect_timeout)
    else:
        path = Path(url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url)
        backend = Sqlite(path, create=create)
    try:
        version = _check_schema(backend, create=create)
    except BaseException:
        backend.close()
        raise
    return RecorderStore(backend, version=version)
