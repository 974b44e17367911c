"""More edges of the ratings book that the mutation run of 2026-12-07 found no test at (issue 39): the spots a
card may name, a peek outside a round, the ids a rating takes (docs/mqtt.md: the table id and the ``seq`` of the
``card_in`` that opened it, or of the ``no_more_bets`` and the spot), the idle count of a player behind one who
played or is leaving, a player's two spots at one round's wagers, a hand split a second time.

Sans-I/O, the events written out by hand as in test_book_mutants.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.profiles import load_rules
from controller.ratings import RatingBook, RatingInputError
from tests.ratings.test_book_mutants import Stream, _deal

RULES = load_rules("ny-4620")


@pytest.mark.parametrize("spot", [1, 7])
def test_a_card_in_at_the_first_and_the_seventh_spot_opens_a_rating(spot: int) -> None:
    play = Stream()
    play("card_in", spot=spot, player="42")
    assert [(r.player, r.spot) for r in play.book.open_ratings()] == [("42", spot)]


@pytest.mark.parametrize("spot", [0, 8, True, "3", None])
def test_a_card_in_at_a_spot_that_is_not_one_is_refused_saying_so(spot: Any) -> None:
    play = Stream()
    with pytest.raises(RatingInputError, match=rf"^event 1 \(card_in\): spot must be 1..7, got {spot!r}$"):
        play("card_in", spot=spot, player="42")
    assert play.book.open_ratings() == [] and play.book.cards == {}


def test_a_peek_before_any_round_is_ignored() -> None:
    """A book that starts reading a journal mid-round (no ``no_more_bets`` seen) sees the peek of a round it does
    not hold."""
    play = Stream()
    play("card_in", spot=1, player="42")
    assert play("peek", blackjack=False) and play.closed == []
    assert play.book.checkpoint() is not None, "no round begun by it"


def test_a_rating_is_named_by_the_table_and_the_seq_that_opened_it() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=1))
    play("card_in", spot=2, player="42")  # seq 1
    play.round(1, {1: "5"})  # seqs 2, 3: 42 idle, its rating ends
    play("no_more_bets", round=2, wagers={"2": "5", "4": "5"})  # seq 4: 42 again, at spot 2
    ((first,), (again,)) = play.closed, play.book.open_ratings()
    assert (first.rating_id, again.rating_id) == ("t01-1", "t01-4.2")


def test_a_stream_without_seqs_numbers_its_ratings_from_one() -> None:
    book = RatingBook(RULES, table_id="t01", idle_rounds=1)
    book.handle({"ts": 1.5e9, "type": "card_in", "spot": 2, "player": "42"})
    book.handle({"ts": 1.5e9 + 1, "type": "card_in", "spot": 3, "player": "43"})
    book.handle({"ts": 1.5e9 + 2, "type": "no_more_bets", "round": 1, "wagers": {"3": "5"}})
    (idle,) = book.handle({"ts": 1.5e9 + 3, "type": "round_settled", "round": 1, "nets": {"3": "-5"}})
    book.handle({"ts": 1.5e9 + 4, "type": "no_more_bets", "round": 2, "wagers": {"2": "5"}})
    assert idle.rating_id == "t01-r1"
    assert sorted(r.rating_id for r in book.open_ratings()) == ["t01-r2", "t01-r3"]


def test_a_book_restored_without_a_table_id_names_ratings_as_one_made_without_one() -> None:
    book = RatingBook(RULES)
    book.handle({"seq": 1, "ts": 1.5e9, "type": "card_in", "spot": 2, "player": "42"})
    data = book.checkpoint()
    assert data is not None
    again = RatingBook.restore(json.loads(json.dumps(data)))
    for b in (book, again):
        b.handle({"seq": 2, "ts": 1.5e9 + 1, "type": "card_in", "spot": 3, "player": "43"})
    assert [r.rating_id for r in book.open_ratings()] == [r.rating_id for r in again.open_ratings()] == ["t-1", "t-2"]


def test_a_player_idle_behind_one_who_played_ends_at_the_limit() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=2))
    play("card_in", spot=1, player="41")  # opened first: the book meets 41 first at each settlement
    play("card_in", spot=2, player="42")
    play.round(1, {1: "5"})
    assert play.closed == []
    play.round(2, {1: "5"})
    assert [(r.player, r.ended_by, r.rounds) for r in play.closed] == [("42", "idle", 0)]
    assert [r.player for r in play.book.open_ratings()] == ["41"]


def test_a_player_idle_behind_one_whose_card_is_out_ends_at_the_limit() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=1))
    play("card_in", spot=1, player="41")
    play("card_in", spot=2, player="42")
    play("no_more_bets", round=1, wagers={"3": "5"})
    out = play("card_out", spot=1, player="41")  # 41 leaves mid-round: it ends at the next wagers
    play("round_settled", round=1, nets={"3": "-5"})
    assert [(r.player, r.ended_by) for r in play.closed] == [("42", "idle")]
    play("no_more_bets", round=2, wagers={"3": "5"})
    assert [(r.player, r.ended_by, r.ended) for r in play.closed[1:]] == [("41", "card_out", out["ts"])]


def test_a_player_back_on_two_spots_at_one_rounds_wagers_has_both_spots() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=1))
    play("card_in", spot=2, player="42")
    play("card_in", spot=3, player="42")
    play.round(1, {1: "5"})
    (idle,) = play.closed
    assert idle.spots == [2, 3]
    play("no_more_bets", round=2, wagers={"2": "5", "3": "10"})
    (again,) = play.book.open_ratings()
    assert (again.spot, again.spots) == (2, [2, 3])
    assert json.loads(json.dumps(again.to_json()))["spots"] == [2, 3]


def test_a_hand_split_again_keeps_the_hand_split_before_it() -> None:
    """8,8 against a 6, split, the first hand split again: three hands; standing on the third's 10 departs from
    basic (no double after a split here: hit)."""
    play = Stream()
    play("card_in", spot=1, player="9")
    _deal(play, 1, 1, ("8C", "8D"), "6S")
    play("decision", spot=1, hand=0, action="split")
    play("card", to="spot", spot=1, hand=0, card="8S")
    play("decision", spot=1, hand=0, action="split")
    for hand, card in ((0, "TC"), (1, "9C"), (2, "2C")):
        play("card", to="spot", spot=1, hand=hand, card=card)
        play("decision", spot=1, hand=hand, action="stand")
    play("round_settled", round=1, nets={"1": "-5"})
    (d,) = play.book.open_ratings()[0].departures
    assert (d.hand, d.cards, d.action, d.basic, d.wager) == (2, ("8D", "2C"), "stand", "hit", 500)
