"""The start's bulk check of sealed segments (issue 40): faster, and still every row checked.

The check reads each sealed segment's concatenations as the bytes SQLite stores (``CAST ... AS BLOB``), counts its
hashes of 32 bytes in one aggregate, and hashes the bytes as they are, never decoding them to Python text. Each
case here is an attack by someone with write access to the journal file (``sqlite3`` on a real file, no key) on
a row inside a sealed segment, where only the bulk check sees it first: every one is refused, naming the row,
whether the segments are hashed on the journal's connection (a short journal) or in worker processes (a long one,
:mod:`controller.journal.bulk`: here forced on these few rows).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest

from controller.journal import Journal, JournalError, JournalIntegrityError, bulk
from controller.journal import writer as jmod

KEY = bytes(range(32))
INPUTS = 40
SEAL = 16  # inputs per sealed segment here: the rows attacked below are all sealed


def _in_workers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[bulk.Job], subprocess.Popen[bytes] | None]]:
    """Every check from now on hashes its segments in two worker processes, however few its rows; returns the
    list of the workers started, with the jobs each was given."""
    given: list[tuple[list[bulk.Job], subprocess.Popen[bytes] | None]] = []
    start = bulk._start

    def started(uri: str, jobs: list[bulk.Job]) -> subprocess.Popen[bytes] | None:
        given.append((jobs, start(uri, jobs)))
        return given[-1][1]

    monkeypatch.setattr(bulk, "PROCESSES_FROM_ROWS", 0)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(bulk, "_start", started)
    return given


@pytest.fixture(params=["connection", "workers"])
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A keyed journal of INPUTS inputs and two records each, sealed every SEAL inputs; checked on the journal's
    connection, or in worker processes."""
    monkeypatch.setattr(jmod, "SEAL_EVERY", SEAL)
    if request.param == "workers":
        _in_workers(monkeypatch)
    path = tmp_path / "t01.journal"
    with Journal(path, key=KEY) as j:
        j.verify()  # a checked writer seals as it goes
        for i in range(1, INPUTS + 1):
            j.commit_event({"type": "card", "card": "QD", "n": i},
                           [{"ts": 1.5 * i, "type": "card", "card": "QD", "spot": 1}, {"type": "state", "n": i}],
                           ts=1_800_000_000.0 + i)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT max(last_input) FROM seals").fetchone()[0] >= 2 * SEAL
    yield path


def _attack(path: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    with closing(sqlite3.connect(path)) as db:
        for sql, args in statements:
            db.execute(sql, args)
        db.commit()


def _refused(path: Path) -> JournalIntegrityError:
    with Journal(path, key=KEY) as j, pytest.raises(JournalIntegrityError) as caught:
        j.verify()
    return caught.value


def test_the_unaltered_journal_checks_in_bulk(journal: Path) -> None:
    with Journal(journal, key=KEY) as j:
        result = j.verify()
    assert result.sealed_rows >= 2 * SEAL * 3 and result.inputs == INPUTS


@pytest.mark.parametrize("table, column, key, row, value", [
    # bytes that are not UTF-8 at all, where text was: read as bytes, hashed as bytes, found
    ("inputs", "event", "id", 5, b'{"card":"QD","n":5,"type":"card"\xff}'),
    ("outbox", "body", "seq", 7, b"\xc3\x28"),
    # one character changed, stored as a blob
    ("inputs", "event", "id", 6, b'{"type":"card","card":"QH","n":6}'),
    # the time of a sealed input: one bit of its double
    ("inputs", "ts", "id", 9, 1_800_000_009.0000002),
    ("inputs", "ts", "id", 9, "at nine"),  # not a number (REAL affinity keeps it text)
])
def test_a_sealed_value_altered_is_refused_naming_its_row(journal: Path, table: str, column: str, key: str, row: int,
                                                          value: object) -> None:
    _attack(journal, (f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (value, row)))
    error = _refused(journal)
    assert (error.table, error.row) == (table, row), str(error)


Move = Callable[[sqlite3.Connection], None]


@pytest.mark.parametrize("table, key, what", [
    ("inputs", "id", "hash"),
    ("outbox", "seq", "hash"),
])
def test_a_hash_byte_moved_to_the_next_row_is_refused(journal: Path, table: str, key: str, what: str) -> None:
    """31 bytes and 33: the same concatenation, the same count of hashes; the lengths give it away."""
    with closing(sqlite3.connect(journal)) as db:
        first, second = (bytes(db.execute(f"SELECT {what} FROM {table} WHERE {key} = ?", (n,)).fetchone()[0])
                         for n in (3, 4))
    _attack(journal, (f"UPDATE {table} SET {what} = ? WHERE {key} = 3", (first[:-1],)),
            (f"UPDATE {table} SET {what} = ? WHERE {key} = 4", (first[-1:] + second,)))
    error = _refused(journal)
    assert (error.table, error.row) == (table, 3), str(error)


def test_a_hash_set_null_is_refused(journal: Path) -> None:
    _attack(journal, ("UPDATE outbox SET hash = NULL WHERE seq = 10", ()))
    error = _refused(journal)
    assert (error.table, error.row) == ("outbox", 10), str(error)


def test_two_input_ids_merged_into_one_text_are_refused(journal: Path) -> None:
    """Records 3 and 4 follow inputs 2 and 2: '2,2' in one and NULL in the other joins to the same text unless
    each id is quoted as what it is."""
    with closing(sqlite3.connect(journal)) as db:
        ids = [r[0] for r in db.execute("SELECT input_id FROM outbox WHERE seq IN (3, 4) ORDER BY seq")]
    _attack(journal, ("UPDATE outbox SET input_id = ? WHERE seq = 3", (f"{ids[0]},{ids[1]}",)),
            ("UPDATE outbox SET input_id = NULL WHERE seq = 4", ()))
    error = _refused(journal)
    assert (error.table, error.row) == ("outbox", 3), str(error)


@pytest.mark.parametrize("value", [b"2", "two", 2.5])
def test_an_input_id_of_another_type_is_refused(journal: Path, value: object) -> None:
    """A blob of the digits joins to the same text as the integer: only its type tells (the bulk check counts the
    integers); a word or a fraction is refused too."""
    with closing(sqlite3.connect(journal)) as db:
        honest = db.execute("SELECT input_id FROM outbox WHERE seq = 4").fetchone()[0]
    forged = str(honest).encode() if value == b"2" else value
    _attack(journal, ("UPDATE outbox SET input_id = ? WHERE seq = 4", (forged,)))
    error = _refused(journal)
    assert (error.table, error.row) == ("outbox", 4), str(error)


def test_workers_hash_every_sealed_segment_as_the_connection_does(journal: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The same results from two worker processes as from the journal's own connection, every segment given to a
    worker (none left to the parent), and the check passes on them."""
    with closing(sqlite3.connect(journal)) as db:
        seals = db.execute("SELECT first_input, last_input, first_seq, last_seq FROM seals ORDER BY n").fetchall()
        jobs: list[bulk.Job] = [("quick_check", 0, 0)]
        for fi, li, fs, ls in seals:
            jobs += [("inputs", fi, li), ("outbox", fs, ls)]
        here = bulk.run_jobs(db, journal, jobs, workers=1)
        given = _in_workers(monkeypatch)
        there = bulk.run_jobs(db, journal, jobs, workers=2)
    assert there == here and all(r is not None for r in here) and here[0] == ["ok"]
    assert sorted(job for share, _ in given for job in share) == sorted(jobs[1:])
    assert len(given) == 2 and all(worker is not None and worker.returncode == 0 for _, worker in given)
    with Journal(journal, key=KEY) as j:
        assert j.verify().sealed_rows >= 2 * SEAL * 3


@pytest.mark.parametrize("interpreter", ["/bin/false", "/nonexistent/python", ""])
def test_a_worker_that_fails_leaves_its_share_to_the_check(journal: Path, monkeypatch: pytest.MonkeyPatch,
                                                           interpreter: str) -> None:
    """Workers that cannot run (an interpreter that exits 1 at once, one that is not there, none known: an
    embedded Python) slow the check, never weaken it: their segments are hashed on the journal's connection,
    and an altered sealed row is still named."""
    _in_workers(monkeypatch)
    monkeypatch.setattr(sys, "executable", interpreter)
    with Journal(journal, key=KEY) as j:
        assert j.verify().sealed_rows >= 2 * SEAL * 3
    _attack(journal, ("UPDATE inputs SET event = ? WHERE id = ?", ('{"type":"card","card":"QH","n":6}', 6)))
    error = _refused(journal)
    assert (error.table, error.row) == ("inputs", 6), str(error)


def test_a_file_sqlite_cannot_read_is_refused_in_one_line(journal: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first leaf page of the sealed records overwritten: the workers fail on it, the check on the journal's
    connection says what SQLite says, as one refusal, and no worker is left running."""
    given = _in_workers(monkeypatch)
    with closing(sqlite3.connect(journal)) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        page = db.execute("SELECT min(pageno) FROM dbstat WHERE name = 'outbox' AND pagetype = 'leaf'").fetchone()[0]
    with journal.open("r+b") as f:
        f.seek((page - 1) * page_size)
        f.write(b"\xff" * page_size)
    with pytest.raises(JournalError) as caught, Journal(journal, key=KEY) as j:
        j.verify()
    assert "not a usable SQLite journal" in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert len(given) == 2 and all(worker is not None and worker.poll() is not None for _, worker in given)
