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

Integrity (``docs/journal.md``): every input and outbox row stores ``hash`` = HMAC-SHA256, under
the table's journal key, of the previous row's hash and the row's own canonical content (its kind,
its id, every column but the outbox's ``delivered`` flag), in one chain in commit order: input *i*,
then the records it produced, then input *i + 1*. A snapshot (derived data, pruned) is sealed to
the hash of the input it was taken at. Every :data:`SEAL_EVERY` inputs the writer seals the segment
since the last seal (a ``seals`` row: its ranges, the chain head and a digest of every row's content
and hash, itself HMAC-chained), so :meth:`Journal.verify` checks a sealed segment with a few SQL
aggregates and one SHA-256 instead of one HMAC per row, and the rows after the last seal one by
one. A segment whose digest does not match is checked row by row, which names the first bad row.
Every ``meta`` key is one of :data:`META_KEYS`, each checked against the chain or harmless (the delivery
mark carries its own HMAC: one that does not check only makes records be sent again); the outbox's
``delivered`` column is read by nothing.

Nothing is signed at open: :func:`check_format` decides the format from what the file holds (refusing a file
that claims an older format but holds chain fields, one whose schema was edited: a trigger, view, index,
table, ``writable_schema``), and a journal of the format before the chain waits for ``tablectl journal
migrate`` (:mod:`controller.service.journal_migrate`).

One writer: a second program opening the journal to write is refused (:class:`JournalError`, "in
use by another program") by an exclusive ``flock`` on the journal file itself, held until
:meth:`Journal.close` (the kernel drops it when the process dies, ``kill -9`` included). Readers
(:meth:`Journal.open_readonly`: ``tablectl journal verify``, ``recall``, ``report``) open the
database read-only beside the running table (WAL: they never block its commits).

Thread safety: one connection guarded by a lock, so the service may commit from a worker thread
(``asyncio.to_thread``) while the publisher reads on the event loop.
"""

from __future__ import annotations

import array
import fcntl
import hashlib
import hmac
import itertools
import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import struct
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote

__all__ = ["AnchorPoint", "ChainBase", "InputRow", "Journal", "JournalError", "JournalIntegrityError", "OutboxRow",
           "Snapshot", "Verified", "key_id"]

SCHEMA_VERSION = 2
_CHUNK = 512
#: committed outbox records kept in memory for the publisher (a window's worth and more)
RECENT_KEPT = 256
#: inputs per sealed segment (a seal costs the commit that writes it about a millisecond)
SEAL_EVERY = 4096
#: the key of a journal opened without one (tests, benches): public, so its chain proves consistency only
UNKEYED = b"tablectl journal without a key: tests and benches only"
#: the type of the record ``tablectl journal migrate`` chains (who migrated the journal, when and why)
MIGRATED = "journal_migrated"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inputs (
    id    INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    event TEXT    NOT NULL,
    hash  BLOB
);
CREATE TABLE IF NOT EXISTS outbox (
    seq       INTEGER PRIMARY KEY,
    input_id  INTEGER,
    body      TEXT    NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    hash      BLOB
);
CREATE TABLE IF NOT EXISTS snapshots (
    input_id INTEGER PRIMARY KEY,
    seq      INTEGER NOT NULL,
    ts       REAL    NOT NULL,
    state    TEXT    NOT NULL,
    hash     BLOB
);
CREATE TABLE IF NOT EXISTS seals (
    n           INTEGER PRIMARY KEY,
    first_input INTEGER NOT NULL,
    last_input  INTEGER NOT NULL,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    head        BLOB    NOT NULL,
    digest      BLOB    NOT NULL,
    mac         BLOB    NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

Synchronous = Literal["FULL", "NORMAL"]


class JournalError(RuntimeError):
    """The journal cannot be opened or is not one of ours (path and reason in the message)."""


class JournalIntegrityError(JournalError):
    """A row that does not check: ``table``, ``row`` (its id), ``kind`` and ``reason`` name it."""

    def __init__(self, path: Path, table: str, row: int, kind: str, reason: str) -> None:
        super().__init__(f"journal {path}: {table} row {row} ({kind}): {reason}")
        self.table, self.row, self.kind, self.reason = table, row, kind, reason


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


@dataclass(frozen=True, slots=True)
class ChainBase:
    """Where the journal's chain starts: after input ``input``/record ``seq`` whose chain hash is ``hash``
    (0, 0 and the genesis hash for a journal started from nothing; an archive's cut for a continuation)."""

    input: int
    seq: int
    hash: bytes
    archive: str | None = None


@dataclass(frozen=True, slots=True)
class AnchorPoint:
    """What an anchor records of a journal: its id, how far it went, the row at its head and that row's hash."""

    journal_id: str
    inputs: int
    seq: int
    table: str
    row: int
    head: str


@dataclass(frozen=True, slots=True)
class Verified:
    """The outcome of :meth:`Journal.verify` (every row checked)."""

    inputs: int
    records: int
    snapshots: int
    last_input: int
    last_seq: int
    head: str
    rounds: int
    sealed_rows: int
    tail_rows: int
    seconds: float
    base: ChainBase

    @property
    def rows(self) -> int:
        return self.inputs + self.records + self.snapshots


class _AnchorSink(Protocol):
    def write(self, point: AnchorPoint) -> None: ...

    def record(self, point: AnchorPoint) -> None: ...

    def close(self) -> None: ...


class _Mac:
    """HMAC-SHA256 under one key (the standard ``hmac``): the keyed state made once, copied per message."""

    __slots__ = ("_keyed",)

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, digestmod="sha256")

    def __call__(self, data: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(data)
        return h.digest()


def key_id(key: bytes) -> str:
    """A short public fingerprint of a journal key (stored in the journal; tells a wrong key from tampering)."""
    return _Mac(key)(b"tablectl journal key id")[:8].hex()


_IN = struct.Struct(">cqd").pack  # kind, id, ts
_OUT = struct.Struct(">cqq").pack  # kind, seq, input_id
_SNAP = struct.Struct(">cqqd").pack  # kind, input_id, seq, ts
_SEAL = struct.Struct(">qqqqq").pack  # n, first_input, last_input, first_seq, last_seq
_RANGES = struct.Struct(">qqqq").pack
_BASE = struct.Struct(">qq").pack
_BIG = 2**62


def _seal_digest(ranges: tuple[int, int, int, int], in_text: bytes, in_hashes: bytes, in_ts: bytes,
                 out_text: bytes, out_inputs: bytes, out_hashes: bytes) -> bytes:
    """The digest a seal signs: a segment's ranges, and every row's content and hash (see the module docstring)."""
    parts = (in_text, in_hashes, in_ts, out_text, out_inputs, out_hashes)
    return _combine(ranges, tuple(hashlib.sha256(p).digest() for p in parts))


@dataclass(slots=True)
class _Segment:
    """The rows written since the last seal (kept only while this writer seals: after a verify)."""

    first_input: int
    first_seq: int
    events: list[str] = field(default_factory=list)
    in_hashes: list[bytes] = field(default_factory=list)
    ts: list[float] = field(default_factory=list)
    out_lines: list[str] = field(default_factory=list)  # the bodies
    out_inputs: list[str] = field(default_factory=list)  # the input each body follows
    out_hashes: list[bytes] = field(default_factory=list)

    def lengths(self) -> tuple[int, int]:
        return len(self.events), len(self.out_lines)

    def truncate(self, n_in: int, n_out: int) -> None:
        del self.events[n_in:], self.in_hashes[n_in:], self.ts[n_in:]
        del self.out_lines[n_out:], self.out_inputs[n_out:], self.out_hashes[n_out:]

    def digest(self) -> tuple[tuple[int, int, int, int], bytes]:
        ranges = (self.first_input, self.first_input + len(self.events) - 1,
                  self.first_seq, self.first_seq + len(self.out_lines) - 1)
        return ranges, _seal_digest(ranges, "\n".join(self.events).encode(), b"".join(self.in_hashes),
                                    array.array("d", self.ts).tobytes(), "\n".join(self.out_lines).encode(),
                                    ",".join(self.out_inputs).encode(), b"".join(self.out_hashes))


def _combine(ranges: tuple[int, int, int, int], parts: tuple[bytes, ...]) -> bytes:
    h = hashlib.sha256(b"tablectl-seal-1" + _RANGES(*ranges))
    for part in parts:
        h.update(part)
    return h.digest()


def _bulk_job(conn: sqlite3.Connection, kind: str, first: int, last: int) -> Any:
    """One piece of :meth:`Journal._bulk_checks`: ``quick_check``'s lines, or the digests of one table's rows in
    a sealed range (None when they cannot make one: rows missing, not text...)."""
    sha = hashlib.sha256
    parts: tuple[bytes, ...]
    if kind == "quick_check":
        return [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    try:
        # The concatenations must tell the rows apart, or bytes moved across a row boundary, or a NULL (which
        # group_concat skips), would leave them equal: every hash is 32 bytes; an input id is quoted (a bare
        # integer, as the writer joins them; a text '12,13' or a NULL would show as such); events, bodies and
        # times are NOT NULL, newline-free JSON and 8-byte doubles.
        if kind == "inputs":
            n, hashed, shortest, longest, text, hashes = conn.execute(
                "SELECT count(*), count(hash), min(length(hash)), max(length(hash)), group_concat(event, char(10)), "
                "CAST(group_concat(hash, '') AS BLOB) FROM inputs WHERE id BETWEEN ? AND ?", (first, last)).fetchone()
            ts = array.array("d", [r[0] for r in conn.execute("SELECT ts FROM inputs WHERE id BETWEEN ? AND ?",
                                                                (first, last))]).tobytes()
            parts = (sha(str(text or "").encode()).digest(), sha(bytes(hashes or b"")).digest(), sha(ts).digest())
        else:
            n, hashed, shortest, longest, text, ids, hashes = conn.execute(
                "SELECT count(*), count(hash), min(length(hash)), max(length(hash)), group_concat(body, char(10)), "
                "group_concat(quote(input_id), ','), CAST(group_concat(hash, '') AS BLOB) "
                "FROM outbox WHERE seq BETWEEN ? AND ?", (first, last)).fetchone()
            parts = (sha(str(text or "").encode()).digest(), sha(str(ids or "").encode()).digest(),
                     sha(bytes(hashes or b"")).digest())
    except (TypeError, ValueError, UnicodeError):
        return None
    whole = n == hashed == last - first + 1 and (n == 0 or shortest == longest == 32)
    return parts if whole else None


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


log = logging.getLogger("controller.journal")

#: the tables of the format before the chain (format 1): what ``tablectl journal migrate`` chains
_SCHEMA_V1 = """
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
#: the tables whose ``hash`` column, and the meta keys, that only a chained journal holds: a file holding any of
#: them is chained whatever its ``user_version`` says (set back, a start would have signed it again: refused)
_CHAIN_META = ("journal_id", "key_id", "chain_base", "chained_at", "created_at", "continued_by")
#: every meta key a chained journal may hold, and what protects it (an unknown key is refused as inserted)
META_KEYS: dict[str, str] = {
    "journal_id": "keys the chain's genesis (and the chain base's HMAC): an edit breaks the first row",
    "key_id": "must be the id of the key the chain checks under",
    "chain_base": "its own HMAC",
    "created_at": "informational, read by nothing",
    "chained_at": "informational, read by nothing",
    "continued_by": "informational (an archive's), read by nothing",
    "delivered_upto": "bookkeeping with its own HMAC: an edit only makes records be sent again",
    "rules_input": "a hint naming a chained input, checked when read: an edit only rebinds the configured rules",
    "ratings_sent": "bookkeeping with its own HMAC (signed_mark): an edit only makes ended ratings be sent again",
}
Objects = frozenset[tuple[str, str, str, str]]


def _objects(conn: sqlite3.Connection) -> Objects:
    """Everything the file's schema holds: (type, name, table, SQL with its white space folded)."""
    return frozenset((str(t), str(n), str(tb), " ".join(str(sql or "").split()))
                     for t, n, tb, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))


def _schema_of(*scripts: str) -> Objects:
    """The objects a fresh SQLite file holds after ``scripts`` (what an honest writer's file holds)."""
    with closing(sqlite3.connect(":memory:")) as conn:
        for script in scripts:
            conn.executescript(script)
        return _objects(conn)


_V1_ALTERED = "".join(f"ALTER TABLE {t} ADD COLUMN hash BLOB;" for t in ("inputs", "outbox", "snapshots"))
#: the schema of a chained journal: created so, or (chained by the version before ``journal migrate``) altered
CHAINED_SCHEMAS = (_schema_of(_SCHEMA), _schema_of(_SCHEMA_V1, _V1_ALTERED, _SCHEMA))
UNCHAINED_SCHEMA = _schema_of(_SCHEMA_V1)


def schema_difference(found: Objects, expected: Sequence[Objects]) -> str | None:
    """None when ``found`` is one of the ``expected`` schemas exactly; else what differs, in a few words
    (a trigger, view, index or table added; a table missing or altered)."""
    if any(found == e for e in expected):
        return None
    closest = min(expected, key=lambda e: len(found ^ e))
    names = {o[1]: o for o in closest}
    for obj in sorted(found - closest):
        kind, name = obj[0], obj[1]
        return f"{kind} {name} altered" if name in names else f"{kind} {name} added"
    for obj in sorted(closest - found):
        return f"{obj[0]} {obj[1]} missing"
    return "altered"


def _chain_fields(conn: sqlite3.Connection, found: Objects) -> list[str]:
    """The chain's fields a file of a known schema holds (see :data:`_CHAIN_META`): its hash columns and seals
    table when the schema is a chained one, and the chain's meta keys (queried only in a table of ours)."""
    fields = ["inputs.hash", "outbox.hash", "snapshots.hash", "table seals"] if found in CHAINED_SCHEMAS else []
    marks = ", ".join("?" * len(_CHAIN_META))
    fields += [f"meta {r[0]}" for r in conn.execute(f"SELECT key FROM meta WHERE key IN ({marks}) ORDER BY key",
                                                    _CHAIN_META)]
    return fields


def migrate_hint(path: Path) -> str:
    return (f"tablectl journal migrate {path} --key FILE --operator NAME --reason TEXT (offline, once; "
            "docs/journal.md)")


def check_format(conn: sqlite3.Connection, path: Path) -> bool:
    """Decide the file's format from what it holds, not from ``user_version`` alone: True for an empty file
    (a new journal), False for a chained one whose schema is exactly a table journal's; every other file is
    refused (:class:`JournalError`, one line): one of the format before the chain (run ``journal migrate``),
    one claiming an older format but holding the chain's fields (set back: tampered), one whose schema was
    edited (a trigger, view, index or table added, a table altered), one of a newer program, or not ours."""
    where = f"journal {path}"
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    found = _objects(conn)
    if not found:
        if version:
            raise JournalError(f"{where}: holds no table but claims format {version}: not a table journal")
        return True
    if version > SCHEMA_VERSION:
        raise JournalError(f"{where}: format {version} is newer than this program's {SCHEMA_VERSION}")
    if found not in CHAINED_SCHEMAS and found != UNCHAINED_SCHEMA:
        # nothing in a file of another schema is read, not even to tell its format: a view or a trigger
        # could run anything; only its names and SQL text are compared
        tables = {o[1] for o in found if o[0] == "table"}
        if not {"inputs", "outbox"} <= tables:
            raise JournalError(f"{where}: not a table journal (its tables: {', '.join(sorted(tables)) or 'none'})")
        diff = schema_difference(found, (*CHAINED_SCHEMAS, UNCHAINED_SCHEMA))
        raise JournalError(f"{where}: its schema is not a table journal's ({diff}): tampered; refused")
    fields = _chain_fields(conn, found)
    if fields and version != SCHEMA_VERSION:
        raise JournalError(f"{where}: claims format {version} (before the chain) but holds the chain's fields "
                           f"({', '.join(fields)}): tampered (set back so that it would be signed again); refused")
    if found in CHAINED_SCHEMAS:
        return False
    if version == SCHEMA_VERSION:
        raise JournalError(f"{where}: claims format {version} but holds none of the chain's fields: "
                           "tampered, or not a table journal; refused")
    raise JournalError(f"{where}: a journal of an older format ({version or 1}, before the chain): nothing is "
                       f"signed at start; chain it with {migrate_hint(path)}")


def _read_only_copy(path: Path) -> bool:
    """A journal nothing may be written beside: the file or its folder without write bits (or not writable to
    this user): an evidence copy."""
    return any(not stat.S_IMODE(p.stat().st_mode) & 0o222 or not os.access(p, os.W_OK) for p in (path, path.parent))


def read_only_connection(path: Path, *, check_same_thread: bool = True) -> tuple[sqlite3.Connection, Path | None]:
    """A read-only SQLite connection to the journal at ``path`` and the private folder to remove after it (None:
    none made): ``mode=ro`` beside its writer; for a copy without write bits (:func:`_read_only_copy`),
    ``immutable`` when it has no ``-wal`` to read, else on a private copy of the file and its ``-wal`` (SQLite
    would want a ``-shm`` beside them): nothing is ever written beside such a copy."""
    target, options, scratch = path.resolve(), "mode=ro", None
    if _read_only_copy(target):
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


class Journal:
    """A table's SQLite journal. Use as a context manager or call :meth:`close`.

    ``key``: the table's journal key (``None``: the public :data:`UNKEYED` key, for tests and benches; a
    journal chained under another key then opens for reading only). ``create=False`` refuses a journal
    that does not exist yet. ``readonly``: see :meth:`open_readonly`.
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: Synchronous = "FULL",
                 key: bytes | None = None, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self.synchronous: Synchronous = synchronous
        self.readonly = readonly
        self.keyed = key is not None
        self._key_id = key_id(UNKEYED if key is None else key)
        self._mac = _Mac(UNKEYED if key is None else key)
        self._lock = threading.RLock()
        self._depth = 0
        #: the newest committed outbox records, so the publisher reads what was just committed
        #: from memory instead of querying it back (``seq`` contiguous, oldest first)
        self._recent: deque[OutboxRow] = deque(maxlen=RECENT_KEPT)
        self._uncommitted: list[OutboxRow] = []
        self._lock_fd: int | None = None
        self._scratch: Path | None = None  # a reader's private copy of a read-only journal and its -wal
        #: where every commit that adds rows records the head before it returns (set by the opener)
        self.anchor: _AnchorSink | None = None
        self._grew = False
        #: True once :meth:`verify` has checked every row in this process
        self.verified = False
        self._seg: _Segment | None = None  # None: not sealing (rows are left to the next start's check)
        if readonly:
            try:
                self._conn = self._open_readonly()
            except BaseException:
                if self._scratch is not None:
                    shutil.rmtree(self._scratch, ignore_errors=True)
                raise
        else:
            self._take_lock(create)
            try:
                self._conn = self._open(create)
            except BaseException:
                self._release_lock()
                raise
        try:
            self._load()
        except BaseException:
            self.close(checkpoint=False)
            raise

    @classmethod
    def open_readonly(cls, path: str | os.PathLike[str], *, key: bytes | None = None) -> Journal:
        """A reader (``tablectl journal verify``, ``recall``, ``report``): never writes, takes no lock, and
        reads a journal in use without disturbing its writer (WAL)."""
        return cls(path, key=key, readonly=True)

    # -- opening ---------------------------------------------------------------------------

    def _take_lock(self, create: bool) -> None:
        if not create and not self.path.exists():
            raise JournalError(f"journal {self.path}: no such journal")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_fd = take_writer_lock(self.path)

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

    def _open(self, create: bool) -> sqlite3.Connection:
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
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5)
            try:
                # what the file holds decides, before anything is written to it (a trigger added by hand
                # would run on our first insert): nothing is ever signed at open
                new = check_format(conn, self.path)
                if new and not create:
                    raise JournalError(f"journal {self.path}: holds nothing (emptied?): refused")
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise JournalError(f"journal {self.path}: cannot switch to WAL mode (got {mode})")
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                conn.execute("PRAGMA foreign_keys=OFF")
                if new:
                    conn.execute("BEGIN IMMEDIATE")
                    try:
                        self._create(conn)
                        conn.execute("COMMIT")
                    except BaseException:
                        with suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                        raise
            except sqlite3.DatabaseError as exc:
                conn.close()
                raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc
            except BaseException:
                conn.close()
                raise
        finally:
            os.umask(old_umask)
        return conn

    def _open_readonly(self) -> sqlite3.Connection:
        """Read-only beside its writer, if any; a copy without write bits as a lab gets it, without writing
        anything beside it (:func:`read_only_connection`)."""
        if not self.path.is_file():
            raise JournalError(f"journal {self.path}: no such journal")
        try:
            conn, self._scratch = read_only_connection(self.path, check_same_thread=False)
        except sqlite3.Error as exc:
            raise JournalError(f"journal {self.path}: cannot open: {exc}") from exc
        try:
            if check_format(conn, self.path):
                raise JournalError(f"journal {self.path}: holds nothing: not a table journal")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _create(self, conn: sqlite3.Connection) -> None:
        """A new journal: the chained schema, its random id and the id of its key (nothing else is ever created
        or signed at open: an older journal waits for ``tablectl journal migrate``)."""
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        for key, value in (("journal_id", uuid.uuid4().hex), ("key_id", self._key_id),
                           ("created_at", str(round(time.time(), 3)))):
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (key, value))
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _genesis(self, journal_id: str) -> bytes:
        return self._mac(b"tablectl journal genesis " + journal_id.encode())

    def _load(self) -> None:
        """The journal's bookkeeping: ids, chain start, head, the last seal."""
        conn = self._conn
        try:
            meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
            self.journal_id = meta.get("journal_id", "")
            stored_key_id = meta.get("key_id")
            #: this handle's key is the one the journal is chained under (else: read only, no verify)
            self.verifiable = stored_key_id == self._key_id
            self._stored_key_id = stored_key_id
            self.base = self._read_base(meta.get("chain_base"))
            max_seq, max_in = conn.execute(
                "SELECT (SELECT MAX(seq) FROM outbox), (SELECT MAX(id) FROM inputs)").fetchone()
            self._last_seq = max(int(max_seq or 0), self.base.seq)
            self._last_input = max(int(max_in or 0), self.base.input)
            self._head, self._head_row = self.base.hash, ("base", self.base.input)
            self._last_input_hash = self.base.hash
            if max_in is not None:
                (h,) = conn.execute("SELECT hash FROM inputs WHERE id = ?", (max_in,)).fetchone()
                self._last_input_hash = bytes(h or b"")
                self._head, self._head_row = self._last_input_hash, ("inputs", int(max_in))
            #: the chain hash of the outbox row at ``_last_seq`` (None: no such row here), kept so a ``state``
            #: names its ``head`` without a query on the card's path (:meth:`record_hash`)
            self._last_record_hash: bytes | None = None
            if max_seq is not None:
                iid, h = conn.execute("SELECT input_id, hash FROM outbox WHERE seq = ?", (max_seq,)).fetchone()
                self._last_record_hash = bytes(h) if h else None
                if iid is not None and int(iid) >= self._last_input:
                    self._head, self._head_row = bytes(h or b""), ("outbox", int(max_seq))
            row = conn.execute("SELECT n, last_input, last_seq, mac FROM seals ORDER BY n DESC LIMIT 1").fetchone()
            self._seal_n = int(row[0]) if row else 0
            self._seal_mac = bytes(row[3]) if row else self.base.hash
            self._sealed_upto = (int(row[1]), int(row[2])) if row else (self.base.input, self.base.seq)
            self._delivered = self._read_delivered(meta.get("delivered_upto"))
        except (sqlite3.DatabaseError, ValueError, TypeError) as exc:
            raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc

    def _delivered_mac(self, upto: int) -> str:
        return self._mac(b"delivered " + self.journal_id.encode() + _BASE(upto, 0)).hex()

    def signed_mark(self, name: str, n: int) -> str:
        """``"N MAC"``: a bookkeeping mark kept in ``meta`` outside the chain, under the journal's key and id, so an
        edited one does not check (:meth:`read_mark`) and counts as none: like ``delivered_upto``, never trusted
        blindly (``ratings_sent``: an edit only makes ended ratings be sent again)."""
        return f"{n} {self._mac(name.encode() + b' ' + self.journal_id.encode() + _BASE(n, 0)).hex()}"

    def read_mark(self, name: str, text: str | None) -> int | None:
        """The ``N`` of a :meth:`signed_mark` that checks (and is no later than the last input), else None."""
        if text is None:
            return None
        n, _, _ = text.partition(" ")
        if not n.isdecimal() or len(n) >= 19 or int(n) > self._last_input:
            return None
        return int(n) if hmac.compare_digest(text, self.signed_mark(name, int(n))) else None

    def _read_delivered(self, text: str | None) -> int:
        """``meta.delivered_upto`` (``"N MAC"``): bookkeeping outside the chain, so a value that does not check
        (edited, or written before it had a MAC) is not trusted: every record after the chain's start is sent
        again (a repeat, never a gap: subscribers and the recorder drop a repeat with the same ``seq`` and body)."""
        if text is None:
            return self.base.seq
        upto, _, mac = text.partition(" ")
        if (upto.isdecimal() and len(upto) < 19 and hmac.compare_digest(mac, self._delivered_mac(int(upto)))
                and self.base.seq <= int(upto) <= self._last_seq):
            return int(upto)
        if not self.readonly and self.verifiable:
            log.info("journal %s: meta delivered_upto %r does not check under this key: every record after "
                        "seq %d is sent again", self.path, text[:40], self.base.seq)
        return self.base.seq

    def _read_base(self, text: str | None) -> ChainBase:
        if text is None:
            return ChainBase(0, 0, self._genesis(self.journal_id))
        try:
            data = json.loads(text)
            base = ChainBase(int(data["input"]), int(data["seq"]), bytes.fromhex(data["hash"]), data.get("archive"))
            self._base_mac = bytes.fromhex(data["mac"])
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(f"journal {self.path}: meta chain_base is not readable: {exc}") from exc
        return base

    def _base_record(self, base: ChainBase) -> str:
        mac = self._mac(b"chain base " + self.journal_id.encode() + _BASE(base.input, base.seq) + base.hash
                        + (base.archive or "").encode())
        return _dumps({"input": base.input, "seq": base.seq, "hash": base.hash.hex(), "archive": base.archive,
                       "mac": mac.hex()})

    def close(self, *, checkpoint: bool = True) -> None:
        """Record the anchor, checkpoint and close (the journal stays valid if this is never called)."""
        with self._lock:
            conn = getattr(self, "_conn", None)
            if conn is not None:
                if self.anchor is not None and not self.readonly:
                    with suppress(OSError, JournalError):
                        self.anchor.write(self.anchor_point())
                    self.anchor.close()
                    self.anchor = None
                if checkpoint and not self.readonly:
                    with suppress(sqlite3.Error):
                        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                conn.close()
            self._release_lock()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the chain -------------------------------------------------------------------------

    @property
    def head(self) -> bytes:
        """The chain hash of the last row (the chain's start when there is none)."""
        return self._head

    def anchor_point(self) -> AnchorPoint:
        table, row = self._head_row
        return AnchorPoint(self.journal_id, self._last_input, self._last_seq, table, row, self._head.hex())

    def record_hash(self, seq: int) -> bytes | None:
        """The chain hash of the outbox row ``seq``, or None when this journal holds no such row (seq 0, a row
        archived away, one not written yet): the ``head`` a ``state`` at ``seq`` names, and what the recorder
        keeps of it (docs/journal.md). The last row's comes from memory: no query on the card's path."""
        with self._lock:
            if seq == self._last_seq:
                return self._last_record_hash
            if seq > self._last_seq or seq <= self.base.seq:
                return None
        return self.row_hash("outbox", seq)

    def reaches(self, input_id: int, seq: int) -> bool:
        """Whether the file holds input ``input_id`` and record ``seq`` *now* (read afresh: a reader's view of a
        journal in use is taken at open, and its writer anchors every commit it makes since)."""
        with self._lock:
            found = self._conn.execute("SELECT (SELECT MAX(id) FROM inputs), (SELECT MAX(seq) FROM outbox)").fetchone()
        return int(found[0] or self.base.input) >= input_id and int(found[1] or self.base.seq) >= seq

    def row_hash(self, table: str, row: int) -> bytes | None:
        """The stored chain hash of one row (``inputs``/``outbox``; ``base``: the chain's start), or None."""
        if table == "base":
            return self.base.hash if row == self.base.input else None
        column = {"inputs": "id", "outbox": "seq"}.get(table)
        if column is None:
            return None
        with self._lock:
            found = self._conn.execute(f"SELECT hash FROM {table} WHERE {column} = ?", (row,)).fetchone()
        return bytes(found[0]) if found and found[0] is not None else None

    def _writable(self) -> None:
        if self.readonly:
            raise JournalError(f"journal {self.path}: opened read-only")
        if not self.verifiable:
            raise JournalError(f"journal {self.path}: chained under another key (key id {self._stored_key_id}, "
                               f"this one {self._key_id}): opened for reading only")

    # -- transactions ----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one durable commit (nests: only the outermost one commits)."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._writable()
                seg = self._seg
                saved = (self._last_seq, self._last_input, self._delivered, self._head, self._head_row,
                         self._last_input_hash, seg, seg.lengths() if seg else (0, 0), self._seal_n,
                         self._seal_mac, self._sealed_upto, self._last_record_hash)
                self._grew = False
                self._conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
                if outer and self._seg is not None and len(self._seg.events) >= SEAL_EVERY:
                    self._write_seal()
            except BaseException:
                self._depth -= 1
                if outer:
                    self._uncommitted.clear()
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    self._restore(saved)
                raise
            self._depth -= 1
            if outer:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._uncommitted.clear()
                    self._restore(saved)
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
                if self._uncommitted:
                    self._recent.extend(self._uncommitted)
                    self._uncommitted.clear()
                if self._grew and self.anchor is not None:
                    # before the commit is acknowledged (nothing of it has left the process yet): a commit a
                    # crash keeps is anchored unless the crash came before this line, when cutting it off is
                    # a crash before it (docs/journal.md, "When it is written")
                    try:
                        self.anchor.record(self.anchor_point())
                    except OSError as exc:
                        raise JournalError(f"journal {self.path}: its anchor cannot be written ({exc.strerror}): "
                                           "the table stops rather than play on unanchored") from exc

    def _restore(self, saved: tuple[Any, ...]) -> None:
        (self._last_seq, self._last_input, self._delivered, self._head, self._head_row, self._last_input_hash,
         seg, lengths, self._seal_n, self._seal_mac, self._sealed_upto, self._last_record_hash) = saved
        self._seg = seg
        if seg is not None:
            seg.truncate(*lengths)

    def _write_seal(self) -> None:
        """Seal the segment written since the last seal (inside the current transaction)."""
        seg = self._seg
        assert seg is not None
        if not seg.events and not seg.out_lines:
            return
        ranges, digest = seg.digest()
        n = self._seal_n + 1
        mac = self._mac(self._seal_mac + b"seal" + _SEAL(n, *ranges) + self._head + digest)
        self._conn.execute("INSERT INTO seals (n, first_input, last_input, first_seq, last_seq, head, digest, mac) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (n, *ranges, self._head, digest, mac))
        self._seal_n, self._seal_mac = n, mac
        self._sealed_upto = (ranges[1], ranges[3])
        self._seg = _Segment(ranges[1] + 1, ranges[3] + 1)

    # -- inputs ----------------------------------------------------------------------------

    def append_input(self, event: Mapping[str, Any] | str, *, ts: float | None = None) -> int:
        """Journal one input event (a JSON object or its text); return its id (gapless from 1)."""
        text = event if isinstance(event, str) else _dumps(event)
        when = float(time.time() if ts is None else ts)
        with self._lock, self.transaction():
            iid = self._last_input + 1
            h = self._mac(self._head + _IN(b"I", iid, when) + text.encode())
            self._conn.execute("INSERT INTO inputs (id, ts, event, hash) VALUES (?, ?, ?, ?)", (iid, when, text, h))
            self._last_input, self._last_input_hash = iid, h
            self._head, self._head_row = h, ("inputs", iid)
            self._grew = True
            seg = self._seg
            if seg is not None:
                seg.events.append(text)
                seg.in_hashes.append(h)
                seg.ts.append(when)
            return iid

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

    def last_input_with(self, key: str, *, within: int | None = None) -> InputRow | None:
        """The last input whose JSON object has ``key`` (among the last ``within`` inputs), or None."""
        if not key.isidentifier():
            raise ValueError(f"key must be a plain name, not {key!r}")
        floor = 0 if within is None else max(0, self._last_input - within)
        with self._lock:
            row = self._conn.execute(
                "SELECT id, ts, event FROM inputs WHERE id > ? AND json_extract(event, ?) IS NOT NULL "
                "ORDER BY id DESC LIMIT 1", (floor, f"$.{key}")).fetchone()
        return None if row is None else InputRow(int(row[0]), float(row[1]), json.loads(row[2]))

    @property
    def last_input_id(self) -> int:
        return self._last_input

    # -- outbox ----------------------------------------------------------------------------

    def add_records(self, bodies: Sequence[Mapping[str, Any]], *, input_id: int | None = None) -> list[int]:
        """Give each public record the next ``seq`` and queue it; return the seqs.

        The stored body is ``{"seq": n, **body}`` as compact JSON (a ``seq`` in ``body`` is replaced).
        ``input_id`` is the last input appended (records follow their input in the chain).
        """
        if not bodies:
            return []
        with self._lock, self.transaction():
            if input_id is not None and input_id != self._last_input:
                raise ValueError(f"records follow the last input ({self._last_input}), not input {input_id}")
            first = self._last_seq + 1
            src = self._last_input
            rows = []
            head, mac, seg = self._head, self._mac, self._seg
            for offset, body in enumerate(bodies):
                seq = first + offset
                text = _dumps({"seq": seq, **{k: v for k, v in body.items() if k != "seq"}})
                head = mac(head + _OUT(b"O", seq, src) + text.encode())
                rows.append((seq, src, text, head))
                if seg is not None:
                    seg.out_lines.append(text)
                    seg.out_inputs.append(str(src))
                    seg.out_hashes.append(head)
            self._conn.executemany("INSERT INTO outbox (seq, input_id, body, hash) VALUES (?, ?, ?, ?)", rows)
            self._uncommitted.extend(OutboxRow(seq, body) for seq, _, body, _ in rows)
            self._last_seq = first + len(bodies) - 1
            self._head, self._head_row = head, ("outbox", self._last_seq)
            self._last_record_hash = head
            self._grew = True
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
                rows = self._conn.execute(  # the delivered column is not read: only the checked mark counts
                    "SELECT seq, body FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", (max(after, self._delivered), n)
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
        makes the publisher send that record again, with the same ``seq`` and body. The flag is
        bookkeeping outside the chain (never part of a row's hash), so marking changes no hash; the mark carries
        its own HMAC, so an edited one only makes records be sent again (the outbox's ``delivered`` column is
        neither written nor read any more: editing it does nothing).
        """
        with self._lock:
            if upto_seq <= self._delivered or self.readonly:
                return
            upto = min(upto_seq, self._last_seq)
            nested = self._depth > 0
            if not nested:
                self._conn.execute("PRAGMA synchronous=OFF")
            try:
                with self._bookkeeping():
                    self._set_meta("delivered_upto", f"{upto} {self._delivered_mac(upto)}")
                    self._delivered = upto
            finally:
                if not nested:
                    self._conn.execute(f"PRAGMA synchronous={self.synchronous}")

    @contextmanager
    def _bookkeeping(self) -> Iterator[None]:
        """A transaction for what is outside the chain (delivery marks, meta): allowed without the key."""
        if self._depth > 0:
            yield
            return
        if self.readonly:
            raise JournalError(f"journal {self.path}: opened read-only")
        saved = self._delivered
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._conn.execute("COMMIT")
        except BaseException:
            self._delivered = saved
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise

    # -- snapshots -------------------------------------------------------------------------

    def _input_hash(self, input_id: int) -> bytes:
        if input_id == self._last_input:
            return self._last_input_hash
        if input_id == self.base.input:
            return self.base.hash
        found = self._conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()
        return bytes(found[0]) if found and found[0] is not None else b""

    def save_snapshot(self, state: Any, *, input_id: int | None = None, ts: float | None = None) -> None:
        """Store engine state (JSON-ready) as of ``input_id`` (default: the last input), sealed to that input."""
        iid = self._last_input if input_id is None else input_id
        when = float(time.time() if ts is None else ts)
        text = _dumps(state)
        with self._lock, self.transaction():
            h = self._mac(self._input_hash(iid) + _SNAP(b"S", iid, self._last_seq, when) + text.encode())
            self._conn.execute(
                "INSERT OR REPLACE INTO snapshots (input_id, seq, ts, state, hash) VALUES (?, ?, ?, ?, ?)",
                (iid, self._last_seq, when, text, h),
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
        """The snapshot saved at ``input_id``; :class:`JournalError` if there is none, it does not decode, or
        (opened with the journal's key) it does not check against the chain: recovery then passes it over."""
        with self._lock:
            row = self._conn.execute(
                "SELECT input_id, seq, ts, state, hash FROM snapshots WHERE input_id = ?", (input_id,)
            ).fetchone()
            if row is None:
                raise JournalError(f"journal {self.path}: no snapshot at input {input_id}")
            if self.verifiable and self.keyed:  # under the public test key anyone can seal: nothing to prove
                self._check_snapshot(row)
        try:
            state = json.loads(row[3])
        except (TypeError, ValueError) as exc:
            raise JournalError(f"journal {self.path}: snapshot at input {input_id} is not JSON: {exc}") from exc
        return Snapshot(int(row[0]), int(row[1]), float(row[2]), state)

    def _check_snapshot(self, row: Sequence[Any]) -> None:
        iid, seq, ts, state, stored = row
        try:
            ok = self._mac(self._input_hash(int(iid)) + _SNAP(b"S", int(iid), int(seq), float(ts))
                           + str(state).encode()) == stored
        except (TypeError, ValueError, struct.error):
            ok = False
        if not ok:
            raise JournalIntegrityError(self.path, "snapshots", int(iid), "snapshot",
                                        "its hash does not match its content and its input's (altered)")

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
        """Store a string (bookkeeping outside the chain: never trust it for integrity); durable like an input.
        Only a key of :data:`META_KEYS` (each says what protects it): a start refuses any other as inserted."""
        if key not in META_KEYS:
            raise ValueError(f"meta key {key!r} is not one of META_KEYS (add it there, saying what protects it)")
        with self._lock, self._bookkeeping():
            self._set_meta(key, value)

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {str(k): str(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}

    # -- verification ----------------------------------------------------------------------

    def verify(self, *, snapshots: bool = False, rounds: bool = False) -> Verified:
        """Check SQLite's own structure (``quick_check``) and every row of the chain; raise
        :class:`JournalIntegrityError` naming the first row that does not check. ``snapshots``: check the
        snapshots too (at a start each is checked when recovery reads it, and an altered one is not used).

        A writer then seals the rows it checked, so the next start checks them in bulk. ``rounds``: count
        the rounds settled for the result (a scan of the outbox from its end; 0 when not asked).
        """
        with self._lock:
            if self._depth:
                raise RuntimeError("verify() inside a transaction")
            if not self.verifiable:
                self._key_id_altered()
                raise JournalError(
                    f"journal {self.path}: wrong key: the journal is chained under key id {self._stored_key_id}, "
                    f"this key is {self._key_id}" if self._stored_key_id else
                    f"journal {self.path}: has no key id (not a chained journal)")
            started = time.perf_counter()
            try:
                result = self._verify(snapshots or self.keyed)
            except sqlite3.DatabaseError as exc:
                raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc
            end, tail, collected = result
            self._last_input, self._last_seq = end[0], end[1]
            self._head, self._head_row, self._last_input_hash = end[2], end[3], end[4]
            self._last_record_hash = self.row_hash("outbox", self._last_seq) if self._last_seq > self.base.seq else None
            if not self.readonly:
                self._seg = collected
                with self.transaction():
                    self._write_seal()  # the rows just checked one by one: bulk-checked next time
            self.verified = True
            return Verified(
                inputs=self._last_input - self.base.input, records=self._last_seq - self.base.seq,
                snapshots=int(self._conn.execute("SELECT count(*) FROM snapshots").fetchone()[0]),
                last_input=self._last_input, last_seq=self._last_seq, head=self._head.hex(),
                rounds=self._rounds() if rounds else 0,
                sealed_rows=(self._last_input - self.base.input + self._last_seq - self.base.seq) - tail,
                tail_rows=tail, seconds=time.perf_counter() - started, base=self.base)

    def _bad(self, table: str, row: int, kind: str, reason: str) -> JournalIntegrityError:
        return JournalIntegrityError(self.path, table, row, kind, reason)

    def _key_id_altered(self) -> None:
        """Raise naming ``meta.key_id`` when the chain checks under this key although the stored key id is
        another's (the id was edited: not a wrong key); return when it does not (a wrong key, said by the caller)."""
        if self._last_input == self.base.input and self._last_seq == self.base.seq and not self.base.input:
            return  # nothing chained yet: any key would check
        stored, self.verifiable = self._stored_key_id, True
        try:
            self._verify(False, meta=False)
        except (JournalError, sqlite3.DatabaseError):
            return
        finally:
            self.verifiable = False
        rowid = self._conn.execute("SELECT rowid FROM meta WHERE key = 'key_id'").fetchone()
        raise self._bad("meta", int(rowid[0]) if rowid else 0, "key_id",
                        f"{'altered' if stored else 'missing (deleted)'}: the chain checks under this key, whose id "
                        f"is {self._key_id}")

    def _check_meta(self) -> None:
        """Every ``meta`` row is a key of :data:`META_KEYS` whose value is of its shape; the ids the chain rests
        on are there (the chain base's HMAC and the journal id's hold on the genesis are checked with the rows)."""
        rows = self._conn.execute("SELECT rowid, key, value FROM meta ORDER BY rowid").fetchall()
        present = {str(k) for _, k, _ in rows}
        for rowid, key, value in rows:
            if key not in META_KEYS:
                raise self._bad("meta", int(rowid), str(key)[:40], "not a key of a table journal (inserted)")
            if not isinstance(value, str):
                raise self._bad("meta", int(rowid), key, "its value is not text (altered)")
            if key == "journal_id" and not re.fullmatch(r"[0-9a-f]{32}", value):
                raise self._bad("meta", int(rowid), key, "not a journal id (altered)")
            if key == "rules_input" and not (value.isdecimal() and len(value) < 19):
                raise self._bad("meta", int(rowid), key, f"not an input id ({value[:20]!r}: altered)")
        for key in ("journal_id", "key_id"):
            if key not in present:
                raise self._bad("meta", 0, key, "missing (deleted)")

    def _verify(self, snapshots: bool, *, meta: bool = True) -> tuple[tuple[Any, ...], int, _Segment | None]:
        conn = self._conn
        seals = conn.execute("SELECT n, first_input, last_input, first_seq, last_seq, head, digest, mac "
                             "FROM seals ORDER BY n").fetchall()
        problems, digests = self._bulk_checks([(int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in seals])
        if problems != ["ok"]:
            raise JournalError(f"journal {self.path}: SQLite's quick_check fails: {problems[0]}"
                               + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
        if meta:
            self._check_meta()
        base = self.base
        if self.get_meta("chain_base") is not None and self._base_record(base) != self.get_meta("chain_base"):
            raise self._bad("meta", 0, "chain_base", "the chain's start does not check (altered)")
        for table, column, upto in (("inputs", "id", base.input), ("outbox", "seq", base.seq)):
            early = conn.execute(f"SELECT {column} FROM {table} WHERE {column} <= ? LIMIT 1", (upto,)).fetchone()
            if early is not None:
                raise self._bad(table, int(early[0]), "input" if table == "inputs" else "record",
                                f"before the chain's start ({column} {upto}): inserted")
        # sealed segments: bulk digests; one that does not match is checked row by row
        prev_mac, head, at_in, at_seq = base.hash, base.hash, base.input, base.seq
        head_row: tuple[str, int] = ("base", base.input)
        last_input_hash = base.hash
        for expected_n, (n, fi, li, fs, ls, shead, digest, smac) in enumerate(seals, 1):
            if n != expected_n:
                raise self._bad("seals", expected_n, "seal", f"missing: the seals jump from {expected_n - 1} to {n}")
            if (fi, fs) != (at_in + 1, at_seq + 1) or li < fi - 1 or ls < fs - 1:
                raise self._bad("seals", int(n), "seal", f"does not follow seal {expected_n - 1} (missing or inserted)")
            shead, digest, smac = bytes(shead), bytes(digest), bytes(smac)
            expected = self._mac(prev_mac + b"seal" + _SEAL(n, fi, li, fs, ls) + shead + digest)
            if not hmac.compare_digest(expected, smac):
                raise self._bad("seals", n, "seal", "its HMAC does not match (altered)")
            if digests[expected_n - 1] != digest:
                end = self._check_rows(head, at_in, at_seq, li, ls, None)
                if end[2] != shead:
                    raise self._bad("seals", n, "seal", "the rows it seals do not end at its head")
                head_row, last_input_hash = end[3], end[4]
            else:
                head_row = ("outbox", ls) if ls >= fs and self._record_after_input(ls, li) else ("inputs", li)
                last_input_hash = b""  # read below when needed
            prev_mac, head, at_in, at_seq = smac, shead, li, ls
        if seals and not last_input_hash:
            last_input_hash = self._input_hash_stored(at_in)
        sealed = (at_in, at_seq)
        collected = None if self.readonly else _Segment(at_in + 1, at_seq + 1)
        end = self._check_rows(head, at_in, at_seq, _BIG, _BIG, collected)
        if end[0] == sealed[0] and end[1] == sealed[1]:
            end = (at_in, at_seq, head, head_row, last_input_hash)
        tail = (end[0] - sealed[0]) + (end[1] - sealed[1])
        if snapshots:
            saved = (self._last_input, self._last_input_hash)
            self._last_input, self._last_input_hash = end[0], end[4]
            try:
                for row in conn.execute("SELECT input_id, seq, ts, state, hash FROM snapshots ORDER BY input_id"):
                    if int(row[0]) > end[0] or int(row[0]) < base.input:
                        raise self._bad("snapshots", int(row[0]), "snapshot",
                                        "taken at an input the journal does not hold")
                    self._check_snapshot(row)
            finally:
                self._last_input, self._last_input_hash = saved
        return end, tail, collected

    def _record_after_input(self, seq: int, input_id: int) -> bool:
        found = self._conn.execute("SELECT input_id FROM outbox WHERE seq = ?", (seq,)).fetchone()
        return found is not None and found[0] == input_id

    def _input_hash_stored(self, input_id: int) -> bytes:
        if input_id == self.base.input:
            return self.base.hash
        found = self._conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()
        return bytes(found[0]) if found and found[0] is not None else b""

    def _bulk_checks(self, seals: list[tuple[int, int, int, int]]) -> tuple[list[str], list[bytes | None]]:
        """SQLite's ``quick_check`` and the digest of every sealed segment as its rows are now, computed on
        read-only connections of their own in a few threads (SQLite and SHA-256 run without the GIL), so a
        table PC's cores share the work; on this connection, one after the other, when that cannot be."""
        jobs: list[tuple[str, int, int]] = [("quick_check", 0, 0)]
        for fi, li, fs, ls in seals:
            jobs += [("inputs", fi, li), ("outbox", fs, ls)]
        local = threading.local()
        opened: list[sqlite3.Connection] = []
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"

        def run(job: tuple[str, int, int]) -> Any:
            conn = getattr(local, "conn", None)
            if conn is None:
                conn = local.conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=5)
                opened.append(conn)
            return _bulk_job(conn, *job)

        workers = max(1, min(3, os.cpu_count() or 1))
        try:
            if workers > 1 and seals:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    results = list(pool.map(run, jobs))
            else:
                results = [_bulk_job(self._conn, *job) for job in jobs]
        except sqlite3.OperationalError:
            results = [_bulk_job(self._conn, *job) for job in jobs]
        finally:
            for conn in opened:
                conn.close()
        digests: list[bytes | None] = []
        for k, (fi, li, fs, ls) in enumerate(seals):
            part_in, part_out = results[1 + 2 * k], results[2 + 2 * k]
            digests.append(None if part_in is None or part_out is None else
                           _combine((fi, li, fs, ls), part_in + part_out))
        return results[0], digests

    def _check_rows(self, prev: bytes, after_in: int, after_seq: int, upto_in: int, upto_seq: int,
                    collect: _Segment | None) -> tuple[int, int, bytes, tuple[str, int], bytes]:
        """Check rows one by one in chain order from ``prev``; return (last input, last seq, head, head row,
        last input's hash). ``collect``: gather them for a seal."""
        conn = self._conn
        mac = self._mac
        inputs = iter(conn.cursor().execute(
            "SELECT id, ts, event, hash FROM inputs WHERE id > ? AND id <= ? ORDER BY id", (after_in, upto_in)))
        records = conn.cursor().execute(
            "SELECT seq, input_id, body, hash FROM outbox WHERE seq > ? AND seq <= ? ORDER BY seq",
            (after_seq, upto_seq))
        cur_in, cur_seq = after_in, after_seq
        head_row: tuple[str, int] = ("base", after_in) if after_in == self.base.input else ("inputs", after_in)
        in_hash = self._input_hash_stored(after_in) if after_in != self.base.input else self.base.hash
        nxt = next(inputs, None)

        def check_input(row: tuple[Any, ...]) -> bytes:
            iid, ts, event, stored = row
            if iid != cur_in + 1:
                raise self._bad("inputs", cur_in + 1, "input", f"missing: the ids jump from {cur_in} to {iid}")
            try:
                ok = hmac.compare_digest(mac(prev + _IN(b"I", iid, ts) + event.encode()), stored)
            except (TypeError, AttributeError, struct.error):
                ok = False
            if not ok:
                raise self._bad("inputs", iid, "input", "its hash does not match its content "
                                "(altered, or a row before it deleted, inserted or moved)")
            if collect is not None:
                collect.events.append(event)
                collect.in_hashes.append(stored)
                collect.ts.append(ts)
            return bytes(stored)

        for seq, iid, body, stored in records:
            if seq != cur_seq + 1:
                raise self._bad("outbox", cur_seq + 1, "record", f"missing: the seqs jump from {cur_seq} to {seq}")
            if type(iid) is not int:
                raise self._bad("outbox", seq, "record", f"its input id {str(iid)[:20]!r} is not an integer (altered)")
            while nxt is not None and nxt[0] <= iid:
                try:
                    checked = check_input(nxt)
                except JournalIntegrityError:
                    self._input_id_altered(prev, seq, iid, cur_in, body, stored)
                    raise
                prev = in_hash = checked
                cur_in = nxt[0]
                head_row = ("inputs", cur_in)
                nxt = next(inputs, None)
            if iid != cur_in:
                self._input_id_altered(prev, seq, iid, cur_in, body, stored)
                if isinstance(iid, int) and iid > cur_in and iid <= upto_in:
                    after = f"input {nxt[0]}" if nxt is not None else "none"
                    raise self._bad("inputs", cur_in + 1, "input", f"missing: record {seq} refers to input {iid}, "
                                    f"but after input {cur_in} comes {after}")
                raise self._bad("outbox", seq, "record", f"refers to input {iid} but follows input {cur_in} "
                                "(rows deleted, inserted or moved)")
            try:
                ok = hmac.compare_digest(mac(prev + _OUT(b"O", seq, iid) + body.encode()), stored)
            except (TypeError, AttributeError, struct.error):
                ok = False
            if not ok:
                raise self._bad("outbox", seq, "record", "its hash does not match its content "
                                "(altered, or a row before it deleted, inserted or moved)")
            if collect is not None:
                collect.out_lines.append(body)
                collect.out_inputs.append(str(iid))
                collect.out_hashes.append(stored)
            prev, cur_seq, head_row = bytes(stored), seq, ("outbox", seq)
        while nxt is not None:
            prev = in_hash = check_input(nxt)
            cur_in = nxt[0]
            head_row = ("inputs", cur_in)
            nxt = next(inputs, None)
        if upto_in != _BIG and cur_in != upto_in:
            raise self._bad("inputs", cur_in + 1, "input", "missing: a sealed row was deleted")
        if upto_in != _BIG and cur_seq != upto_seq:
            raise self._bad("outbox", cur_seq + 1, "record", "missing: a sealed row was deleted")
        return cur_in, cur_seq, prev, head_row, in_hash

    def migration(self) -> dict[str, Any] | None:
        """The record ``tablectl journal migrate`` chained into this journal (who, when, why), or None."""
        with self._lock:
            row = self._conn.execute("SELECT body FROM outbox WHERE body LIKE ? ORDER BY seq LIMIT 1",
                                     (f'%"type":"{MIGRATED}"%',)).fetchone()
        with suppress(ValueError, TypeError):
            found = json.loads(row[0]) if row else None
            return found if isinstance(found, dict) and found.get("type") == MIGRATED else None
        return None

    def _input_id_altered(self, prev: bytes, seq: int, iid: int, cur_in: int, body: Any, stored: Any) -> None:
        """Raise naming the record when its hash checks as following input ``cur_in``: then its own input id
        was edited (rather than an input deleted or altered), which is what the message should say."""
        with suppress(TypeError, AttributeError, struct.error):
            if hmac.compare_digest(self._mac(prev + _OUT(b"O", seq, cur_in) + body.encode()), stored):
                raise self._bad("outbox", seq, "record", f"refers to input {iid} but its hash says it follows "
                                f"input {cur_in} (its input id altered)")

    def _rounds(self) -> int:
        """Rounds settled so far: the ``round`` of the last ``round_settled`` record (0 when none)."""
        row = self._conn.execute("SELECT body FROM outbox WHERE body LIKE '%\"type\":\"round_settled\"%' "
                                 "ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            return 0
        with suppress(ValueError, TypeError, AttributeError):
            return int(json.loads(row[0]).get("round", 0))
        return 0

    # -- archives --------------------------------------------------------------------------

    def position_hash(self, input_id: int, seq: int) -> bytes | None:
        """The chain hash just after input ``input_id`` and the records up to ``seq`` (None: not a position
        of this journal's chain)."""
        base = self.base
        if (input_id, seq) == (base.input, base.seq):
            return base.hash
        with self._lock:
            rec = self._conn.execute("SELECT input_id, hash FROM outbox WHERE seq = ?", (seq,)).fetchone()
            if seq > base.seq and rec is not None and rec[0] == input_id:
                return bytes(rec[1])
            if rec is not None and rec[0] is not None and int(rec[0]) > input_id:
                return None
            found = self._conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()
        return bytes(found[0]) if found and found[0] is not None else None

    def archive(self, to_dir: str | os.PathLike[str]) -> tuple[Path, ChainBase]:
        """Copy the whole journal to a dated archive file in ``to_dir``; keep here only the newest snapshot's
        input and what follows it, the chain now starting at the archive's hash before that input (sealed in
        ``meta``; the archive's ``meta`` names its continuation). Needs a verified writer, every record before
        the cut published, and a snapshot to start from. Returns the archive's path and the new chain start."""
        with self._lock:
            self._writable()
            if not self.verified:
                raise JournalError(f"journal {self.path}: verify it before archiving")
            ids = self.snapshot_ids()
            cut = ids[0] if ids else 0
            if cut - 1 <= self.base.input:
                raise JournalError(f"journal {self.path}: nothing to archive: no snapshot after the chain's start "
                                   "(the table saves one every snapshot_every inputs)")
            self.snapshot_at(cut)  # it must check: the continuation starts from it
            (before,) = self._conn.execute("SELECT MAX(seq) FROM outbox WHERE input_id < ?", (cut,)).fetchone()
            base_seq = max(int(before or 0), self.base.seq)
            if base_seq > self._delivered:
                raise JournalError(f"journal {self.path}: records up to seq {base_seq} are not all published yet "
                                   f"(delivered up to {self._delivered}): start the table to drain them first")
            prev = self.position_hash(cut - 1, base_seq)
            if prev is None:
                raise JournalError(f"journal {self.path}: no chain position after input {cut - 1}, seq {base_seq}")
            to = Path(to_dir)
            to.mkdir(mode=0o700, parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            archive = to / f"{self.path.stem}-{stamp}-inputs-{self.base.input + 1}-{self._last_input}.journal"
            if archive.exists():
                raise JournalError(f"archive {archive}: already exists")
            old_umask = os.umask(0o077)
            try:
                self._conn.execute("VACUUM INTO ?", (str(archive),))
            finally:
                os.umask(old_umask)
            os.chmod(archive, 0o600)
            new_base = ChainBase(cut - 1, base_seq, prev, archive.name)
            link = _dumps({"journal": str(self.path.resolve()), "input": cut - 1, "seq": base_seq, "hash": prev.hex()})
            copy = sqlite3.connect(archive, isolation_level=None)
            try:
                copy.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('continued_by', ?)", (link,))
            finally:
                copy.close()
            with self.transaction():
                self._conn.execute("DELETE FROM inputs WHERE id < ?", (cut,))
                self._conn.execute("DELETE FROM outbox WHERE seq <= ?", (base_seq,))
                self._conn.execute("DELETE FROM snapshots WHERE input_id < ?", (cut,))
                self._conn.execute("DELETE FROM seals")
                self._set_meta("chain_base", self._base_record(new_base))
                self._seg = None
            self.base = new_base
            self._seal_n, self._seal_mac, self._sealed_upto = 0, new_base.hash, (new_base.input, new_base.seq)
            self._recent.clear()
            self.verified = False
            self._conn.execute("VACUUM")
            self.verify()
            return archive, new_base
