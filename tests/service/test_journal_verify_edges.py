"""``Journal.verify`` row by row (``ChainCheck.check_rows``) on a journal edited behind the table with sqlite3: each
edit refused naming the first row it breaks, in the words ``tablectl journal verify`` prints. The fast twin of
test_journal_forgery.py (which edits sealed journals of real demos): the journal-verify mutation run's first pass
found the refusal paths unreached by the journal's fast tests (issue 39)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal, JournalIntegrityError

HASH = "its hash does not match its content (altered, or a row before it deleted, inserted or moved)"

EDITS = [
    ("UPDATE inputs SET event = '{\"type\":\"bet\",\"amount\":900}' WHERE id = 2", f"inputs row 2 (input): {HASH}"),
    ("UPDATE inputs SET ts = ts + 1 WHERE id = 2", f"inputs row 2 (input): {HASH}"),
    ("UPDATE inputs SET hash = NULL WHERE id = 1", f"inputs row 1 (input): {HASH}"),
    ("UPDATE outbox SET body = '{\"seq\":3,\"type\":\"x\"}' WHERE seq = 3", f"outbox row 3 (record): {HASH}"),
    ("UPDATE outbox SET hash = x'00' WHERE seq = 1", f"outbox row 1 (record): {HASH}"),
    ("DELETE FROM inputs WHERE id = 2",
     "inputs row 2 (input): missing: record 3 refers to input 2, but after input 1 comes input 3"),
    ("DELETE FROM inputs WHERE id = 3", "inputs row 3 (input): missing: the ids jump from 2 to 4"),
    ("DELETE FROM outbox WHERE seq = 2", "outbox row 2 (record): missing: the seqs jump from 1 to 3"),
    ("UPDATE outbox SET input_id = 'two' WHERE seq = 3",
     "outbox row 3 (record): its input id 'two' is not an integer (altered)"),
    ("UPDATE outbox SET input_id = 1 WHERE seq = 3", f"outbox row 3 (record): {HASH}"),
    ("UPDATE outbox SET input_id = 3 WHERE seq = 3",
     "outbox row 3 (record): refers to input 3 but its hash says it follows input 2 (its input id altered)"),
    ("UPDATE outbox SET input_id = 9 WHERE seq = 4",
     "outbox row 4 (record): refers to input 9 but its hash says it follows input 4 (its input id altered)"),
    ("UPDATE outbox SET input_id = 0 WHERE seq = 2",  # moved back behind the input its hash follows
     "outbox row 2 (record): refers to input 0 but its hash says it follows input 1 (its input id altered)"),
]


def write(path: Path) -> None:
    """Input 1 with records 1 and 2, input 2 with record 3, input 3 with none, input 4 with record 4."""
    with Journal(path) as j:
        j.commit_event({"type": "bet", "amount": 500}, [{"type": "bet"}, {"type": "chips"}], ts=1000.0)
        j.commit_event({"type": "no_more_bets"}, [{"type": "no_more_bets"}], ts=1001.0)
        j.append_input({"type": "tick"}, ts=1002.0)
        j.commit_event({"type": "card", "card": "AS"}, [{"type": "card"}], ts=1003.0)


@pytest.mark.parametrize(("edit", "says"), EDITS)
def test_a_journal_edited_behind_the_table_is_refused_naming_the_first_row_it_breaks(tmp_path: Path, edit: str,
                                                                                    says: str) -> None:
    path = tmp_path / "t.journal"
    write(path)
    db = sqlite3.connect(path)
    with db:
        db.execute(edit)
    db.close()
    with Journal.open_readonly(path) as j, pytest.raises(JournalIntegrityError) as e:
        j.verify()
    assert str(e.value) == f"journal {path}: {says}"


def test_the_untouched_journal_verifies_to_its_last_row(tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    write(path)
    with Journal.open_readonly(path) as j:
        v = j.verify()
        assert (v.inputs, v.records, v.last_input, v.last_seq, v.tail_rows) == (4, 4, 4, 4, 8)
        assert v.head == j.record_hash(4).hex()  # type: ignore[union-attr]
        assert re.fullmatch(r"[0-9a-f]{64}", v.head)
