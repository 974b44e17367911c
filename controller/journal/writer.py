"""The journal's writer: input events, the MQTT outbox, snapshots, metadata, in one SQLite file (WAL).

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

The other jobs live beside the writer, each in its module: the chain's hashing and seals
(:mod:`controller.journal.chain`; every :data:`SEAL_EVERY` inputs the writer seals the segment since the last
seal, so :meth:`Journal.verify` checks it in bulk), the schemas and how a file's format is told, nothing signed
at open (:mod:`~controller.journal.schema`), the file, its mode 0600 and its one-writer lock
(:mod:`~controller.journal.store`), the outbox's window (:mod:`~controller.journal.outbox`), snapshots
(:mod:`~controller.journal.snapshots`), verification (:mod:`~controller.journal.verify`), archiving
(:mod:`~controller.journal.archive`) and ``tablectl journal migrate`` (:mod:`~controller.journal.migrate`).
Readers (:meth:`Journal.open_readonly`: ``tablectl journal verify``, ``recall``, ``report``) open the
database read-only beside the running table (WAL: they never block its commits).

Thread safety: one connection guarded by a lock, so the service may commit from a worker thread
(``asyncio.to_thread``) while the publisher reads on the event loop.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, Protocol

from controller.journal.archive import copy_out, cut_point, link_continuation
from controller.journal.chain import (
    UNKEYED,
    AnchorPoint,
    ChainBase,
    Mac,
    Segment,
    base_record,
    dumps,
    genesis,
    key_id,
    link_input,
    link_record,
    link_snapshot,
    mark_mac,
    read_base,
    seal_mac,
)
from controller.journal.errors import JournalError
from controller.journal.outbox import DELIVERED, RECENT_KEPT, OutboxRow, Recent, read_delivered
from controller.journal.reads import JournalReads
from controller.journal.schema import META_KEYS
from controller.journal.store import (
    Synchronous,
    lock_writer,
    open_reader,
    open_writer,
    read_end,
)
from controller.journal.verify import ChainCheck, Verified, rounds_settled

__all__ = ["SEAL_EVERY", "AnchorSink", "Journal"]

#: inputs per sealed segment (a seal costs the commit that writes it about a millisecond)
SEAL_EVERY = 4096

log = logging.getLogger("controller.journal")


class AnchorSink(Protocol):
    """Where a writer records its head after each commit that adds rows (:class:`controller.journal.anchor.Anchor`)."""

    def write(self, point: AnchorPoint) -> None: ...

    def record(self, point: AnchorPoint) -> None: ...

    def check(self) -> None: ...

    def close(self) -> None: ...


class Journal(JournalReads):
    """A table's SQLite journal, its writes here, its reads in :class:`JournalReads`. Use as a context manager or
    call :meth:`close`.

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
        self._mac = Mac(UNKEYED if key is None else key)
        self._lock = threading.RLock()
        self._depth = 0
        #: the newest committed outbox records, so the publisher reads what was just committed
        #: from memory instead of querying it back (``seq`` contiguous, oldest first)
        self._recent = Recent(RECENT_KEPT)
        self._lock_fd: int | None = None
        self._scratch: Path | None = None  # a reader's private copy of a read-only journal and its -wal
        #: where every commit that adds rows records the head before it returns (set by the opener)
        self.anchor: AnchorSink | None = None
        self._grew = False
        #: True once :meth:`verify` has checked every row in this process
        self.verified = False
        self._seg: Segment | None = None  # None: not sealing (rows are left to the next start's check)
        if readonly:
            self._conn, self._scratch = open_reader(self.path)
        else:
            self._lock_fd = lock_writer(self.path, create)
            try:
                self._conn = open_writer(self.path, self.synchronous, create=create, key_id=self._key_id)
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

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

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
            end = read_end(conn, self.base)
            self._last_seq, self._last_input = end.last_seq, end.last_input
            self._head, self._head_row, self._last_input_hash = end.head, end.head_row, end.last_input_hash
            #: the chain hash of the outbox row at ``_last_seq`` (None: no such row here), kept so a ``state``
            #: names its ``head`` without a query on the card's path (:meth:`record_hash`)
            self._last_record_hash: bytes | None = end.last_record_hash
            self._seal_n, self._seal_mac, self._sealed_upto = end.seal_n, end.seal_mac, end.sealed_upto
            self._delivered = self._read_delivered(meta.get("delivered_upto"))
        except (sqlite3.DatabaseError, ValueError, TypeError) as exc:
            raise JournalError(f"journal {self.path}: not a usable SQLite journal: {exc}") from exc

    def _read_delivered(self, text: str | None) -> int:
        """``meta.delivered_upto`` (``"N MAC"``): bookkeeping outside the chain, so a value that does not check
        (edited, or written before it had a MAC) is not trusted: every record after the chain's start is sent
        again (a repeat, never a gap: subscribers and the recorder drop a repeat with the same ``seq`` and body)."""
        if text is None:
            return self.base.seq
        upto = read_delivered(self._mac, self.journal_id, text, self.base.seq, self._last_seq)
        if upto is not None:
            return upto
        if not self.readonly and self.verifiable:
            log.info("journal %s: meta delivered_upto %r does not check under this key: every record after "
                        "seq %d is sent again", self.path, text[:40], self.base.seq)
        return self.base.seq

    def _read_base(self, text: str | None) -> ChainBase:
        if text is None:
            return ChainBase(0, 0, genesis(self._mac, self.journal_id))
        try:
            return read_base(text)[0]
        except (ValueError, KeyError, TypeError) as exc:
            raise JournalError(f"journal {self.path}: meta chain_base is not readable: {exc}") from exc

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

    # -- the right to write ----------------------------------------------------------------

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
                    self._recent.drop_staged()
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    self._restore(saved)
                raise
            self._depth -= 1
            if outer:
                try:
                    self._conn.execute("COMMIT")
                except BaseException:
                    self._recent.drop_staged()
                    self._restore(saved)
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                    raise
                self._recent.commit()
                if self._grew and self.anchor is not None:
                    # before the commit is acknowledged (nothing of it has left the process yet): a commit a
                    # crash keeps is anchored unless the crash came before this line, when cutting it off is
                    # a crash before it (docs/journal.md, "When it is written")
                    try:
                        self.anchor.record(self.anchor_point())
                    except OSError as exc:
                        raise self._unanchored(exc) from exc

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
        mac = seal_mac(self._mac, self._seal_mac, n, ranges, self._head, digest)
        self._conn.execute("INSERT INTO seals (n, first_input, last_input, first_seq, last_seq, head, digest, mac) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (n, *ranges, self._head, digest, mac))
        self._seal_n, self._seal_mac = n, mac
        self._sealed_upto = (ranges[1], ranges[3])
        self._seg = Segment(ranges[1] + 1, ranges[3] + 1)

    # -- inputs ----------------------------------------------------------------------------

    def append_input(self, event: Mapping[str, Any] | str, *, ts: float | None = None) -> int:
        """Journal one input event (a JSON object or its text); return its id (gapless from 1)."""
        text = event if isinstance(event, str) else dumps(event)
        with self.transaction():
            return self._append_input(text, float(time.time() if ts is None else ts))

    def _append_input(self, text: str, when: float) -> int:
        """:meth:`append_input` inside the caller's transaction (one context less on a card's way)."""
        iid = self._last_input + 1
        h = link_input(self._mac, self._head, iid, when, text)
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

    # -- outbox ----------------------------------------------------------------------------

    def add_records(self, bodies: Sequence[Mapping[str, Any]], *, input_id: int | None = None) -> list[int]:
        """Give each public record the next ``seq`` and queue it; return the seqs.

        The stored body is ``{"seq": n, **body}`` as compact JSON (a ``seq`` in ``body`` is replaced).
        ``input_id`` is the last input appended (records follow their input in the chain).
        """
        if not bodies:
            return []
        with self.transaction():
            if input_id is not None and input_id != self._last_input:
                raise ValueError(f"records follow the last input ({self._last_input}), not input {input_id}")
            return self._add_records(bodies)

    def _add_records(self, bodies: Sequence[Mapping[str, Any]]) -> list[int]:
        """:meth:`add_records` after the last input, inside the caller's transaction."""
        if not bodies:
            return []
        first = self._last_seq + 1
        src = self._last_input
        rows = []
        head, mac, seg = self._head, self._mac, self._seg
        for offset, body in enumerate(bodies):
            seq = first + offset
            text = dumps({"seq": seq, **{k: v for k, v in body.items() if k != "seq"}})
            head = link_record(mac, head, seq, src, text)
            rows.append((seq, src, text, head))
            if seg is not None:
                seg.out_lines.append(text)
                seg.out_inputs.append(src)
                seg.out_hashes.append(head)
        self._conn.executemany("INSERT INTO outbox (seq, input_id, body, hash) VALUES (?, ?, ?, ?)", rows)
        self._recent.stage([OutboxRow(seq, body) for seq, _, body, _ in rows])
        self._last_seq = first + len(bodies) - 1
        self._head, self._head_row = head, ("outbox", self._last_seq)
        self._last_record_hash = head
        self._grew = True
        return list(range(first, self._last_seq + 1))

    def commit_event(
        self, event: Mapping[str, Any] | str, records: Sequence[Mapping[str, Any]], *, ts: float | None = None
    ) -> tuple[int, list[int]]:
        """Append an input and its records in one durable commit; return (input id, seqs)."""
        text = event if isinstance(event, str) else dumps(event)
        when = float(time.time() if ts is None else ts)
        # in the caller's transaction (a card's): no second one opened on its way
        with self._lock, nullcontext() if self._depth > 0 else self.transaction():
            return self._append_input(text, when), self._add_records(records)

    def check_anchor(self) -> None:
        """That the anchor file at its path is the one the last commits were recorded in, else recorded again
        there (:meth:`Anchor.check <controller.journal.anchor.Anchor.check>`): for the table to call once a
        commit's news has left, so the ``stat`` is off a card's path (a commit before the call checks first)."""
        with self._lock:
            if self.anchor is None or self.readonly:
                return
            try:
                self.anchor.check()
            except OSError as exc:
                raise self._unanchored(exc) from exc

    def _unanchored(self, exc: OSError) -> JournalError:
        """The refusal when the anchor cannot be written: the table stops."""
        return JournalError(f"journal {self.path}: its anchor cannot be written ({exc.strerror}): "
                            "the table stops rather than play on unanchored")

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
                    self._set_meta("delivered_upto", f"{upto} {mark_mac(self._mac, DELIVERED, self.journal_id, upto)}")
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

    def save_snapshot(self, state: Any, *, input_id: int | None = None, ts: float | None = None) -> None:
        """Store engine state (JSON-ready) as of ``input_id`` (default: the last input), sealed to that input."""
        iid = self._last_input if input_id is None else input_id
        when = float(time.time() if ts is None else ts)
        text = dumps(state)
        with self._lock, self.transaction():
            h = link_snapshot(self._mac, self._input_hash(iid), iid, self._last_seq, when, text)
            self._conn.execute(
                "INSERT OR REPLACE INTO snapshots (input_id, seq, ts, state, hash) VALUES (?, ?, ?, ?, ?)",
                (iid, self._last_seq, when, text, h),
            )

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
                result = self._chain_check().run(snapshots or self.keyed, collect=not self.readonly)
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
                rounds=rounds_settled(self._conn) if rounds else 0,
                sealed_rows=(self._last_input - self.base.input + self._last_seq - self.base.seq) - tail,
                tail_rows=tail, seconds=time.perf_counter() - started, base=self.base)

    def _chain_check(self) -> ChainCheck:
        return ChainCheck(self._conn, self.path, self._mac, self.journal_id, self.base)

    def _key_id_altered(self) -> None:
        """Raise naming ``meta.key_id`` when the chain checks under this key although the stored key id is
        another's (:meth:`ChainCheck.key_id_altered`)."""
        if self._last_input == self.base.input and self._last_seq == self.base.seq and not self.base.input:
            return  # nothing chained yet: any key would check
        self._chain_check().key_id_altered(self._stored_key_id, self._key_id)

    # -- archives --------------------------------------------------------------------------

    def archive(self, to_dir: str | os.PathLike[str]) -> tuple[Path, ChainBase]:
        """Copy the whole journal to a dated archive file in ``to_dir``; keep here only the newest snapshot's
        input and what follows it, the chain now starting at the archive's hash before that input (sealed in
        ``meta``; the archive's ``meta`` names its continuation). Needs a verified writer, every record before
        the cut published, and a snapshot to start from. Returns the archive's path and the new chain start
        (:mod:`controller.journal.archive`)."""
        with self._lock:
            self._writable()
            cut, base_seq, prev = cut_point(self, self._conn)
            archive = copy_out(self._conn, self.path, to_dir, self.base.input + 1, self._last_input)
            new_base = ChainBase(cut - 1, base_seq, prev, archive.name)
            link_continuation(archive, self.path, new_base)
            with self.transaction():
                self._conn.execute("DELETE FROM inputs WHERE id < ?", (cut,))
                self._conn.execute("DELETE FROM outbox WHERE seq <= ?", (base_seq,))
                self._conn.execute("DELETE FROM snapshots WHERE input_id < ?", (cut,))
                self._conn.execute("DELETE FROM seals")
                self._set_meta("chain_base", base_record(self._mac, self.journal_id, new_base))
                self._seg = None
            self.base = new_base
            self._seal_n, self._seal_mac, self._sealed_upto = 0, new_base.hash, (new_base.input, new_base.seq)
            self._recent.clear()
            self.verified = False
            self._conn.execute("VACUUM")
            self.verify()
            return archive, new_base
