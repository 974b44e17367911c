"""A rating that runs for days holds, journals and publishes a bounded list of departures (issue #40: the table's
memory grew with every departure of a rating left open, and the retained ``ratings/open``, republished at each
settlement, grew with it towards the brokers' 1 MiB message limit), while its count and skill theo cover all."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.game.money import parse_money
from controller.ratings import DEPARTURES_KEPT, OPEN_DEPARTURES, Departure, Rating, RatingBook
from controller.service.ratings import TableRatings
from tests.ratings.session import Session, stands_on_stiffs


def _departure(n: int, cost: float) -> Departure:
    return Departure(n, 3, 0, ("TS", "6H"), "T", "stand", "hit", -0.54, -0.51, 1000, cost, 1_800_000_000.0 + n)


def test_a_rating_lists_its_latest_departures_and_counts_and_costs_every_one() -> None:
    r = Rating("t01-5", "6001234567", 3, 1_800_000_000.0, 0.0062, spots=[3])
    costs = [31.7 + (i % 7) * 0.3 for i in range(3 * DEPARTURES_KEPT)]
    for i, cost in enumerate(costs):
        r.add_departure(_departure(i, cost))
    assert len(r.departures) == DEPARTURES_KEPT
    assert [d.round for d in r.departures] == list(range(2 * DEPARTURES_KEPT, 3 * DEPARTURES_KEPT)), "the latest"
    expected = 0.0
    for cost in costs:  # the order they were made in: the same float as one running sum
        expected += cost
    assert r.departures_count == len(costs) and r.skill_cost == expected
    shown = r.to_json()
    assert shown["departures_count"] == len(costs) and len(shown["departures"]) == DEPARTURES_KEPT
    assert parse_money(shown["skill_theoretical_loss"]) == round(expected)
    assert len(r.to_json(departures=OPEN_DEPARTURES)["departures"]) == OPEN_DEPARTURES


def test_a_checkpoint_keeps_the_count_and_cost_beyond_the_list_and_reads_an_unbounded_one_of_before() -> None:
    r = Rating("t01-5", "6001234567", 3, 1_800_000_000.0, 0.0062, spots=[3])
    for i in range(DEPARTURES_KEPT + 40):
        r.add_departure(_departure(i, 10.0 + i / 3))
    again = Rating.from_state(json.loads(json.dumps(r.to_state())))
    assert again == r
    old = r.to_state()  # as a checkpoint written before the bound: every departure listed, no count nor cost
    old["departures"] = [_departure(i, 10.0 + i / 3).to_state() for i in range(DEPARTURES_KEPT + 40)]
    del old["departures_count"], old["departures_cost"]
    assert Rating.from_state(old) == r


KEPT = 12  # the bound, made small so a few hundred rounds pass it


class LongRating:
    """A stiff-stander rated for 300 rounds: the stream, the table's ratings fed it, the open list's sizes."""

    def __init__(self) -> None:
        self.session = Session(profile="house-h17", seed=3)
        self.ratings = TableRatings(self.session.rules, table_id="t01")
        self.stream: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.session.card_in(3, "6001234567")
        for n in range(300):
            self.session.play_round({3: 1000}, stands_on_stiffs)
            if n % 50 == 49:
                self.feed()
                self.sizes.append(len(json.dumps(self.ratings.open_json())))

    def feed(self) -> list[Rating]:
        events = list(self.session.events)
        self.session.events.clear()
        self.stream.extend(events)
        return self.ratings.observe(events)


@pytest.fixture
def long_rating(monkeypatch: pytest.MonkeyPatch) -> LongRating:
    monkeypatch.setattr("controller.ratings.rating.DEPARTURES_KEPT", KEPT)
    return LongRating()


def test_the_retained_open_ratings_stay_the_same_size_however_long_a_rating_runs(long_rating: LongRating) -> None:
    (rating,) = long_rating.ratings.book.open_ratings()
    assert rating.departures_count > 2 * KEPT, "300 rounds of stiffs stood hold more departures"
    assert len(rating.departures) == KEPT, "the book holds the latest only"
    (shown,) = long_rating.ratings.open_json()
    assert len(shown["departures"]) == OPEN_DEPARTURES and shown["departures_count"] == rating.departures_count
    assert [d["round"] for d in shown["departures"]] == [d.round for d in rating.departures[-OPEN_DEPARTURES:]]
    sizes = long_rating.sizes[1:]  # once the first departures are listed, each 50 rounds more add none
    assert max(sizes) - min(sizes) < 100, long_rating.sizes


def test_the_ended_rating_counts_and_costs_the_departures_no_longer_listed(
        long_rating: LongRating, monkeypatch: pytest.MonkeyPatch) -> None:
    long_rating.session.card_out(3, "6001234567")
    long_rating.session.close()
    (ended,) = long_rating.feed()
    monkeypatch.setattr("controller.ratings.rating.DEPARTURES_KEPT", 10**9)
    (whole,) = _feed(RatingBook(long_rating.session.rules, table_id="t01"), long_rating.stream)
    assert len(whole.departures) == whole.departures_count == ended.departures_count > KEPT
    assert ended.departures == whole.departures[-KEPT:], "the latest, as made"
    shown, every = ended.to_json(), whole.to_json()
    assert len(shown["departures"]) == KEPT
    assert {k: v for k, v in shown.items() if k != "departures"} == {k: v for k, v in every.items()
                                                                       if k != "departures"}
    assert parse_money(shown["skill_theoretical_loss"]) > parse_money(shown["theoretical_loss"])


def _feed(book: RatingBook, events: list[dict[str, Any]]) -> list[Rating]:
    ended: list[Rating] = []
    for event in events:
        ended.extend(book.handle(dict(event)))
    return ended


def test_the_public_view_follows_every_wager_and_departure_though_its_figures_are_made_once_each() -> None:
    """public_json runs after every event the table takes: its money figures are made again only when they change."""
    r = Rating("t01-5", "6001234567", 3, 1_800_000_000.0, 0.0062, spots=[3], last_seen=1_800_000_060.0)
    figures = ("minutes", "rounds", "average_bet", "theoretical_loss", "skill_theoretical_loss")
    for step in range(6):
        r.rounds += 1
        r.hands += 1
        r.add_wager(1000 + 500 * step, 0.0062 if step < 3 else 0.0051)
        if step % 2:
            r.add_departure(_departure(step, 31.7 * step))
        r.last_seen += 45.0
        for _ in range(2):
            public, full = r.public_json(), r.to_json()
            assert {k: public[k] for k in figures} == {k: full[k] for k in figures}, step
