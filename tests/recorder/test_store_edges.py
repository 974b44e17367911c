"""More edges of the recorder's store that its mutation run found no test at (issue 39): each refusal of an event
or a state says in one line what is wrong with which table's which seq; an upper-case table id is a table id; the
gaps between held events that follow each other; a batch that starts a new record and then reads its state, or
that meets events held beyond a full page; an unnamed record retired twice. Each on SQLite and PostgreSQL, like
test_store.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller.recorder.store import BadRecord, RecorderStore, open_store

A, B = "a" * 32, "b" * 32
H1 = "1" * 64


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def body(seq: int, **fields: Any) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "bet", **fields}, separators=(",", ":"))


@pytest.mark.parametrize(("table_id", "seq", "text", "says"), [
    ("t01", 0, body(0), "t01: seq 0 is not a positive integer"),
    ("t01", True, body(1), "t01: seq True is not a positive integer"),
    ("t01", "3", body(3), "t01: seq '3' is not a positive integer"),
    ("t01", 1.5, body(1), "t01: seq 1.5 is not a positive integer"),
    ("t 01", 1, body(1), "table id 't 01': 1 to 64 of A-Z a-z 0-9 . _ -"),
    ("t" * 65, 1, body(1), f"table id {'t' * 65!r}: 1 to 64 of A-Z a-z 0-9 . _ -"),
    ("t01", 1, b"\xff{}", "t01 seq 1: the body is not UTF-8"),
    ("t01", 1, "{", "t01 seq 1: the body is not JSON (Expecting property name enclosed in double quotes)"),
    ("t01", 1, "[1]", "t01 seq 1: the body is not a JSON object"),
    ("t01", 1, body(2), "t01 seq 1: the body says seq 2"),
    ("t01", 1, body(1, ts="soon"), "t01 seq 1: the body has no numeric ts"),
    ("t01", 1, body(1, ts=True), "t01 seq 1: the body has no numeric ts"),
    ("t01", 1, body(1, type=""), "t01 seq 1: the body has no type"),
    ("t01", 1, body(1, type=5), "t01 seq 1: the body has no type"),
])
def test_an_event_that_is_not_one_is_refused_saying_what_and_where(store: RecorderStore, table_id: Any, seq: Any,
                                                                  text: str | bytes, says: str) -> None:
    with pytest.raises(BadRecord) as e:
        store.add_event(table_id, seq, text)
    assert str(e.value) == says
    assert store.tables() == []


@pytest.mark.parametrize(("fields", "says"), [
    ({"seq": 0}, "t01: seq 0 is not a positive integer"),
    ({"journal_id": 5}, "t01 seq 1: state journal_id 5 is not a string"),
    ({"head": b"11"}, "t01 seq 1: state head b'11' is not a string"),
    ({"pit": 1}, "t01 seq 1: state pit 1 is not a string"),
    ({"head": "1" * 15}, f"t01 seq 1: state head {'1' * 15!r} is not a hex hash"),
    ({"head": "G" * 64}, f"t01 seq 1: state head {'G' * 64!r} is not a hex hash"),
])
def test_a_state_that_is_not_one_is_refused_saying_what_and_where(store: RecorderStore, fields: dict[str, Any],
                                                                 says: str) -> None:
    state: dict[str, Any] = {"seq": 1, "journal_id": A, "head": H1, "pit": "pit-1", **fields}
    with pytest.raises(BadRecord) as e:
        store.note_state("t01", state["seq"], state["journal_id"], state["head"], state["pit"])
    assert str(e.value) == says
    assert store.tables() == [] and store.heads("t01") == []


def test_an_upper_case_table_id_is_a_table_id(store: RecorderStore) -> None:
    assert store.add_event("PIT2.T-07_b", 1, body(1)) == "stored"
    assert [t.table_id for t in store.tables()] == ["PIT2.T-07_b"]


def test_the_gaps_between_held_events_that_follow_each_other(store: RecorderStore) -> None:
    for seq in (1, 2, 5, 6, 9):
        store.add_event("t01", seq, body(seq))
    assert store.gaps("t01") == [(3, 4), (7, 8)]
    store.add_event("t01", 3, body(3))
    assert store.gaps("t01") == [(4, 4), (7, 8)]


def test_a_batch_starting_a_new_record_reads_the_new_records_state(store: RecorderStore) -> None:
    """The recorder's catch-up: journal A's events and state, then journal B started on purpose and its first
    state, in one batch; the table is B's, in the pit B's state names (not A's, the newer seq of the record kept)."""
    with store.batch(["t01"]):
        for seq in (1, 2, 3):
            store.add_event("t01", seq, body(seq))
        assert store.note_state("t01", 3, A, H1, "pit-1") == "stored"
        started = json.dumps({"seq": 1, "ts": 1795334500.0, "type": "journal_started", "journal_id": B},
                             separators=(",", ":"))
        assert store.add_event("t01", 1, started) == "new_journal"
        assert store.note_state("t01", 1, B, None, "pit-2") == "stored"
    t = store.table("t01")
    assert t is not None and (t.journal_id, t.pit, t.last_seq, t.state_seq) == (B, "pit-2", 1, 1)
    (old,) = store.records("t01")
    assert (old.table_id, old.pit, old.last_seq, old.state_seq) == (f"t01@{A}", "pit-1", 3, 3)


def test_an_older_state_later_in_a_batch_leaves_the_newest_ones_pit(store: RecorderStore) -> None:
    with store.batch(["t01"]):
        store.add_event("t01", 1, body(1))
        assert store.note_state("t01", 3, A, None, "pit-3") == "stored"
        assert store.note_state("t01", 2, A, None, "pit-2") == "stored"
    t = store.table("t01")
    assert t is not None and (t.pit, t.state_seq) == ("pit-3", 3)


def test_a_held_event_beyond_a_full_page_of_held_ones_repeats_in_a_batch(store: RecorderStore) -> None:
    """2001 events held beyond a gap (more than the page of 2000 the store reads held seqs by): filling the gap
    moves none of them, and one of the last sent again within the same batch is a repeat, not a second copy."""
    store.add_event("t01", 1, body(1))
    with store.batch(["t01"]):
        for seq in range(4, 2005):
            store.add_event("t01", seq, body(seq))
    with store.batch(["t01"]):
        assert store.add_event("t01", 2, body(2)) == "stored"
        assert store.add_event("t01", 2004, body(2004)) == "repeat"
        assert store.add_event("t01", 2004, body(2004, note="x")) == "conflict"
    assert store.gaps("t01") == [(3, 3)]
    assert store.position("t01").seq == 2  # type: ignore[union-attr]


def test_a_record_of_no_known_journal_retired_twice_is_kept_under_a_numbered_name(store: RecorderStore) -> None:
    for jid in (A, B):
        assert store.add_event("t01", 1, body(1)) in ("stored", "conflict")
        store.note_state("t01", 1, None, None, None)  # its state names no journal
        started = json.dumps({"seq": 1, "ts": 1795334500.0, "type": "journal_started", "journal_id": jid},
                             separators=(",", ":"))
        assert store.add_event("t01", 1, started) == "new_journal"
    assert sorted(r.table_id for r in store.records("t01")) == ["t01@unnamed", "t01@unnamed.2"]


def test_the_same_players_rating_with_another_start_under_a_held_id_is_a_conflict(store: RecorderStore) -> None:
    first = json.dumps({"rating_id": "t01-7", "player": "4417", "spot": 3, "started": 100.0, "ended": None})
    assert store.add_rating("t01", first) == "stored"
    moved = json.dumps({"rating_id": "t01-7", "player": "4417", "spot": 3, "started": 160.0, "ended": 700.0})
    assert store.add_rating("t01", moved) == "conflict"
    (kept,) = store.ratings()
    assert (kept.started, kept.ended, kept.body) == (100.0, None, json.loads(first))


def test_a_conflicting_state_at_the_newest_seq_moves_neither_pit_nor_journal(store: RecorderStore) -> None:
    store.add_event("t01", 1, body(1))
    assert store.note_state("t01", 1, A, H1, "pit-1") == "stored"
    assert store.note_state("t01", 1, B, H1, "pit-9") == "conflict"
    t = store.table("t01")
    assert t is not None and (t.journal_id, t.pit, t.state_seq) == (A, "pit-1", 1)
