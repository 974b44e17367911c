"""The chain hash of one record, as a ``state`` at that seq names it (``Journal.record_hash``): the journal-chain
mutation run found no test reading it beside the journal (issue 39). A wrong answer here makes the recorder keep,
and the witnesses compare, another head than the journal's."""

from __future__ import annotations

from pathlib import Path

from controller.journal import Journal


def test_the_hash_of_each_record_is_its_rows_and_none_where_there_is_no_such_record(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as j:
        j.commit_event({"type": "bet", "spot": 1, "amount": 500}, [{"type": "bet"}, {"type": "x"}])
        j.commit_event({"type": "no_more_bets"}, [{"type": "no_more_bets"}])
        rows = [j.row_hash("outbox", seq) for seq in (1, 2, 3)]
        assert all(rows) and len(set(rows)) == 3
        assert [j.record_hash(seq) for seq in (1, 2, 3)] == rows  # the last from memory, the others from the file
        assert (j.record_hash(0), j.record_hash(4), j.record_hash(-1)) == (None, None, None)
    with Journal(path) as j:  # reopened: the last one is read back
        assert [j.record_hash(seq) for seq in (0, 1, 2, 3, 4)] == [None, *rows, None]
