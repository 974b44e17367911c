"""The journal writer's bookkeeping beside the chain, which the journal-writer mutation run found no fast test at
(issue 39): the seal a verified writer writes over the rows it appends since (the next start checks them in bulk,
not one by one), the anchor each commit records (the table's own copy of how far its journal went), an input
given as JSON text stored as given, and the one-line refusal of records that do not follow the last input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from controller.journal import AnchorPoint, Journal
from controller.journal.writer import SEAL_EVERY

KEY = b"a table key for the writer's edges"


class Points:
    """An anchor sink that keeps what it is given (``record`` at each commit, ``write`` at close)."""

    def __init__(self) -> None:
        self.recorded: list[AnchorPoint] = []
        self.written: list[AnchorPoint] = []

    def record(self, point: AnchorPoint) -> None:
        self.recorded.append(point)

    def write(self, point: AnchorPoint) -> None:
        self.written.append(point)

    def close(self) -> None:
        pass


def test_rows_appended_after_a_verify_are_sealed_and_the_next_start_checks_them_in_bulk(tmp_path: Path) -> None:
    """A verified writer keeps what it appends in memory and seals it every SEAL_EVERY inputs, from memory: the
    next start checks those rows in bulk against the seal, and any row that is not as it was appended fails it."""
    path = tmp_path / "t.journal"
    with Journal(path, key=KEY) as j:
        j.commit_event({"type": "bet"}, [{"type": "bet"}], ts=1000.0)
        first = j.verify()  # checks the 2 rows one by one, then seals them
        assert (first.sealed_rows, first.tail_rows) == (0, 2)
        with j.transaction():
            for n in range(SEAL_EVERY):
                j.commit_event({"type": "card", "n": n}, [{"type": "card", "n": n}], ts=1001.0 + n / 8)
        j.append_input({"type": "shuffle"}, ts=2000.0)  # after the seal: left to the next start's check
    with Journal(path, key=KEY) as j:
        start = j.verify()
        assert (start.inputs, start.records) == (SEAL_EVERY + 2, SEAL_EVERY + 1)
        assert (start.sealed_rows, start.tail_rows) == (2 + 2 * SEAL_EVERY, 1)


def test_each_commit_records_the_anchor_of_its_last_row(tmp_path: Path) -> None:
    with Journal(tmp_path / "t.journal", key=KEY) as j:
        points = Points()
        j.anchor = points
        j.commit_event({"type": "bet"}, [{"type": "bet"}, {"type": "chips"}])
        j.append_input({"type": "no_more_bets"})
        with j.transaction():  # a commit that adds no row records nothing
            pass
        j.add_records([{"type": "no_more_bets"}], input_id=2)
        got = [(p.inputs, p.seq, p.table, p.row, p.head) for p in points.recorded]
        assert got == [(1, 2, "outbox", 2, j.record_hash(2).hex()),  # type: ignore[union-attr]
                       (2, 2, "inputs", 2, j.row_hash("inputs", 2).hex()),  # type: ignore[union-attr]
                       (2, 3, "outbox", 3, j.head.hex())]
        assert {p.journal_id for p in points.recorded} == {j.journal_id}
    assert points.written == [points.recorded[-1]], "closing writes the last one"


def test_an_input_given_as_json_text_is_stored_as_given(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    text = '{"type": "bet", "amount": "5.00"}'  # not the journal's compact form: kept as the caller wrote it
    with Journal(path) as j:
        iid = j.append_input(text, ts=1000.5)
        (row,) = j.inputs_since(0)
        assert (row.id, row.ts, row.event) == (iid, 1000.5, json.loads(text))
    db = sqlite3.connect(path)
    try:
        assert db.execute("SELECT event FROM inputs").fetchall() == [(text,)]
    finally:
        db.close()


def test_records_that_do_not_follow_the_last_input_are_refused_saying_which(tmp_path: Path) -> None:
    with Journal(tmp_path / "t.journal") as j:
        j.append_input({"type": "a"})
        j.append_input({"type": "b"})
        with pytest.raises(ValueError, match=r"^records follow the last input \(2\), not input 1$"):
            j.add_records([{"type": "x"}], input_id=1)
        assert j.last_seq == 0
