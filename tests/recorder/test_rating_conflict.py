"""The recorder never overwrites a stored rating with another rating's body (issue #35): a second, different
rating under a held ``rating_id`` is a ``"conflict"``, the first kept; the same rating growing (an open copy
with more rounds, then its ended copy) is still stored."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from controller.recorder.board import Board
from controller.recorder.store import RecorderStore, open_store


@pytest.fixture
def store(store_url: str) -> Iterator[RecorderStore]:
    with open_store(store_url) as s:
        yield s


def rating(rating_id: str, player: str, started: float, ended: float | None, **extra: Any) -> str:
    return json.dumps({"rating_id": rating_id, "spot": 3, "player": player, "started": started, "ended": ended,
                       "minutes": 10.0, **extra})


def test_another_players_rating_under_a_held_id_is_a_conflict_and_the_first_is_kept(store: RecorderStore) -> None:
    first = rating("t01-82", "4000123", 100.0, 700.0, rounds=14)
    assert store.add_rating("t01", first) == "stored"
    assert store.add_rating("t01", rating("t01-82", "5000999", 100.0, 900.0, rounds=20)) == "conflict"
    assert store.add_rating("t01", rating("t01-82", "4000123", 800.0, 900.0, rounds=20)) == "conflict"
    (kept,) = store.ratings()
    assert kept.player == "4000123" and kept.ended == 700.0 and kept.body["rounds"] == 14


def test_an_ended_rating_is_never_replaced_by_another_ended_body(store: RecorderStore) -> None:
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, 700.0, rounds=14)) == "stored"
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, 950.0, rounds=34)) == "conflict"
    (kept,) = store.ratings()
    assert kept.ended == 700.0 and kept.body["rounds"] == 14


def test_an_open_rating_still_grows_and_ends(store: RecorderStore) -> None:
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, None, rounds=1)) == "stored"
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, None, rounds=2)) == "stored"
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, 700.0, rounds=3)) == "stored"
    assert store.add_rating("t01", rating("t01-82", "4000123", 100.0, None, rounds=2)) == "stale"


def test_a_rating_conflict_is_its_own_alarm_beside_an_events_at_the_same_seq() -> None:
    board = Board()
    assert board.conflict("t01", 82, "event", 1.0)
    assert board.conflict("t01", 82, "rating t01-82", 1.0)
    assert not board.conflict("t01", 82, "rating t01-82", 2.0)
    messages = [a.message for a in board.alarms()]
    assert len(messages) == 2 and any("rating t01-82" in m for m in messages)
