"""A table that takes a new journal on purpose (``journal_started``, ``journal_adopted``) gets a new record in the
recorder's database, the old one kept whole under ``<table_id>@<journal_id>``; any other body at a seq the recorder
holds stays a conflict (controller/recorder/store.py). Each rule on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller.recorder.store import RecorderStore, open_store

OLD, NEW, THIRD = "a" * 32, "b" * 32, "c" * 32


def body(seq: int, kind: str = "bet", **extra: Any) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": kind, **extra}, separators=(",", ":"))


def started(seq: int, journal_id: str, **extra: Any) -> str:
    return body(seq, "journal_started", journal_id=journal_id, **extra)


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def _hold_old_journal(store: RecorderStore, upto: int = 6) -> None:
    """The recorder holds journal OLD of t01 to ``upto``, with its heads, a gap beyond and a rating."""
    assert store.add_event("t01", 1, started(1, OLD)) == "stored"
    for seq in range(2, upto + 1):
        assert store.add_event("t01", seq, body(seq)) == "stored"
        assert store.note_state("t01", seq, OLD, f"{seq:02x}" * 32, "pit-1") == "stored"
    assert store.add_event("t01", upto + 3, body(upto + 3)) == "held"
    store.add_rating("t01", json.dumps({"rating_id": "t01-3", "player": "4417", "spot": 2, "started": 1.0,
                                        "ended": 2.0, "rounds": 5}))


def test_a_new_journal_on_purpose_starts_a_new_record_and_keeps_the_old_one_whole(store: RecorderStore) -> None:
    _hold_old_journal(store)
    old_events = [e.body for e in store.events("t01")]
    old_heads = store.heads("t01")
    assert store.add_event("t01", 1, started(1, NEW)) == "new_journal"
    assert store.add_event("t01", 2, body(2, "rules_changed")) == "stored"
    assert store.note_state("t01", 2, NEW, "ee" * 32, "pit-1") == "stored"
    p = store.position("t01")
    assert p is not None and (p.seq, p.journal_id, p.head_seq, p.head) == (2, NEW, 2, "ee" * 32)
    assert [e.body for e in store.events("t01")] == [started(1, NEW), body(2, "rules_changed")]
    assert store.gaps("t01") == [], "the old journal's held events went with it"
    # the old record, whole, under its journal's name
    kept = f"t01@{OLD}"
    assert [t.table_id for t in store.tables()] == ["t01"]
    assert [(r.table_id, r.journal_id, r.last_seq) for r in store.records("t01")] == [(kept, OLD, 6)]
    assert [e.body for e in store.events(kept)] == old_events
    assert store.heads(kept) == old_heads and store.heads("t01")[0].journal_id == NEW
    assert store.gaps(kept) == [(7, 8)]
    assert store.table(kept) is not None and store.table(kept).last_seq == 6  # type: ignore[union-attr]
    assert [(r.table_id, r.rating_id) for r in store.ratings(player="4417")] == [(kept, "t01-3")]
    # the new journal's events after it are ordinary: a repeat is dropped, another body is a conflict
    assert store.add_event("t01", 1, started(1, NEW)) == "repeat"
    assert store.add_event("t01", 2, body(2, "bet")) == "conflict"


def test_only_a_journal_start_naming_another_journal_starts_a_new_record(store: RecorderStore) -> None:
    _hold_old_journal(store)
    before = [e.body for e in store.events("t01")]
    # the insider's moves: another body at a held seq, a journal start naming the journal held, a start naming
    # nothing or something that is not a journal id: conflicts, nothing moved
    for seq, text in ((1, body(1, "rules_changed")), (3, body(3, "bet", amount="9999")),
                      (1, started(1, OLD, operator="x")), (2, body(2, "journal_started")),
                      (2, started(2, "not-a-journal")), (3, body(3, "journal_started", journal_id=7))):
        assert store.add_event("t01", seq, text) == "conflict", text
    assert store.add_event("t01", 1, started(1, OLD)) == "repeat"
    assert [e.body for e in store.events("t01")] == before and store.records("t01") == []
    assert store.position("t01").journal_id == OLD  # type: ignore[union-attr]


def test_an_adopted_journal_beyond_what_the_recorder_holds_starts_its_record_at_the_adoption(
        store: RecorderStore) -> None:
    _hold_old_journal(store, upto=4)
    adopted = body(12, "journal_adopted", journal_id=NEW, operator="s.jones", reason="disk replaced", at_seq=11)
    assert store.add_event("t01", 12, adopted) == "new_journal"
    assert store.add_event("t01", 13, body(13)) == "stored"
    p = store.position("t01")
    assert p is not None and (p.seq, p.journal_id) == (13, NEW)
    assert [e.seq for e in store.events("t01")] == [12, 13] and store.gaps("t01") == []
    assert [e.seq for e in store.events(f"t01@{OLD}")] == [1, 2, 3, 4]


def test_a_record_of_no_known_journal_is_left_only_for_a_start_that_conflicts(store: RecorderStore) -> None:
    for seq in range(1, 4):  # events but no state yet: the journal is not known
        store.add_event("t01", seq, body(seq))
    assert store.add_event("t01", 5, started(5, NEW)) == "held", "nothing it holds is contradicted"
    assert store.add_event("t02", 1, body(1)) == "stored"
    assert store.add_event("t02", 1, started(1, NEW)) == "new_journal"
    assert [r.table_id for r in store.records("t02")] == ["t02@unnamed"]
    assert store.add_event("t02", 1, started(1, THIRD)) == "new_journal"
    assert [r.table_id for r in store.records("t02")] == [f"t02@{NEW}", "t02@unnamed"]
    assert store.records("t01") == [] and [t.table_id for t in store.tables()] == ["t01", "t02"]


def test_records_of_one_table_are_not_another_tables(store: RecorderStore) -> None:
    for table in ("t_1", "tx1"):
        store.add_event(table, 1, started(1, OLD))
        store.note_state(table, 1, OLD, "ab" * 32, None)
        assert store.add_event(table, 1, started(1, NEW)) == "new_journal"
    assert [r.table_id for r in store.records("t_1")] == [f"t_1@{OLD}"]


def test_the_old_records_conflict_alarms_go_with_it() -> None:
    """Conflicts raised before the new journal's start came (its state's head, say) were the old record's."""
    from controller.recorder.board import Board

    board = Board()
    board.conflict("t01", 3, "state head", 1.0)
    board.conflict("t02", 3, "event", 1.0)
    board.due(10.0)
    board.forget_conflicts("t01")
    assert [a.table_id for a in board.alarms()] == ["t02"]
    assert board.due(11.0)[1], "the alarms list is due again"
    board.forget_conflicts("t01")
    assert not board.due(12.0)[1], "nothing changed: nothing due"
