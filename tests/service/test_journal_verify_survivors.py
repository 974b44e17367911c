"""``Journal.verify`` (``ChainCheck.check_rows``) where the journal-verify mutation run of 2026-12-07 left survivors
(issue 39, docs/testing.md): a sealed segment with its last row deleted, a record naming an input the journal no
longer holds, a record moved back behind its input, a record whose hash cannot be computed, a long text input id,
the rows after the last record, and what a check hands back (the head row an anchor names, the last input's hash).
Each on a real journal file edited with sqlite3, as test_journal_verify_edges.py does; each refusal compared whole."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal, JournalIntegrityError
from controller.journal.chain import AnchorPoint, Mac
from controller.journal.verify import BIG, ChainCheck

KEY = b"a table key for verify's survivors"
HASH = "its hash does not match its content (altered, or a row before it deleted, inserted or moved)"


def write(path: Path, *, ticks: int = 0) -> None:
    """Input 1 with records 1 and 2, input 2 with record 3, input 3 with none, input 4 with record 4; then
    ``ticks`` inputs without records (inputs 5, 6, ...)."""
    with Journal(path, key=KEY) as j:
        j.commit_event({"type": "bet", "amount": 500}, [{"type": "bet"}, {"type": "chips"}], ts=1000.0)
        j.commit_event({"type": "no_more_bets"}, [{"type": "no_more_bets"}], ts=1001.0)
        j.append_input({"type": "tick"}, ts=1002.0)
        j.commit_event({"type": "card", "card": "AS"}, [{"type": "card"}], ts=1003.0)
        for n in range(ticks):
            j.append_input({"type": "tick"}, ts=1004.0 + n)


def sealed(path: Path, *, ticks: int = 0) -> None:
    """The journal of :func:`write`, verified by its writer: every row sealed (the next verify checks them in
    bulk, and a segment whose digest no longer matches row by row, to its seal's last input and seq)."""
    write(path, ticks=ticks)
    with Journal(path, key=KEY) as j:
        v = j.verify()
        assert v.tail_rows == 8 + ticks
    with Journal.open_readonly(path, key=KEY) as j:
        v = j.verify()
        assert (v.sealed_rows, v.tail_rows) == (8 + ticks, 0)


def edit(path: Path, sql: str) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute(sql)
    db.close()


def refusal(path: Path) -> str:
    with Journal.open_readonly(path, key=KEY) as j, pytest.raises(JournalIntegrityError) as e:
        j.verify()
    return str(e.value)


def test_a_sealed_segment_whose_last_record_was_deleted_is_refused_naming_that_record(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    sealed(path)
    edit(path, "DELETE FROM outbox WHERE seq = 4")
    assert refusal(path) == f"journal {path}: outbox row 4 (record): missing: a sealed row was deleted"


def test_a_sealed_segment_whose_last_input_was_deleted_is_refused_naming_that_input(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    sealed(path, ticks=1)
    edit(path, "DELETE FROM inputs WHERE id = 5")
    assert refusal(path) == f"journal {path}: inputs row 5 (input): missing: a sealed row was deleted"


def test_a_sealed_record_whose_input_was_deleted_last_is_refused_naming_the_input(tmp_path: Path) -> None:
    """Input 4, the segment's last, deleted with its record 4 left: no input comes after input 3."""
    path = tmp_path / "t.journal"
    sealed(path)
    edit(path, "DELETE FROM inputs WHERE id = 4")
    assert refusal(path) == (f"journal {path}: inputs row 4 (input): missing: record 4 refers to input 4, "
                             "but after input 3 comes none")


def test_the_last_input_deleted_after_the_last_seal_is_refused_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path)
    edit(path, "DELETE FROM inputs WHERE id = 4")
    assert refusal(path) == (f"journal {path}: inputs row 4 (input): missing: record 4 refers to input 4, "
                             "but after input 3 comes none")


def test_a_record_moved_back_behind_the_input_before_it_is_refused_naming_the_record(tmp_path: Path) -> None:
    """Record 4 made to name input 1 while input 2 precedes it: its hash does not follow input 2 either."""
    path = tmp_path / "t.journal"
    write(path)
    edit(path, "UPDATE outbox SET input_id = 1 WHERE seq = 4")
    assert refusal(path) == (f"journal {path}: outbox row 4 (record): refers to input 1 but follows input 2 "
                             "(rows deleted, inserted or moved)")


def test_a_long_text_input_id_is_named_by_its_first_twenty_characters(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path)
    edit(path, "UPDATE outbox SET input_id = 'abcdefghijklmnopqrstuvwxyz' WHERE seq = 2")
    assert refusal(path) == (f"journal {path}: outbox row 2 (record): its input id 'abcdefghijklmnopqrst' is not an "
                             "integer (altered)")


@pytest.mark.parametrize("sql", [
    "UPDATE outbox SET body = CAST(body AS BLOB) WHERE seq = 3",  # not text: its hash cannot be computed
    "UPDATE inputs SET event = CAST(event AS BLOB) WHERE id = 3",
])
def test_a_row_whose_hash_cannot_be_computed_is_refused_as_not_matching(tmp_path: Path, sql: str) -> None:
    """The same bytes stored as a BLOB: the rows after it still link to its stored hash, so only this row's own
    check can notice it."""
    path = tmp_path / "t.journal"
    write(path)
    edit(path, sql)
    row = "outbox row 3 (record)" if "outbox" in sql else "inputs row 3 (input)"
    assert refusal(path) == f"journal {path}: {row}: {HASH}"


def test_every_input_after_the_last_record_is_checked_and_the_last_one_is_the_head(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path, ticks=3)
    with Journal.open_readonly(path, key=KEY) as j:
        v = j.verify()
        assert (v.inputs, v.records, v.last_input, v.last_seq, v.tail_rows) == (7, 4, 7, 4, 11)
        head = j.row_hash("inputs", 7)
        assert head is not None and v.head == head.hex()
        assert j.anchor_point() == AnchorPoint(j.journal_id, 7, 4, "inputs", 7, head.hex())
    edit(path, "UPDATE inputs SET ts = ts + 1 WHERE id = 7")
    assert refusal(path) == f"journal {path}: inputs row 7 (input): {HASH}"


def test_a_verified_journal_ending_with_a_record_anchors_that_record(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path)
    with Journal.open_readonly(path, key=KEY) as j:
        v = j.verify()
        assert j.anchor_point() == AnchorPoint(j.journal_id, 4, 4, "outbox", 4, v.head)


def test_a_snapshot_at_the_last_input_after_a_verify_links_to_that_inputs_hash(tmp_path: Path) -> None:
    """The writer keeps the last input's hash from its verify and links a snapshot at that input to it."""
    path = tmp_path / "t.journal"
    write(path, ticks=1)
    with Journal(path, key=KEY) as j:
        j.verify()
        j.save_snapshot({"phase": "betting"}, input_id=5, ts=1010.0)
    with Journal.open_readonly(path, key=KEY) as j:
        assert j.verify(snapshots=True).snapshots == 1


def check(path: Path) -> tuple[ChainCheck, bytes, sqlite3.Connection]:
    """A check of the journal at ``path`` on a connection of its own, and the chain's start's hash."""
    with Journal.open_readonly(path, key=KEY) as j:
        journal_id, base = j.journal_id, j.base
    conn = sqlite3.connect(path)
    return ChainCheck(conn, path, Mac(KEY), journal_id, base), base.hash, conn


def test_a_check_from_the_start_hands_back_the_last_row_and_the_last_inputs_hash(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path, ticks=1)
    chk, start, conn = check(path)
    with Journal.open_readonly(path, key=KEY) as j:
        in5, rec4 = j.row_hash("inputs", 5), j.row_hash("outbox", 4)
    try:
        assert chk.check_rows(start, 0, 0, BIG, BIG, None) == (5, 4, in5, ("inputs", 5), in5)
        assert chk.check_rows(start, 0, 0, 4, 4, None)[2:] == (rec4, ("outbox", 4), j_hash(conn, 4))
    finally:
        conn.close()


def j_hash(conn: sqlite3.Connection, input_id: int) -> bytes:
    return bytes(conn.execute("SELECT hash FROM inputs WHERE id = ?", (input_id,)).fetchone()[0])


def test_a_check_with_no_rows_to_check_hands_back_where_it_started(tmp_path: Path) -> None:
    """From the chain's start: the start itself (its hash, row "base"); from input 5, seq 4: that input's row and
    hash, the head given."""
    path = tmp_path / "t.journal"
    write(path, ticks=1)
    chk, start, conn = check(path)
    try:
        assert chk.check_rows(start, 0, 0, 0, 0, None) == (0, 0, start, ("base", 0), start)
        in5 = j_hash(conn, 5)
        assert chk.check_rows(in5, 5, 4, BIG, BIG, None) == (5, 4, in5, ("inputs", 5), in5)
    finally:
        conn.close()
