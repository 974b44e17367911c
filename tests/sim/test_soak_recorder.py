"""The soak's recorder invariant, "the recorder's database holds exactly each table's journal", catches each way
a record can differ from its journal: checked on a real chained journal and a real recorder database (the
recorder's own store over SQLite), each attack an insider's edit of the database file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.journal.anchor import create_key
from controller.recorder.store import open_store
from controller.sim.soak_check import InvariantBroken
from controller.sim.soak_recorder import INVARIANT, SoakRecorder

EVENTS = 12


def _pit(tmp_path: Path) -> tuple[Path, bytes, SoakRecorder, list[str]]:
    """A table's journal of EVENTS published records and a recorder database holding exactly them."""
    journals = tmp_path / "journals"
    journals.mkdir()
    key = create_key(journals / "journal.key")
    journal = Journal(journals / "t01.journal", key=key)
    try:
        journal.add_records([{"ts": 1795334400.0 + i, "type": "tick", "i": i} for i in range(EVENTS)])
        bodies = [row.body for row in journal.records(1, EVENTS)]
    finally:
        journal.close()
    store = open_store(str(tmp_path / "recorder.db"))
    try:
        for seq, body in enumerate(bodies, start=1):
            assert store.add_event("t01", seq, body) == "stored"
    finally:
        store.close()
    return journals, key, SoakRecorder(tmp_path, brokers=[], prefix="soak", password=None, seed=1), bodies


def _edit(tmp_path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(tmp_path / "recorder.db") as db:
        assert db.execute(sql, params).rowcount >= 1


def test_a_record_equal_to_its_journal_passes_after_a_step_and_at_the_end(tmp_path: Path) -> None:
    journals, key, recorder, _ = _pit(tmp_path)
    assert recorder.check(journals, ["t01"], key) == {"t01": EVENTS}
    import asyncio

    asyncio.run(recorder.check_final(journals, ["t01"], key, catch_up_s=1))


def test_a_body_edited_in_the_record_is_caught_naming_its_seq(tmp_path: Path) -> None:
    journals, key, recorder, bodies = _pit(tmp_path)
    _edit(tmp_path, "UPDATE events SET body = ? WHERE table_id = 't01' AND seq = 5", bodies[4].replace("tick", "tock"))
    with pytest.raises(InvariantBroken, match=r"t01 seq 5: the recorder holds .*tock.*, the journal .*tick") as e:
        recorder.check(journals, ["t01"], key)
    assert e.value.invariant == INVARIANT


def test_a_seq_deleted_below_the_recorders_position_is_caught(tmp_path: Path) -> None:
    journals, key, recorder, _ = _pit(tmp_path)
    _edit(tmp_path, "DELETE FROM events WHERE table_id = 't01' AND seq = 7")
    with pytest.raises(InvariantBroken, match="t01: the recorder lacks seq 7 below its position 12"):
        recorder.check(journals, ["t01"], key)


def test_a_record_beyond_the_journal_is_caught(tmp_path: Path) -> None:
    """The recorder holding a seq the journal never wrote (a journal rolled back, or a forged event)."""
    journals, key, recorder, _ = _pit(tmp_path)
    store = open_store(str(tmp_path / "recorder.db"))
    try:
        assert store.add_event("t01", EVENTS + 1, '{"seq": 13, "ts": 1.0, "type": "forged"}') == "stored"
    finally:
        store.close()
    with pytest.raises(InvariantBroken, match="t01: the recorder holds seq 13, the journal ends at 12"):
        recorder.check(journals, ["t01"], key)


def test_an_edit_after_an_earlier_check_is_caught_at_the_end(tmp_path: Path) -> None:
    """A step's check reads each event once; the final one reads the whole record again."""
    import asyncio

    journals, key, recorder, bodies = _pit(tmp_path)
    assert recorder.check(journals, ["t01"], key) == {"t01": EVENTS}
    _edit(tmp_path, "UPDATE events SET body = ? WHERE table_id = 't01' AND seq = 2", bodies[1].replace("1", "9"))
    recorder.check(journals, ["t01"], key)  # nothing new to read after a step
    with pytest.raises(InvariantBroken, match="t01 seq 2: the recorder holds"):
        asyncio.run(recorder.check_final(journals, ["t01"], key, catch_up_s=1))


def test_a_record_behind_its_journal_at_the_end_is_caught(tmp_path: Path) -> None:
    import asyncio

    journals, key, recorder, _ = _pit(tmp_path)
    journal = Journal(journals / "t01.journal", key=key, create=False)
    try:
        journal.add_records([{"ts": 1795334500.0, "type": "tick", "i": EVENTS}])
    finally:
        journal.close()
    assert recorder.check(journals, ["t01"], key) == {"t01": EVENTS}  # behind is fine while the pit plays
    with pytest.raises(InvariantBroken, match=r"after 1 s the recorder holds only .*'t01': \(12, 13\)"):
        asyncio.run(recorder.check_final(journals, ["t01"], key, catch_up_s=1))
