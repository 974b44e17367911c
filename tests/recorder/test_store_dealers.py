"""The dealer of each round in the recorder's database (controller/recorder/dealer_column.py), on SQLite and on
PostgreSQL: kept with each round's events, found by dealer across tables, and a database of before dealers
migrated by its first writer (its rows' dealers null, except the bodies that name one)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import psycopg

from controller.recorder.store import SCHEMA_VERSION, open_store
from tests.recorder.test_store import body, raw_sql

#: the recorder's schema 1, as a recorder of before dealers made it
SCHEMA_1 = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE tables (table_id TEXT PRIMARY KEY, pit TEXT, journal_id TEXT, last_seq BIGINT NOT NULL DEFAULT 0,"
    " head_seq BIGINT, head TEXT, state_seq BIGINT, updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE events (table_id TEXT NOT NULL, seq BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL,"
    " type TEXT NOT NULL, body TEXT NOT NULL, received_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (table_id, seq))",
    "CREATE INDEX events_by_time ON events (table_id, ts)",
    "CREATE INDEX events_by_type ON events (table_id, type, seq)",
    "CREATE TABLE held (table_id TEXT NOT NULL, seq BIGINT NOT NULL, ts DOUBLE PRECISION NOT NULL,"
    " type TEXT NOT NULL, body TEXT NOT NULL, received_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (table_id, seq))",
    "CREATE TABLE heads (table_id TEXT NOT NULL, seq BIGINT NOT NULL, journal_id TEXT, head TEXT NOT NULL,"
    " PRIMARY KEY (table_id, seq))",
    "CREATE TABLE ratings (table_id TEXT NOT NULL, rating_id TEXT NOT NULL, player TEXT NOT NULL, spot BIGINT,"
    " started DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION, body TEXT NOT NULL,"
    " PRIMARY KEY (table_id, rating_id))",
    "INSERT INTO meta VALUES ('schema', 'tablectl-recorder')",
    "INSERT INTO meta VALUES ('version', '1')",
)


def rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the database behind the store's back."""
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as conn:
            return list(conn.execute(sql.replace("?", "%s"), params).fetchall())
    lite = sqlite3.connect(url)
    try:
        return list(lite.execute(sql, params).fetchall())
    finally:
        lite.close()


def a_round(first: int, dealer: str | None, *, named: bool = True) -> list[str]:
    """A round's events from seq ``first``: betting closed by ``dealer`` and settled."""
    who = {"dealer_id": dealer} if named else {}
    return [body(first, "bet", spot=1, amount="10"), body(first + 1, "no_more_bets", round=first, **who),
            body(first + 2, "round_settled", round=first, **who)]


def test_each_rounds_dealer_is_kept_and_found_across_tables(store_url: str) -> None:
    with open_store(store_url) as store:
        for table, dealers in (("t01", ["d.ames", "d.bo", None]), ("t02", ["d.bo", "d.ames"])):
            for n, dealer in enumerate(dealers):
                for seq, text in enumerate(a_round(3 * n + 1, dealer), 3 * n + 1):
                    assert store.add_event(table, seq, text) == "stored"
        assert store.dealt_by("d.bo") == [("t01", 6), ("t02", 3)]
        assert store.dealt_by("d.ames", "t02") == [("t02", 6)]
        assert store.dealt_by("d.cruz") == []
    assert rows(store_url, "SELECT type, dealer_id FROM events WHERE table_id = 't01' ORDER BY seq")[:3] == [
        ("bet", None), ("no_more_bets", "d.ames"), ("round_settled", "d.ames")]
    assert rows(store_url, "SELECT COUNT(*) FROM events WHERE table_id = 't01' AND seq > 6 AND dealer_id IS NOT NULL"
                ) == [(0,)]  # the round with no dealer on duty


def test_a_round_held_beyond_a_gap_keeps_its_dealer_when_it_moves_in(store_url: str) -> None:
    with open_store(store_url) as store:
        first, second = a_round(1, "d.ames"), a_round(4, "d.bo")
        for seq, text in enumerate(second, 4):
            assert store.add_event("t01", seq, text) == "held"
        for seq, text in enumerate(first, 1):
            assert store.add_event("t01", seq, text) == "stored"
        assert store.dealt_by("d.bo") == [("t01", 6)]
    assert rows(store_url, "SELECT seq, dealer_id FROM events WHERE seq >= 5 ORDER BY seq") == [
        (5, "d.bo"), (6, "d.bo")]


def test_a_database_of_before_dealers_is_read_as_it_is_then_migrated_by_its_first_writer(store_url: str) -> None:
    for statement in SCHEMA_1:
        raw_sql(store_url, statement)
    raw_sql(store_url, "INSERT INTO tables (table_id, last_seq, updated_at) VALUES ('t01', 6, 0)")
    # an old table's round (no dealer named), then a round of a table upgraded before its recorder
    for seq, text in enumerate([*a_round(1, None, named=False), *a_round(4, "d.ames")], 1):
        raw_sql(store_url, "INSERT INTO events VALUES ('t01', ?, ?, ?, ?, 0)",
                (seq, json.loads(text)["ts"], json.loads(text)["type"], text))
    with open_store(store_url, create=False) as reader:
        assert reader.version == 1
        assert reader.dealt_by("d.ames") == [("t01", 6)]  # by the bodies' text
    assert rows(store_url, "SELECT value FROM meta WHERE key = 'version'") == [("1",)]  # a reader writes nothing
    with open_store(store_url) as writer:
        assert writer.version == SCHEMA_VERSION == 2
        assert writer.dealt_by("d.ames") == [("t01", 6)]
        for seq, text in enumerate(a_round(7, "d.bo"), 7):
            assert writer.add_event("t01", seq, text) == "stored"
        assert writer.dealt_by("d.bo") == [("t01", 9)]
    assert rows(store_url, "SELECT value FROM meta WHERE key = 'version'") == [("2",)]
    assert rows(store_url, "SELECT seq, dealer_id FROM events ORDER BY seq") == [
        (1, None), (2, None), (3, None), (4, None), (5, "d.ames"), (6, "d.ames"), (7, None), (8, "d.bo"), (9, "d.bo")]
    with open_store(store_url) as again:  # migrated once
        assert again.version == 2 and again.dealt_by("d.ames") == [("t01", 6)]
