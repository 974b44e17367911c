"""The recorder's database (controller/recorder/store.py), each rule checked on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.recorder.store import (
    SCHEMA_VERSION,
    BadRecord,
    RecorderStore,
    StoreError,
    StoreRefused,
    StoreUnavailable,
    open_store,
)
from tests.postgres import PostgresServer


def body(seq: int, kind: str = "bet", **extra: Any) -> str:
    """An event body shaped as the journal's outbox writes it (seq first, then ts and type)."""
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": kind, **extra}, separators=(",", ":"))


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def raw_sql(url: str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Write to the database behind the store's back (an insider, or a crash's leftovers)."""
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.replace("?", "%s"), params)
    else:
        conn = sqlite3.connect(url)
        with conn:
            conn.execute(sql, params)
        conn.close()


def test_events_in_order_are_stored_exactly_as_published(store: RecorderStore) -> None:
    bodies = [body(s, spot=3, amount="10") for s in range(1, 6)]
    assert [store.add_event("t01", s, b) for s, b in enumerate(bodies, 1)] == ["stored"] * 5
    got = list(store.events("t01"))
    assert [e.body for e in got] == bodies
    assert [(e.seq, e.type, e.ts) for e in got] == [(s, "bet", 1795334400.0 + s) for s in range(1, 6)]
    assert store.position("t01") is not None and store.position("t01").seq == 5  # type: ignore[union-attr]
    assert store.gaps("t01") == []
    assert [e.seq for e in store.events("t01", 2, 3)] == [2, 3]


def test_events_past_a_gap_are_held_and_moved_in_once_it_fills(store: RecorderStore) -> None:
    assert store.add_event("t01", 1, body(1)) == "stored"
    assert store.add_event("t01", 4, body(4)) == "held"
    assert store.add_event("t01", 6, body(6)) == "held"
    assert store.gaps("t01") == [(2, 3), (5, 5)]
    assert [e.seq for e in store.events("t01")] == [1]
    assert store.position("t01").seq == 1  # type: ignore[union-attr]
    assert store.add_event("t01", 3, body(3)) == "held"
    assert store.add_event("t01", 2, body(2)) == "stored"
    assert [e.seq for e in store.events("t01")] == [1, 2, 3, 4]
    assert store.gaps("t01") == [(5, 5)]
    assert store.add_event("t01", 5, body(5)) == "stored"
    assert [e.body for e in store.events("t01")] == [body(s) for s in range(1, 7)]
    assert store.gaps("t01") == []
    assert store.position("t01").seq == 6  # type: ignore[union-attr]


def test_tables_are_kept_apart(store: RecorderStore) -> None:
    store.add_event("t01", 1, body(1))
    store.add_event("t02", 1, body(1, "no_more_bets"))
    store.add_event("t02", 2, body(2))
    assert [(t.table_id, t.last_seq) for t in store.tables()] == [("t01", 1), ("t02", 2)]
    assert [e.type for e in store.events("t02")] == ["no_more_bets", "bet"]


def test_a_repeat_with_the_same_body_is_dropped_and_another_body_is_a_conflict_never_stored(
        store: RecorderStore) -> None:
    store.add_event("t01", 1, body(1))
    store.add_event("t01", 3, body(3))
    assert store.add_event("t01", 1, body(1)) == "repeat"
    assert store.add_event("t01", 3, body(3).encode()) == "repeat"
    assert store.add_event("t01", 1, body(1, amount="500")) == "conflict"
    assert store.add_event("t01", 3, body(3, amount="500")) == "conflict"
    # one byte differs (a space): not the same body
    assert store.add_event("t01", 1, body(1).replace(",", ", ", 1)) == "conflict"
    store.add_event("t01", 2, body(2))
    assert [e.body for e in store.events("t01")] == [body(1), body(2), body(3)]


def test_held_events_survive_a_restart_of_the_recorder(store_url: str) -> None:
    with open_store(store_url) as first:
        first.add_event("t01", 1, body(1))
        first.add_event("t01", 3, body(3))
    with open_store(store_url) as second:
        assert second.gaps("t01") == [(2, 2)]
        assert second.add_event("t01", 2, body(2)) == "stored"
        assert [e.seq for e in second.events("t01")] == [1, 2, 3]


def test_a_move_that_fails_half_way_leaves_nothing_half_done(store_url: str) -> None:
    """The held rows move in the same transaction as the event that fills the gap: when the move fails (a
    row already in events at a held seq, put there behind the store's back), neither the new event nor the
    move is kept."""
    with open_store(store_url) as store:
        store.add_event("t01", 1, body(1))
        store.add_event("t01", 3, body(3))
        raw_sql(store_url, "INSERT INTO events (table_id, seq, ts, type, body, received_at) VALUES (?, ?, ?, ?, ?, ?)",
                ("t01", 3, 0.0, "bet", "forged", 0.0))
        with pytest.raises(StoreError):
            store.add_event("t01", 2, body(2))
        assert store.position("t01").seq == 1  # type: ignore[union-attr]
        assert store.gaps("t01") == [(2, 2)]
        assert [e.seq for e in store.events("t01", 1, 2)] == [1]


def test_heads_count_only_within_the_gapless_prefix(store: RecorderStore) -> None:
    journal_id, h2, h4 = "a" * 32, "b" * 64, "c" * 64
    store.add_event("t01", 1, body(1))
    store.add_event("t01", 2, body(2))
    assert store.note_state("t01", 2, journal_id, h2, "pit-3") == "stored"
    assert store.note_state("t01", 4, journal_id, h4, "pit-3") == "stored"
    pos = store.position("t01")
    assert pos is not None and (pos.seq, pos.head_seq, pos.head, pos.journal_id) == (2, 2, h2, journal_id)
    store.add_event("t01", 3, body(3))
    store.add_event("t01", 4, body(4))
    pos = store.position("t01")
    assert pos is not None and (pos.seq, pos.head_seq, pos.head) == (4, 4, h4)
    assert [(h.seq, h.head) for h in store.heads("t01")] == [(2, h2), (4, h4)]
    assert store.note_state("t01", 4, journal_id, h4, "pit-3") == "repeat"
    assert store.note_state("t01", 4, journal_id, "d" * 64, "pit-3") == "conflict"
    assert store.heads("t01", 3)[0].head == h4
    assert store.table("t01").pit == "pit-3"  # type: ignore[union-attr]
    assert pos.as_dict() == {"table_id": "t01", "seq": 4, "journal_id": journal_id, "head_seq": 4, "head": h4}


def test_a_table_with_no_head_yet_has_a_null_head(store: RecorderStore) -> None:
    store.add_event("t01", 1, body(1))
    assert store.note_state("t01", 1, "a" * 32, None, None) == "stored"
    pos = store.position("t01")
    assert pos is not None and (pos.seq, pos.head_seq, pos.head) == (1, None, None)
    assert store.position("t09") is None


def rating(rating_id: str, player: str, started: float, ended: float | None, **extra: Any) -> str:
    return json.dumps({"rating_id": rating_id, "spot": 3, "player": player, "started": started, "ended": ended,
                       "minutes": 10.0, **extra})


def test_ratings_are_upserted_and_an_open_copy_never_replaces_an_ended_one(store: RecorderStore) -> None:
    assert store.add_rating("t01", rating("t01-1", "4000123", 100.0, None, rounds=1)) == "stored"
    assert store.add_rating("t01", rating("t01-1", "4000123", 100.0, None, rounds=2)) == "stored"
    assert store.add_rating("t01", rating("t01-1", "4000123", 100.0, 700.0, rounds=9)) == "stored"
    assert store.add_rating("t01", rating("t01-1", "4000123", 100.0, 700.0, rounds=9)) == "repeat"
    assert store.add_rating("t01", rating("t01-1", "4000123", 100.0, None, rounds=2)) == "stale"
    assert store.add_rating("t02", rating("t02-1", "4000123", 800.0, 900.0)) == "stored"
    assert store.add_rating("t02", rating("t02-2", "5000999", 850.0, None)) == "stored"
    got = store.ratings(player="4000123")
    assert [(r.table_id, r.rating_id, r.ended, r.body.get("rounds")) for r in got] == [
        ("t01", "t01-1", 700.0, 9), ("t02", "t02-1", 900.0, None)]
    assert [r.rating_id for r in store.ratings(since=750.0)] == ["t02-1", "t02-2"]
    assert [r.rating_id for r in store.ratings(until=800.0)] == ["t01-1"]
    assert [r.rating_id for r in store.ratings(since=720.0, until=820.0)] == ["t02-1"]


@pytest.mark.parametrize("bad", ["not json", "[1, 2]", '{"seq": 2, "ts": 1.0, "type": "bet"}',
                                 '{"seq": 1, "type": "bet"}', '{"seq": 1, "ts": 1.0}', b"\xff\xfe"])
def test_a_body_that_is_not_the_tables_event_is_refused_and_nothing_is_stored(store: RecorderStore,
                                                                              bad: str | bytes) -> None:
    with pytest.raises(BadRecord):
        store.add_event("t01", 1, bad)
    assert store.position("t01") is None


@pytest.mark.parametrize(("table_id", "seq"), [("", 1), ("t 01", 1), ("t01", 0), ("t01", -3)])
def test_a_bad_table_id_or_seq_is_refused(store: RecorderStore, table_id: str, seq: int) -> None:
    with pytest.raises(BadRecord):
        store.add_event(table_id, seq, body(seq))


def test_readers_refuse_a_database_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(StoreRefused, match="no recorder database"):
        open_store(str(tmp_path / "nothing.db"), create=False)
    assert not (tmp_path / "nothing.db").exists()


def test_readers_refuse_an_empty_postgres_database(postgres_url: str) -> None:
    with pytest.raises(StoreRefused, match="empty database"):
        open_store(postgres_url, create=False)


def test_a_database_that_is_not_a_recorders_is_refused(store_url: str) -> None:
    raw_sql(store_url, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    raw_sql(store_url, "INSERT INTO meta VALUES ('journal_id', 'abc')")
    with pytest.raises(StoreRefused, match="not a recorder's database"):
        open_store(store_url)


def test_a_database_of_other_tables_is_refused(store_url: str) -> None:
    raw_sql(store_url, "CREATE TABLE accounts (id INTEGER)")
    with pytest.raises(StoreRefused, match="no meta table"):
        open_store(store_url)


def test_another_schema_version_is_refused(store_url: str) -> None:
    open_store(store_url).close()
    raw_sql(store_url, "UPDATE meta SET value = ? WHERE key = 'version'", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreRefused, match=f"schema version {SCHEMA_VERSION + 1}"):
        open_store(store_url)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not SQLite at all, just some text long enough to fill a header" * 10)
    with pytest.raises(StoreRefused, match="not a recorder's database"):
        open_store(str(path))


def test_a_postgres_that_is_not_there_is_unavailable() -> None:
    from controller.mqtt.ports import free_port

    with pytest.raises(StoreUnavailable, match="cannot connect"):
        open_store(f"postgresql://postgres:secret@127.0.0.1:{free_port()}/recorder", connect_timeout=2)


def test_the_password_is_not_in_messages() -> None:
    from controller.mqtt.ports import free_port

    with pytest.raises(StoreUnavailable) as e:
        open_store(f"postgresql://recorder:hunter2@127.0.0.1:{free_port()}/recorder", connect_timeout=2)
    assert "hunter2" not in str(e.value) and "recorder:***@" in str(e.value)


def test_a_postgres_restart_is_unavailable_then_the_store_carries_on(postgres_server: PostgresServer) -> None:
    url = postgres_server.fresh_database()
    with open_store(url) as store:
        store.add_event("t01", 1, body(1))
        postgres_server.stop()
        try:
            with pytest.raises(StoreUnavailable):
                store.add_event("t01", 2, body(2))
        finally:
            postgres_server.start()
        assert store.add_event("t01", 2, body(2)) == "stored"
        assert [e.seq for e in store.events("t01")] == [1, 2]


def test_a_batch_is_one_transaction(store_url: str) -> None:
    with open_store(store_url) as store:
        with store.batch():
            assert [store.add_event("t01", s, body(s)) for s in (1, 3, 2)] == ["stored", "held", "stored"]
            store.note_state("t01", 3, "a" * 32, "b" * 64, None)
        pos = store.position("t01")
        assert pos is not None and (pos.seq, pos.head_seq) == (3, 3)
        with pytest.raises(RuntimeError, match="the writer failed"), store.batch():
            store.add_event("t01", 4, body(4))
            store.add_rating("t01", rating("t01-1", "4000123", 1.0, None))
            raise RuntimeError("the writer failed half way")
        assert store.position("t01").seq == 3  # type: ignore[union-attr]
        assert store.ratings() == []
    with open_store(store_url) as again:
        assert [e.seq for e in again.events("t01")] == [1, 2, 3]


def test_a_postgres_url_naming_what_the_server_has_not_is_refused_not_retried(
        postgres_server: PostgresServer) -> None:
    """The server answered: a database or user it does not have is a wrong URL (exit 2), not an outage."""
    with pytest.raises(StoreRefused, match='database "nosuchdb" does not exist'):
        open_store(postgres_server.url("nosuchdb"))
    with pytest.raises(StoreRefused, match='role "nobody" does not exist'):
        open_store(postgres_server.url("postgres").replace("postgres@", "nobody@"))


def test_a_reader_reads_beside_a_writer_holding_its_transaction(tmp_path: Path) -> None:
    """SQLite: the readers (recall, report, ratings --db) read a snapshot while the recorder writes; they never
    wait for its lock nor take one it would wait for."""
    url = str(tmp_path / "recorder.db")
    with open_store(url) as writer:
        writer.add_event("t01", 1, body(1))
        with writer.batch():
            writer.add_event("t01", 2, body(2))
            with open_store(url, create=False) as reader:
                assert reader.position("t01").seq == 1  # type: ignore[union-attr]
                assert [e.seq for e in reader.events("t01")] == [1]
        with open_store(url, create=False) as reader:
            assert reader.position("t01").seq == 2  # type: ignore[union-attr]


def test_a_reader_refuses_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not SQLite at all, just some text long enough to fill a header" * 10)
    with pytest.raises(StoreRefused, match="not a recorder's database"):
        open_store(str(path), create=False)


def test_two_writers_at_once_keep_each_seq_once(store_url: str) -> None:
    """Two recorders (a failover overlap) writing the same table's events at once, one in order and one from the
    end: every seq is stored once, each a repeat for the other, nothing is a conflict, no gap is left."""
    import threading

    n = 120
    outcomes: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def write(name: str, order: list[int]) -> None:
        try:
            with open_store(store_url) as store:
                outcomes[name] = [store.add_event("t01", s, body(s)) for s in order]
        except BaseException as e:  # reported below: a thread's exception is not the test's
            errors.append(e)

    open_store(store_url).close()  # the schema first: two creators at once are not this test's move
    threads = [threading.Thread(target=write, args=("up", list(range(1, n + 1)))),
               threading.Thread(target=write, args=("down", list(range(n, 0, -1))))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    every = outcomes["up"] + outcomes["down"]
    assert "conflict" not in every
    assert every.count("stored") + every.count("held") >= n and every.count("stored") >= 1
    with open_store(store_url) as store:
        assert [e.seq for e in store.events("t01")] == list(range(1, n + 1))
        assert [e.body for e in store.events("t01")] == [body(s) for s in range(1, n + 1)]
        assert store.gaps("t01") == [] and store.position("t01").seq == n  # type: ignore[union-attr]
