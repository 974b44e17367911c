"""Verification: every row of the journal checked against its chain, the first bad one named.

How (``docs/journal.md``): SQLite's own structure (``quick_check``); every ``meta`` row a key of
:data:`controller.journal.schema.META_KEYS` of its shape; the chain's start; each sealed segment by a few SQL
aggregates and one SHA-256 (:meth:`ChainCheck.bulk_checks`, in worker processes on a long journal)
instead of one HMAC per row, and a segment whose digest does not match row by row, which names the first bad
row; the rows after the last seal one by one (:meth:`ChainCheck.check_rows`); the snapshots when asked. A
writer then seals the rows it checked one by one (:class:`controller.journal.chain.Segment`).
"""

from __future__ import annotations

import hmac
import json
import re
import sqlite3
import struct
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.journal.bulk import Job, run_jobs
from controller.journal.chain import ChainBase, Mac, Segment, base_record, combine, link_input, link_record, seal_mac
from controller.journal.errors import JournalError, JournalIntegrityError
from controller.journal.schema import META_KEYS
from controller.journal.snapshots import check_snapshot
from controller.journal.store import input_hash

__all__ = ["BIG", "ChainCheck", "End", "Verified", "rounds_settled"]

#: "to the end" for :meth:`ChainCheck.check_rows`
BIG = 2**62
#: where a check ended: last input, last seq, head, head row, the last input's hash
End = tuple[int, int, bytes, tuple[str, int], bytes]


@dataclass(frozen=True, slots=True)
class Verified:
    """The outcome of :meth:`controller.journal.writer.Journal.verify` (every row checked)."""

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


class ChainCheck:
    """One check of a journal's rows on its connection, under ``mac``, from the chain's start ``base``."""

    def __init__(self, conn: sqlite3.Connection, path: Path, mac: Mac, journal_id: str, base: ChainBase) -> None:
        self._conn = conn
        self.path = path
        self._mac = mac
        self._journal_id = journal_id
        self.base = base

    def _bad(self, table: str, row: int, kind: str, reason: str) -> JournalIntegrityError:
        return JournalIntegrityError(self.path, table, row, kind, reason)


    def key_id_altered(self, stored: str | None, this_key_id: str) -> None:
        """Raise naming ``meta.key_id`` when the chain checks under this key although the stored key id is
        another's (the id was edited: not a wrong key); return when it does not (a wrong key, said by the caller)."""
        try:
            self.run(False, collect=False, meta=False)
        except (JournalError, sqlite3.DatabaseError):
            return
        rowid = self._conn.execute("SELECT rowid FROM meta WHERE key = 'key_id'").fetchone()
        raise self._bad("meta", int(rowid[0]) if rowid else 0, "key_id",
                        f"{'altered' if stored else 'missing (deleted)'}: the chain checks under this key, whose id "
                        f"is {this_key_id}")

    def check_meta(self) -> None:
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


    def run(self, snapshots: bool, *, collect: bool, meta: bool = True) -> tuple[End, int, Segment | None]:
        """Check every row: SQLite's ``quick_check``, the meta rows (``meta``), the sealed segments in bulk, the
        rows after the last seal one by one (gathered for a seal when ``collect``), the snapshots (``snapshots``);
        return (the end: last input, last seq, head, head row, last input's hash; the rows checked one by one;
        the rows gathered)."""
        conn = self._conn
        seals = conn.execute("SELECT n, first_input, last_input, first_seq, last_seq, head, digest, mac "
                             "FROM seals ORDER BY n").fetchall()
        problems, digests = self.bulk_checks([(int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in seals])
        if problems != ["ok"]:
            raise JournalError(f"journal {self.path}: SQLite's quick_check fails: {problems[0]}"
                               + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
        if meta:
            self.check_meta()
        base = self.base
        stored = conn.execute("SELECT value FROM meta WHERE key = 'chain_base'").fetchone()
        if stored is not None and base_record(self._mac, self._journal_id, base) != str(stored[0]):
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
            expected = seal_mac(self._mac, prev_mac, n, (fi, li, fs, ls), shead, digest)
            if not hmac.compare_digest(expected, smac):
                raise self._bad("seals", n, "seal", "its HMAC does not match (altered)")
            if digests[expected_n - 1] != digest:
                end = self.check_rows(head, at_in, at_seq, li, ls, None)
                if end[2] != shead:
                    raise self._bad("seals", n, "seal", "the rows it seals do not end at its head")
                head_row, last_input_hash = end[3], end[4]
            else:
                head_row = ("outbox", ls) if ls >= fs and self._record_after_input(ls, li) else ("inputs", li)
                last_input_hash = b""  # read below when needed
            prev_mac, head, at_in, at_seq = smac, shead, li, ls
        if seals and not last_input_hash:
            last_input_hash = input_hash(conn, self.base, at_in)
        sealed = (at_in, at_seq)
        collected = Segment(at_in + 1, at_seq + 1) if collect else None
        end = self.check_rows(head, at_in, at_seq, BIG, BIG, collected)
        if end[0] == sealed[0] and end[1] == sealed[1]:
            end = (at_in, at_seq, head, head_row, last_input_hash)
        tail = (end[0] - sealed[0]) + (end[1] - sealed[1])
        if snapshots:
            def at(input_id: int) -> bytes:
                return end[4] if input_id == end[0] else input_hash(conn, base, input_id)

            for row in conn.execute("SELECT input_id, seq, ts, state, hash FROM snapshots ORDER BY input_id"):
                if int(row[0]) > end[0] or int(row[0]) < base.input:
                    raise self._bad("snapshots", int(row[0]), "snapshot",
                                    "taken at an input the journal does not hold")
                check_snapshot(self._mac, self.path, row, at)
        return end, tail, collected


    def _record_after_input(self, seq: int, input_id: int) -> bool:
        found = self._conn.execute("SELECT input_id FROM outbox WHERE seq = ?", (seq,)).fetchone()
        return found is not None and found[0] == input_id

    def bulk_checks(self, seals: list[tuple[int, int, int, int]]) -> tuple[list[str], list[bytes | None]]:
        """SQLite's ``quick_check`` and the digest of every sealed segment as its rows are now
        (:func:`controller.journal.bulk.run_jobs`: in worker processes on a long journal)."""
        jobs: list[Job] = [("quick_check", 0, 0)]
        for fi, li, fs, ls in seals:
            jobs += [("inputs", fi, li), ("outbox", fs, ls)]
        results = run_jobs(self._conn, self.path, jobs)
        digests: list[bytes | None] = []
        for k, (fi, li, fs, ls) in enumerate(seals):
            part_in, part_out = results[1 + 2 * k], results[2 + 2 * k]
            digests.append(None if part_in is None or part_out is None else
                           combine((fi, li, fs, ls), part_in + part_out))
        return results[0], digests


    def check_rows(self, prev: bytes, after_in: int, after_seq: int, upto_in: int, upto_seq: int,
                    collect: Segment | None) -> tuple[int, int, bytes, tuple[str, int], bytes]:
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
        in_hash = input_hash(conn, self.base, after_in)
        nxt = next(inputs, None)

        def check_input(row: tuple[Any, ...]) -> bytes:
            iid, ts, event, stored = row
            if iid != cur_in + 1:
                raise self._bad("inputs", cur_in + 1, "input", f"missing: the ids jump from {cur_in} to {iid}")
            if not _links(stored, link_input, mac, prev, iid, ts, event):
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
                nxt = next(inputs, None)
            if cur_in < iid <= upto_in:  # every input up to iid read: input iid is not in the chain
                self._input_id_altered(prev, seq, iid, cur_in, body, stored)
                after = f"input {nxt[0]}" if nxt is not None else "none"
                raise self._bad("inputs", cur_in + 1, "input", f"missing: record {seq} refers to input {iid}, "
                                f"but after input {cur_in} comes {after}")
            if iid != cur_in:  # an input id behind the chain's, or past a sealed segment's last input
                self._input_id_altered(prev, seq, iid, cur_in, body, stored)
                raise self._bad("outbox", seq, "record", f"refers to input {iid} but follows input {cur_in} "
                                "(rows deleted, inserted or moved)")
            if not _links(stored, link_record, mac, prev, seq, iid, body):
                raise self._bad("outbox", seq, "record", "its hash does not match its content "
                                "(altered, or a row before it deleted, inserted or moved)")
            if collect is not None:
                collect.out_lines.append(body)
                collect.out_inputs.append(iid)
                collect.out_hashes.append(stored)
            prev, cur_seq, head_row = bytes(stored), seq, ("outbox", seq)
        while nxt is not None:
            prev = in_hash = check_input(nxt)
            cur_in = nxt[0]
            head_row = ("inputs", cur_in)
            nxt = next(inputs, None)
        if upto_in != BIG and cur_in != upto_in:
            raise self._bad("inputs", cur_in + 1, "input", "missing: a sealed row was deleted")
        if upto_in != BIG and cur_seq != upto_seq:
            raise self._bad("outbox", cur_seq + 1, "record", "missing: a sealed row was deleted")
        return cur_in, cur_seq, prev, head_row, in_hash


    def _input_id_altered(self, prev: bytes, seq: int, iid: int, cur_in: int, body: Any, stored: Any) -> None:
        """Raise naming the record when its hash checks as following input ``cur_in``: then its own input id
        was edited (rather than an input deleted or altered), which is what the message should say."""
        if _links(stored, link_record, self._mac, prev, seq, cur_in, body):
            raise self._bad("outbox", seq, "record", f"refers to input {iid} but its hash says it follows "
                            f"input {cur_in} (its input id altered)")


def _links(stored: Any, link: Callable[..., bytes], *values: Any) -> bool:
    """Whether ``stored`` is the chain hash ``link`` makes of a row's ``values``; False when they cannot make one
    (a value of another type than the writer's: altered)."""
    try:
        return hmac.compare_digest(link(*values), stored)
    except (TypeError, AttributeError, struct.error):
        return False


def rounds_settled(conn: sqlite3.Connection) -> int:
    """Rounds settled so far: the ``round`` of the last ``round_settled`` record (0 when none)."""
    row = conn.execute("SELECT body FROM outbox WHERE body LIKE '%\"type\":\"round_settled\"%' "
                             "ORDER BY seq DESC LIMIT 1").fetchone()
    if row is None:
        return 0
    with suppress(ValueError, TypeError, AttributeError):
        return int(json.loads(row[0]).get("round", 0))
    return 0
