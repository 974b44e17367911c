"""The chain as docs/journal.md lays it out ("What the chain covers"), recomputed from the file with the standard
``hmac`` and ``struct`` alone: what an auditor's own tool does, and what a journal written by an older release needs
to keep verifying (journals are audit records). A change to a row's content, its order or the genesis that the
writer and the checker made alike would pass every check the journal makes of itself, and fail this one (issue 39:
the journal-chain mutation run)."""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
import struct
from pathlib import Path

import pytest

from controller.journal import Journal, JournalIntegrityError

KEY = b"an auditor's copy of the table key"


def mac(data: bytes) -> bytes:
    return hmac.new(KEY, data, hashlib.sha256).digest()


def write(path: Path) -> None:
    with Journal(path, key=KEY) as j:
        j.commit_event({"type": "bet", "spot": 1, "amount": 500}, [{"type": "bet", "spot": 1}, {"type": "chips"}],
                       ts=1000.25)
        j.commit_event({"type": "no_more_bets"}, [], ts=1001.5)
        j.commit_event({"type": "card", "card": "AS"}, [{"type": "card", "card": "A♠"}], ts=1002.75)
        j.save_snapshot({"phase": "dealing", "note": "é"}, input_id=2, ts=1003.0)


def test_every_row_hash_is_the_documented_hmac_of_the_previous_row_and_the_rows_content(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path)
    db = sqlite3.connect(path)
    try:
        journal_id = db.execute("SELECT value FROM meta WHERE key = 'journal_id'").fetchone()[0]
        inputs = db.execute("SELECT id, ts, event, hash FROM inputs ORDER BY id").fetchall()
        records = db.execute("SELECT seq, input_id, body, hash FROM outbox ORDER BY seq").fetchall()
        snapshots = db.execute("SELECT input_id, seq, ts, state, hash FROM snapshots").fetchall()
    finally:
        db.close()
    assert [r[0] for r in inputs] == [1, 2, 3] and [r[0] for r in records] == [1, 2, 3]

    prev = mac(b"tablectl journal genesis " + journal_id.encode())
    input_hashes = {}
    for iid, ts, event, stored in inputs:
        prev = mac(prev + b"I" + struct.pack(">q", iid) + struct.pack(">d", ts) + event.encode("utf-8"))
        assert stored == prev, f"input {iid}"
        input_hashes[iid] = prev
        for seq, src, body, stored_record in (r for r in records if r[1] == iid):
            prev = mac(prev + b"O" + struct.pack(">q", seq) + struct.pack(">q", src) + body.encode("utf-8"))
            assert stored_record == prev, f"record {seq}"
    assert [(r[0], r[1]) for r in records] == [(1, 1), (2, 1), (3, 3)]  # each record follows its input

    ((iid, seq, ts, state, stored_snapshot),) = snapshots
    assert (iid, seq, ts) == (2, 3, 1003.0)  # taken at input 2, the records then committed up to seq 3
    assert stored_snapshot == mac(input_hashes[2] + b"S" + struct.pack(">qq", iid, seq) + struct.pack(">d", ts)
                                  + state.encode("utf-8"))


def test_a_row_added_by_hand_as_documented_verifies_and_one_with_another_content_is_named(tmp_path: Path) -> None:
    """The other way round: an input written from the layout alone (as an older release wrote it) checks, and the
    journal goes on from it; the same row with its ts one second later is refused, naming it."""
    for ts, good in ((1004.0, True), (1005.0, False)):
        path = tmp_path / f"{ts}.journal"
        write(path)
        db = sqlite3.connect(path)
        with db:
            head = db.execute("SELECT hash FROM outbox WHERE seq = 3").fetchone()[0]
            event = '{"type":"stand"}'
            row_hash = mac(head + b"I" + struct.pack(">qd", 4, 1004.0) + event.encode())
            db.execute("INSERT INTO inputs (id, ts, event, hash) VALUES (4, ?, ?, ?)", (ts, event, row_hash))
        db.close()
        with Journal.open_readonly(path, key=KEY) as j:
            if good:
                assert j.verify(snapshots=True).rows == 8  # 4 inputs, 3 records, 1 snapshot
                assert j.head == row_hash and j.last_input_id == 4
            else:
                with pytest.raises(JournalIntegrityError, match=r"inputs row 4 \(input\): its hash does not match"):
                    j.verify(snapshots=True)
