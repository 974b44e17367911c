"""What every handle on a journal reads, a writer's and a reader's: the chain's end, the inputs, the outbox, the
snapshots, the metadata (:class:`JournalReads`, the base of :class:`controller.journal.writer.Journal`).

Why apart: a newcomer finds the writes of the journal in the writer alone; these reads change nothing (a reader
opened by :meth:`controller.journal.writer.Journal.open_readonly` has only these and ``verify``). Each query takes
the handle's lock, so the publisher reads on the event loop while the service commits from a worker thread.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.journal.archive import position_hash
from controller.journal.chain import AnchorPoint, ChainBase, Mac, mark_mac, read_mark
from controller.journal.errors import JournalError
from controller.journal.outbox import OutboxRow, Recent
from controller.journal.schema import migration_record
from controller.journal.snapshots import Snapshot, check_snapshot
from controller.journal.store import CHUNK, input_hash, last_input_with, read_chunks

__all__ = ["InputRow", "JournalReads"]


@dataclass(frozen=True, slots=True)
class InputRow:
    """One journaled input event: its id (gapless from 1), when it was written, its JSON object."""

    id: int
    ts: float
    event: dict[str, Any]


class JournalReads:
    """The reads of a journal handle; the state they read is kept by the writer (:meth:`Journal._load`, its
    commits, :meth:`Journal.verify`)."""

    path: Path
    journal_id: str
    base: ChainBase
    keyed: bool
    verifiable: bool
    _conn: sqlite3.Connection
    _lock: threading.RLock
    _mac: Mac
    _depth: int
    _recent: Recent
    _delivered: int
    _last_seq: int
    _last_input: int
    _last_input_hash: bytes
    _last_record_hash: bytes | None
    _head: bytes
    _head_row: tuple[str, int]

    # -- signed marks ----------------------------------------------------------------------

    def signed_mark(self, name: str, n: int) -> str:
        """``"N MAC"``: a bookkeeping mark kept in ``meta`` outside the chain, under the journal's key and id, so an
        edited one does not check (:meth:`read_mark`) and counts as none: like ``delivered_upto``, never trusted
        blindly (``ratings_sent``: an edit only makes ended ratings be sent again)."""
        return f"{n} {mark_mac(self._mac, name, self.journal_id, n)}"

    def read_mark(self, name: str, text: str | None) -> int | None:
        """The ``N`` of a :meth:`signed_mark` that checks (and is no later than the last input), else None."""
        return read_mark(self._mac, name, self.journal_id, text, self._last_input)

    def seal(self, purpose: str, data: bytes) -> str:
        """An HMAC (hex) of ``data`` under the journal's key, for ``purpose``: what the table keeps beside its
        journal to save work (figures of its rules) is trusted only with it, as an edited file does not check.
        Meaningless without a key (:attr:`keyed` false: the public test key)."""
        return self._mac(b"tablectl seal\x00" + purpose.encode() + b"\x00" + data).hex()

    # -- the chain's end -------------------------------------------------------------------

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
            if seq > self._last_seq:  # written after this journal's view was taken, or not yet
                return None
            if seq == self._last_seq:
                return self._last_record_hash
        return self.row_hash("outbox", seq)  # none at or below the chain's start: archiving deleted them

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

    # -- inputs ----------------------------------------------------------------------------

    def inputs_since(self, input_id: int = 0) -> Iterator[InputRow]:
        """Inputs with id > ``input_id`` in order (read in chunks; safe for long journals)."""
        for rid, ts, text in read_chunks(self._conn, self._lock, "SELECT id, ts, event FROM inputs WHERE id > ? "
                                         "ORDER BY id LIMIT ?", input_id):
            yield InputRow(int(rid), float(ts), json.loads(text))

    def inputs_of(self, types: Collection[str], input_id: int = 0) -> Iterator[InputRow]:
        """The inputs with id > ``input_id`` whose ``type`` is one of ``types``, in order: SQLite tells them by
        their JSON's ``type``, so only those are decoded (a reader of a few kinds in many rows)."""
        where, kinds = _of_types(types)
        query = f"SELECT id, ts, event FROM inputs WHERE id > ? AND {where} ORDER BY id LIMIT ?"
        for rid, ts, text in read_chunks(self._conn, self._lock, query, input_id, *kinds):
            yield InputRow(int(rid), float(ts), json.loads(text))

    def last_ids_of(self, kind: str, n: int) -> list[int]:
        """The ids of the last ``n`` inputs of type ``kind``, newest first (fewer when the journal holds fewer):
        SQLite reads back from the journal's end until it has them, no row decoded here."""
        where, kinds = _of_types((kind,))
        with self._lock:
            rows = self._conn.execute(f"SELECT id FROM inputs WHERE {where} ORDER BY id DESC LIMIT ?",
                                      (*kinds, n)).fetchall()
        return [int(r[0]) for r in rows]

    def last_input_with(self, key: str, *, within: int | None = None) -> InputRow | None:
        """The last input whose JSON object has ``key`` (among the last ``within`` inputs), or None."""
        if not key.isidentifier():
            raise ValueError(f"key must be a plain name, not {key!r}")
        floor = 0 if within is None else max(0, self._last_input - within)
        with self._lock:
            row = last_input_with(self._conn, key, floor)
        return None if row is None else InputRow(int(row[0]), float(row[1]), json.loads(row[2]))

    @property
    def last_input_id(self) -> int:
        return self._last_input

    # -- outbox ----------------------------------------------------------------------------

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
            cached = self._recent.from_seq(start) if self._depth == 0 else None
        if cached is not None:
            yield from cached if limit is None else cached[:limit]
            return
        remaining = limit
        while remaining is None or remaining > 0:
            n = CHUNK if remaining is None else min(CHUNK, remaining)
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
        last = self._last_seq if to_seq is None else to_seq
        for seq, body in read_chunks(self._conn, self._lock, "SELECT seq, body FROM outbox WHERE seq > ? AND "
                                     "seq <= ? ORDER BY seq LIMIT ?", from_seq - 1, last, upto=last):
            yield OutboxRow(int(seq), str(body))

    # -- snapshots -------------------------------------------------------------------------

    def _input_hash(self, input_id: int) -> bytes:
        if input_id == self._last_input:
            return self._last_input_hash
        return input_hash(self._conn, self.base, input_id)

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
                check_snapshot(self._mac, self.path, row, self._input_hash)
        try:
            state = json.loads(row[3])
        except (TypeError, ValueError) as exc:
            raise JournalError(f"journal {self.path}: snapshot at input {input_id} is not JSON: {exc}") from exc
        return Snapshot(int(row[0]), int(row[1]), float(row[2]), state)

    # -- metadata --------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else default

    def meta(self) -> dict[str, str]:
        with self._lock:
            return {str(k): str(v) for k, v in self._conn.execute("SELECT key, value FROM meta")}

    # -- the journal's history -------------------------------------------------------------

    def migration(self) -> dict[str, Any] | None:
        """The record ``tablectl journal migrate`` chained into this journal (who, when, why), or None."""
        with self._lock:
            return migration_record(self._conn)

    def position_hash(self, input_id: int, seq: int) -> bytes | None:
        """The chain hash just after input ``input_id`` and the records up to ``seq`` (None: not a position
        of this journal's chain)."""
        with self._lock:
            return position_hash(self._conn, self.base, input_id, seq)


def _of_types(types: Collection[str]) -> tuple[str, list[str]]:
    """The SQL condition "the input's ``type`` is one of ``types``" and its parameters. SQLite first looks for
    each name in quotes in the text (a byte search), and parses the JSON only of the rows that hold one: the
    journal writes a type name as it is (plain names: nothing to escape), so a row of that type always holds it,
    and ``json_extract`` decides (a name in another field, or a nested ``type``, is not the row's type)."""
    kinds = sorted(types)
    if not kinds or not all(k.isidentifier() for k in kinds):
        raise ValueError(f"input types must be plain names: {kinds!r}")
    found = " OR ".join(["instr(event, ?) > 0"] * len(kinds))
    return (f"({found}) AND json_extract(event, '$.type') IN ({', '.join('?' * len(kinds))})",
            [f'"{k}"' for k in kinds] + kinds)
