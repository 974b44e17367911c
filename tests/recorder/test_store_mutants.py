"""The recorder's store at the edges a plausible wrong change would pass unseen (issue 39): a head at a seq already
noted under another journal id, ratings that end or start exactly at the bounds of a query. Each on SQLite and
PostgreSQL, like test_store.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller.recorder.store import RecorderStore, open_store

A, B = "a" * 32, "b" * 32
H1, H2 = "1" * 64, "2" * 64


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def body(seq: int) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "bet"}, separators=(",", ":"))


def test_a_head_at_a_noted_seq_under_another_journal_id_is_a_conflict_and_not_stored(store: RecorderStore) -> None:
    for seq in (1, 2):
        store.add_event("t01", seq, body(seq))
    assert store.note_state("t01", 2, A, H1, "pit-1") == "stored"
    assert store.note_state("t01", 2, B, H1, "pit-9") == "conflict", "the same head, another journal"
    assert store.note_state("t01", 2, None, H1, "pit-9") == "conflict", "the same head, no journal named"
    assert store.note_state("t01", 2, A, H2, "pit-9") == "conflict", "the same journal, another head"
    assert store.note_state("t01", 2, A, H1, "pit-1") == "repeat"
    assert [(h.seq, h.journal_id, h.head) for h in store.heads("t01")] == [(2, A, H1)]
    p = store.position("t01")
    assert p is not None and (p.seq, p.journal_id, p.head_seq, p.head) == (2, A, 2, H1)
    assert store.table("t01").pit == "pit-1", "a conflict moves nothing"  # type: ignore[union-attr]


def test_a_head_noted_without_a_journal_id_repeats_only_without_one(store: RecorderStore) -> None:
    store.add_event("t01", 1, body(1))
    assert store.note_state("t01", 1, None, H1, None) == "stored"
    assert store.note_state("t01", 1, None, H1, None) == "repeat"
    assert store.note_state("t01", 1, A, H1, None) == "conflict"


def test_the_same_head_at_the_same_seq_of_another_table_is_its_own(store: RecorderStore) -> None:
    for table in ("t01", "t02"):
        store.add_event(table, 1, body(1))
        assert store.note_state(table, 1, A, H1, None) == "stored"
    assert store.note_state("t02", 1, B, H1, None) == "conflict"


def test_an_older_state_stores_its_head_but_leaves_the_newest_position(store: RecorderStore) -> None:
    for seq in (1, 2, 3):
        store.add_event("t01", seq, body(seq))
    assert store.note_state("t01", 3, A, H2, "pit-2") == "stored"
    assert store.note_state("t01", 2, A, H1, "pit-1") == "stored"
    assert store.table("t01").pit == "pit-2"  # type: ignore[union-attr]
    assert [(h.seq, h.head) for h in store.heads("t01")] == [(2, H1), (3, H2)]
    assert store.note_state("t01", 3, A, None, "pit-3") == "stored", "a state without a head at the same seq"
    assert store.table("t01").pit == "pit-3"  # type: ignore[union-attr]


def rating(rating_id: str, started: float, ended: float | None, **extra: Any) -> str:
    return json.dumps({"rating_id": rating_id, "spot": 1, "player": "4417", "started": started, "ended": ended,
                       **extra})


def test_ratings_running_at_exactly_since_or_starting_at_exactly_until(store: RecorderStore) -> None:
    """``since`` keeps a rating that ended at that very second; ``until`` keeps one started before it, not at it."""
    store.add_rating("t01", rating("t01-1", 100.0, 200.0))
    store.add_rating("t01", rating("t01-2", 200.0, 300.0))
    store.add_rating("t01", rating("t01-3", 300.0, None))
    assert [r.rating_id for r in store.ratings(since=200.0)] == ["t01-1", "t01-2", "t01-3"]
    assert [r.rating_id for r in store.ratings(since=200.5)] == ["t01-2", "t01-3"]
    assert [r.rating_id for r in store.ratings(since=10_000.0)] == ["t01-3"], "an open rating is running"
    assert [r.rating_id for r in store.ratings(until=200.0)] == ["t01-1"]
    assert [r.rating_id for r in store.ratings(until=200.5)] == ["t01-1", "t01-2"]
    assert [r.rating_id for r in store.ratings(since=200.0, until=200.0)] == ["t01-1"]
    assert [r.rating_id for r in store.ratings(since=300.0, until=300.0)] == ["t01-2"]
    assert store.ratings(player="4418") == []
    assert [r.rating_id for r in store.ratings(player="4417", since=300.0)] == ["t01-2", "t01-3"]


def test_a_rating_reads_back_as_stored(store: RecorderStore) -> None:
    store.add_rating("t02", rating("t02-7", 100.0, 160.5, rounds=3))
    (r,) = store.ratings()
    assert (r.table_id, r.rating_id, r.player, r.spot, r.started, r.ended) == ("t02", "t02-7", "4417", 1, 100.0, 160.5)
    assert r.body["rounds"] == 3


def test_heads_reads_every_head_from_a_seq_on_however_far(store: RecorderStore) -> None:
    for seq in (1, 200, 5000):
        assert store.note_state("t01", seq, A, f"{seq:04x}" * 16, None) == "stored"
    assert [h.seq for h in store.heads("t01")] == [1, 200, 5000]
    assert [h.seq for h in store.heads("t01", 2)] == [200, 5000]
    assert [h.seq for h in store.heads("t01", 1, 200)] == [1, 200]
    assert [(h.journal_id, h.head) for h in store.heads("t01", 5000)] == [(A, "1388" * 16)]
    assert store.heads("t02") == []


def test_a_rating_without_a_spot_reads_back_without_one(store: RecorderStore) -> None:
    store.add_rating("t01", json.dumps({"rating_id": "t01-9", "player": "4417", "spot": None, "started": 5.0,
                                        "ended": None}))
    (r,) = store.ratings()
    assert (r.spot, r.ended) == (None, None)


def _started(seq: int, journal_id: str) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "journal_started", "journal_id": journal_id},
                      separators=(",", ":"))


def test_a_journal_retired_again_keeps_each_old_record_under_a_numbered_name(store: RecorderStore) -> None:
    """Journals A, B, A, B, A in turn (each put back on purpose): every record kept, none overwritten."""
    outcomes = []
    for jid in (A, B, A, B, A, B):
        outcomes.append(store.add_event("t01", 1, _started(1, jid)))
        assert store.note_state("t01", 1, jid, None, None) == "stored"  # its state names its journal
    assert outcomes == ["stored"] + ["new_journal"] * 5
    assert sorted(r.table_id for r in store.records("t01")) == [f"t01@{A}", f"t01@{A}.2", f"t01@{A}.3",
                                                                 f"t01@{B}", f"t01@{B}.2"]
    assert store.position("t01").journal_id == B  # type: ignore[union-attr]


def test_a_record_of_no_known_journal_is_kept_as_unnamed(store: RecorderStore) -> None:
    assert store.add_event("t01", 1, body(1)) == "stored"
    assert store.add_event("t01", 2, body(2)) == "stored"
    assert store.add_event("t01", 1, _started(1, A)) == "new_journal"
    (old,) = store.records("t01")
    assert (old.table_id, old.journal_id, old.last_seq) == ("t01@unnamed", None, 2)
    assert [e.seq for e in store.events("t01@unnamed")] == [1, 2]


@pytest.mark.parametrize(("fields", "why"), [
    ({"rating_id": ""}, "t01: a rating without rating_id"),
    ({"rating_id": 7}, "t01: a rating without rating_id"),
    ({"player": ""}, "t01 rating t01-1: no player"),
    ({"player": 4417}, "t01 rating t01-1: no player"),
    ({"spot": "3"}, "t01 rating t01-1: spot '3' is not a number"),
    ({"spot": True}, "t01 rating t01-1: spot True is not a number"),
    ({"started": None}, "t01 rating t01-1: started None is not a time"),
    ({"started": "5"}, "t01 rating t01-1: started '5' is not a time"),
    ({"started": False}, "t01 rating t01-1: started False is not a time"),
    ({"ended": "6"}, "t01 rating t01-1: ended '6' is not a time"),
    ({"ended": True}, "t01 rating t01-1: ended True is not a time"),
])
def test_a_rating_that_is_not_one_is_refused_saying_why(store: RecorderStore, fields: dict[str, Any],
                                                        why: str) -> None:
    from controller.recorder.store import BadRecord

    good = {"rating_id": "t01-1", "player": "4417", "spot": 3, "started": 5.0, "ended": None}
    with pytest.raises(BadRecord) as e:
        store.add_rating("t01", json.dumps({**good, **fields}))
    assert str(e.value) == why
    assert store.ratings() == []
    for text, says in (("[1]", "t01: a rating that is not a JSON object"),
                       ("{", "t01: a rating that is not JSON (Expecting property name enclosed in double quotes)")):
        with pytest.raises(BadRecord) as e:
            store.add_rating("t01", text)
        assert str(e.value) == says


def test_a_rating_as_published_bytes_is_stored_and_a_bad_byte_replaced(store: RecorderStore) -> None:
    good = {"rating_id": "t01-1", "player": "4417", "spot": None, "started": 5, "ended": 9}
    assert store.add_rating("t01", json.dumps(good).encode()) == "stored"
    raw = json.dumps({**good, "rating_id": "t01-2", "note": "@"}).encode().replace(b"@", b"\xff")
    assert store.add_rating("t01", raw) == "stored"
    assert [(r.rating_id, r.started, r.ended) for r in store.ratings()] == [("t01-1", 5.0, 9.0), ("t01-2", 5.0, 9.0)]
    assert store.ratings()[1].body["note"] == "\ufffd"
