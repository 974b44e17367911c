"""``tablectl journal migrate``: the one, offline, journaled way a journal of the format before the chain is chained.

Nothing is ever signed at a table's start (:func:`controller.journal.schema.check_format` refuses a journal of
the older format, and one that claims it while holding the chain's fields). Chaining such a journal signs its
rows *as they are now*, so it is a person's act, made on purpose and on the record: :func:`migrate` takes the
journal's writer lock (refused while a table runs it), refuses a file that already holds any chain field or
whose schema is not exactly the older format's (a trigger, a view, an extra table...), checks SQLite's own
structure and the rows' shapes, and then, in one transaction, adds the chain's columns, chains every input,
record and snapshot under the key, and appends one chained record, ``journal_migrated``, naming the operator,
the reason, the time and what was chained; it is published with the table's next events, shown by
``tablectl journal verify`` and in ``tablectl recall``. The journal gets a new journal id (a migrated journal is
a new one to its witnesses: it is adopted on purpose, ``docs/journal.md``). The delivery mark of the older
format carries no MAC, so it is dropped: the table sends its records again once (a repeat, never a gap).
"""

from __future__ import annotations

import os
import sqlite3
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from controller.contract.roles import check_user
from controller.journal.chain import Mac, dumps, genesis, key_id, link_input, link_record, link_snapshot
from controller.journal.errors import JournalError
from controller.journal.schema import (
    CHAINED_SCHEMAS,
    MIGRATED,
    SCHEMA,
    SCHEMA_VERSION,
    UNCHAINED_SCHEMA,
    chain_fields,
    objects,
    schema_difference,
)
from controller.journal.store import take_writer_lock
from controller.journal.writer import Journal

__all__ = ["Migrated", "check_operator", "check_reason", "migrate"]

#: meta keys the format before the chain held
_OLD_META = frozenset({"delivered_upto", "rules_input"})
REASON_MAX = 500


@dataclass(frozen=True, slots=True)
class Migrated:
    """What :func:`migrate` chained: counts, the new journal id, the migration record's ``seq`` and the head."""

    path: Path
    journal_id: str
    inputs: int
    records: int
    snapshots: int
    seq: int
    head: str


def check_operator(name: str) -> str:
    """``name`` if it is a user name of DESIGN's charset, else :class:`JournalError` (one line)."""
    if check_user(name) is not None:
        raise JournalError(f"--operator {name[:70]!r}: not a user name (1 to 64 of a-z 0-9 . _ -, lower case)")
    return name


def check_reason(text: str) -> str:
    """``text`` stripped if it is one printable line of at most :data:`REASON_MAX` characters."""
    reason = text.strip()
    if not reason:
        raise JournalError("--reason: empty (say why the journal is migrated)")
    if len(reason) > REASON_MAX or not reason.isprintable():
        raise JournalError(f"--reason: one printable line of at most {REASON_MAX} characters")
    return reason


def migrate(path: str | os.PathLike[str], *, key: bytes, operator: str, reason: str,
            now: float | None = None) -> Migrated:
    """Chain the journal at ``path`` (format before the chain) under ``key``, on ``operator``'s word for
    ``reason`` (see the module docstring). :class:`JournalError` (one line) for anything else: no such file,
    in use, not SQLite, already chained, a schema or row that is not the older format's."""
    operator, reason = check_operator(operator), check_reason(reason)
    p = Path(path)
    if not p.is_file():
        raise JournalError(f"journal {p}: no such journal")
    fd = take_writer_lock(p)
    try:
        try:
            conn = sqlite3.connect(p, isolation_level=None, timeout=5)
        except sqlite3.Error as exc:
            raise JournalError(f"journal {p}: cannot open: {exc}") from None
        try:
            counts = _chain(conn, p, key, operator, reason, time.time() if now is None else now)
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"journal {p}: not a usable SQLite journal: {exc}") from None
        finally:
            conn.close()
    finally:
        os.close(fd)
    with Journal(p, key=key, create=False) as journal:  # what a start will check, and the tail sealed
        result = journal.verify(snapshots=True)
        return Migrated(p, journal.journal_id, *counts, result.head)


def _check_old(conn: sqlite3.Connection, path: Path) -> None:
    where = f"journal {path}"
    found = objects(conn)
    if not found:
        raise JournalError(f"{where}: holds nothing: not a table journal")
    if found in CHAINED_SCHEMAS:
        fields = ", ".join(chain_fields(conn, found))
        raise JournalError(f"{where}: already holds the chain's fields ({fields}): migrate chains only a journal of "
                           "the format before the chain; nothing done")
    diff = schema_difference(found, [UNCHAINED_SCHEMA])
    if diff is not None:
        raise JournalError(f"{where}: its schema is not the older format's ({diff}): not migrated")
    fields = ", ".join(chain_fields(conn, found))
    if fields:
        raise JournalError(f"{where}: already holds the chain's fields ({fields}): migrate chains only a journal of "
                           "the format before the chain; nothing done")
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version not in (0, 1):
        raise JournalError(f"{where}: claims format {version} but holds none of the chain's fields: not migrated")
    problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        raise JournalError(f"{where}: SQLite's quick_check fails: {problems[0]}: not migrated")
    for rowid, key, value in conn.execute("SELECT rowid, key, value FROM meta ORDER BY rowid"):
        if key not in _OLD_META or (key == "rules_input" and not (isinstance(value, str) and value.isdecimal()
                                                                  and len(value) < 19)):
            raise JournalError(f"{where}: meta row {rowid} ({str(key)[:40]}): not a key or value of the older "
                               "format: not migrated")
    bad = conn.execute("SELECT id FROM inputs WHERE typeof(ts) != 'real' OR typeof(event) != 'text' "
                       "ORDER BY id LIMIT 1").fetchone()
    if bad is not None:
        raise JournalError(f"{where}: inputs row {bad[0]}: not of the older format's types: not migrated")
    bad = conn.execute("SELECT seq FROM outbox WHERE typeof(input_id) NOT IN ('integer', 'null') "
                       "OR typeof(body) != 'text' ORDER BY seq LIMIT 1").fetchone()
    if bad is not None:
        raise JournalError(f"{where}: outbox row {bad[0]}: not of the older format's types: not migrated")


def _chain(conn: sqlite3.Connection, path: Path, key: bytes, operator: str, reason: str,
           now: float) -> tuple[int, int, int, int]:
    """Check the file is of the older format, then chain it in one transaction; return (inputs, records,
    snapshots, the migration record's seq)."""
    where = f"journal {path}"
    conn.execute("BEGIN IMMEDIATE")
    try:
        _check_old(conn, path)
        mac = Mac(key)
        journal_id = uuid.uuid4().hex
        prev = genesis(mac, journal_id)
        inputs = conn.execute("SELECT id, ts, event FROM inputs ORDER BY id").fetchall()
        records = conn.execute("SELECT seq, COALESCE(input_id, 0), body FROM outbox ORDER BY seq").fetchall()
        for expected, row in enumerate(inputs, 1):
            if row[0] != expected:
                raise JournalError(f"{where}: inputs row {expected}: missing (the ids jump to {row[0]}): not migrated")
        last_input = len(inputs)
        for expected, (seq, iid, _) in enumerate(records, 1):
            if seq != expected:
                raise JournalError(f"{where}: outbox row {expected}: missing (the seqs jump to {seq}): not migrated")
            if not 0 <= iid <= last_input or (expected > 1 and iid < records[expected - 2][1]):
                raise JournalError(f"{where}: outbox row {seq}: follows input {iid}, out of order: not migrated")
        seq = len(records) + 1
        body = dumps({"seq": seq, "ts": round(now, 3), "type": MIGRATED, "operator": operator, "reason": reason,
                       "from_format": 1, "inputs": last_input, "records": len(records), "journal_id": journal_id})
        records.append((seq, last_input, body))
        for table in ("inputs", "outbox", "snapshots"):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN hash BLOB")
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("UPDATE outbox SET input_id = 0 WHERE input_id IS NULL")
        conn.execute("INSERT INTO outbox (seq, input_id, body) VALUES (?, ?, ?)", (seq, last_input, body))
        hashes: dict[int, bytes] = {}
        in_rows, out_rows = iter(inputs), []
        pending = next(in_rows, None)
        for rseq, iid, text in records:
            while pending is not None and pending[0] <= iid:
                prev = hashes[pending[0]] = link_input(mac, prev, pending[0], float(pending[1]), str(pending[2]))
                pending = next(in_rows, None)
            prev = link_record(mac, prev, rseq, int(iid), str(text))
            out_rows.append((prev, rseq))
        while pending is not None:
            prev = hashes[pending[0]] = link_input(mac, prev, pending[0], float(pending[1]), str(pending[2]))
            pending = next(in_rows, None)
        conn.executemany("UPDATE inputs SET hash = ? WHERE id = ?", [(h, i) for i, h in hashes.items()])
        conn.executemany("UPDATE outbox SET hash = ? WHERE seq = ?", out_rows)
        snaps = conn.execute("SELECT input_id, seq, ts, state FROM snapshots").fetchall()
        for iid, sseq, ts, state in snaps:
            if iid not in hashes or not 0 <= sseq < seq:
                raise JournalError(f"{where}: snapshots row {iid}: taken at an input or seq the journal does not "
                                   "hold: not migrated")
            h = link_snapshot(mac, hashes[iid], iid, sseq, float(ts), str(state))
            conn.execute("UPDATE snapshots SET hash = ? WHERE input_id = ?", (h, iid))
        conn.execute("DELETE FROM meta WHERE key = 'delivered_upto'")  # no MAC: every record is sent again once
        for k, v in (("journal_id", journal_id), ("key_id", key_id(key)), ("chained_at", str(round(now, 3)))):
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (k, v))
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    return last_input, len(records), len(snaps), seq
