"""The ratings book at the edges a plausible wrong change would pass unseen (issue 39): one of a player's two cards
leaving, the skill-adjusted theo of play on an uncarded spot, a zero wager, a card out that is not the card held.

Sans-I/O like test_ratings.py, but the events are written out by hand: each case is a few events whose right answer
a floor person can tell at a glance."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.game.money import format_money
from controller.profiles import load_rules
from controller.ratings import Rating, RatingBook, RatingInputError
from controller.strategy.edge import house_edge

RULES = load_rules("ny-4620")


class Stream:
    """A table's events, numbered and timed (1 s apart), fed to a book as they come."""

    def __init__(self, book: RatingBook | None = None) -> None:
        self.book = book or RatingBook(RULES, table_id="t01")
        self.seq = 0
        self.ts = 1000.0
        self.closed: list[Rating] = []

    def __call__(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.seq += 1
        self.ts += 1.0
        event = {"seq": self.seq, "ts": self.ts, "type": kind, **fields}
        self.closed += self.book.handle(event)
        return event

    def round(self, number: int, wagers: dict[int, str], nets: dict[int, str] | None = None) -> None:
        """A round with no cards shown: wagers locked, then settled with ``nets`` (default: each wager lost)."""
        self("no_more_bets", round=number, wagers={str(s): w for s, w in wagers.items()})
        settled = nets if nets is not None else {s: f"-{w}" for s, w in wagers.items()}
        self("round_settled", round=number, nets={str(s): n for s, n in settled.items()})

    def stiff_stood(self, number: int, spot: int, wager: str = "5") -> None:
        """T,6 against a ten, stood after the peek (basic hits): a departure with a cost."""
        self("no_more_bets", round=number, wagers={str(spot): wager})
        self("card", to="spot", spot=spot, hand=0, card="TC")
        self("card", to="dealer", card="KD", hole=False)
        self("card", to="spot", spot=spot, hand=0, card="6H")
        self("card", to="dealer", card=None, hole=True)
        self("peek", blackjack=False)
        self("decision", spot=spot, hand=0, action="stand")
        self("round_settled", round=number, nets={str(spot): f"-{wager}"})


@pytest.mark.parametrize("first_out", [2, 3])
def test_one_of_a_players_two_cards_leaving_keeps_the_rating_open(first_out: int) -> None:
    play = Stream()
    opened = play("card_in", spot=2, player="42")
    play("card_in", spot=3, player="42")
    play.round(1, {2: "5", 3: "2"})
    play("card_out", spot=first_out, player="42")
    play.round(2, {5 - first_out: "5"})
    play.round(3, {5 - first_out: "5"})
    assert play.closed == [], "the same card is still in the other reader"
    (rating,) = play.book.open_ratings()
    assert (rating.started, rating.rounds, rating.hands, rating.ended) == (opened["ts"], 3, 4, None)
    assert play.book.cards == {5 - first_out: "42"}
    out = play("card_out", spot=5 - first_out, player="42")
    assert play.closed == [], "the end takes effect at the next wagers"
    play("no_more_bets", round=4, wagers={"1": "5"})
    (ended,) = play.closed
    assert (ended.rating_id, ended.ended, ended.ended_by, ended.rounds) == (rating.rating_id, out["ts"], "card_out", 3)


def test_a_card_out_that_is_not_the_card_held_changes_nothing() -> None:
    play = Stream()
    play("card_in", spot=2, player="42")
    play("card_out", spot=2, player="43")  # another number: a duplicate or a misread
    play("card_out", spot=4, player="42")  # a reader that holds nothing
    play.round(1, {2: "5"})
    assert play.closed == [] and play.book.cards == {2: "42"}
    (rating,) = play.book.open_ratings()
    assert rating.rounds == 1
    play("card_out", spot=2)  # a card out that names no player: the card held there
    play("no_more_bets", round=2, wagers={"2": "5"})
    assert [r.player for r in play.closed] == ["42"]


def test_a_card_back_in_at_another_spot_before_the_next_wagers_continues_the_rating() -> None:
    play = Stream()
    first = play("card_in", spot=2, player="42")
    play.round(1, {2: "5"})
    play("card_out", spot=2, player="42")
    play("card_in", spot=6, player="42")
    play.round(2, {6: "5"})
    assert play.closed == []
    (rating,) = play.book.open_ratings()
    assert (rating.started, rating.spots, rating.rounds) == (first["ts"], [2, 6], 2)


def test_an_uncarded_spots_skill_theo_holds_its_decisions_cost_as_a_carded_ones_does() -> None:
    carded, uncarded = Stream(), Stream()
    carded("card_in", spot=1, player="9")
    uncarded("card_in", spot=4, player="9")  # the same events apart from the card: the same seqs and times
    for number in (1, 2):
        carded.stiff_stood(number, 1)
        uncarded.stiff_stood(number, 1)
    (rating,) = carded.book.open_ratings()
    rated = rating.to_json()
    unrated = uncarded.book.unrated()[1].to_json()
    edge = house_edge(RULES).house_edge
    assert unrated["theoretical_loss"] == rated["theoretical_loss"] == format_money(round(1000 * edge))
    assert unrated["skill_theoretical_loss"] == rated["skill_theoretical_loss"]
    assert rated["skill_theoretical_loss"] == format_money(round(1000 * edge + 2 * rating.departures[0].cost))
    assert unrated["skill_theoretical_loss"] != unrated["theoretical_loss"], "standing on 16 against a ten costs"
    assert (unrated["rounds"], unrated["initial_wagers"], unrated["max_bet"], unrated["house_net"]) == (2, "10", "5",
                                                                                                     "10")


def test_a_zero_wager_is_no_hand_of_a_rating_nor_of_an_uncarded_spot() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=2))
    play("card_in", spot=1, player="42")
    play.round(1, {1: "0", 2: "0", 3: "5"}, nets={1: "0", 2: "0", 3: "-5"})
    (rating,) = play.book.open_ratings()
    assert (rating.rounds, rating.hands, rating.initial_wagers) == (0, 0, 0)
    assert list(play.book.unrated()) == [3]
    play.round(2, {1: "0", 3: "5"}, nets={1: "0", 3: "5"})
    (idle,) = play.closed
    assert (idle.player, idle.ended_by, idle.rounds) == ("42", "idle", 0), "zero wagers are no play: idle"


def test_idle_rounds_end_a_rating_at_exactly_the_limit_not_before() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=3))
    play("card_in", spot=1, player="42")
    play.round(1, {1: "5"})
    last = play.ts
    play.round(2, {2: "5"})
    play.round(3, {2: "5"})
    assert play.closed == []
    play.round(4, {2: "5"})
    (idle,) = play.closed
    assert (idle.ended_by, idle.ended, idle.rounds) == ("idle", last, 1)


def test_an_uncarded_spots_play_in_json() -> None:
    play = Stream()
    play.round(1, {4: "10"}, nets={4: "-10"})
    play.round(2, {4: "5"}, nets={4: "7.50"})
    edge = house_edge(RULES).house_edge
    assert play.book.unrated()[4].to_json() == {
        "spot": 4, "rounds": 2, "hands": 2, "initial_wagers": "15", "average_bet": "7.50", "max_bet": "10",
        "house_net": "2.50", "theoretical_loss": format_money(round(1500 * edge)),
        "skill_theoretical_loss": format_money(round(1500 * edge))}


def _restored(play: Stream, **kwargs: Any) -> Stream:
    data = play.book.checkpoint()
    assert data is not None
    again = Stream(RatingBook.restore(json.loads(json.dumps(data)), **kwargs))
    again.seq, again.ts = play.seq, play.ts
    return again


def test_a_restored_book_keeps_its_table_id_and_idle_limit_given() -> None:
    play = Stream(RatingBook(RULES, table_id="t07", idle_rounds=2))
    play("card_in", spot=1, player="42")
    play.round(1, {1: "5"})
    play.round(2, {2: "5"})  # one idle round of 42's
    again = _restored(play, table_id="t07", idle_rounds=2)
    for book in (play, again):  # the book that never stopped, and the one restored from its checkpoint
        book("card_in", spot=3, player="43")
        book.round(3, {2: "5", 3: "5"})
    (idle,) = again.closed
    assert (idle.player, idle.ended_by) == ("42", "idle"), "its idle round before the checkpoint counts"
    assert [(r.player, r.rating_id) for r in again.book.open_ratings()] == [
        (r.player, r.rating_id) for r in play.book.open_ratings()]


def test_a_restored_book_ends_a_card_out_before_it_at_its_time() -> None:
    play = Stream()
    play("card_in", spot=1, player="42")
    play.round(1, {1: "5"})
    out = play("card_out", spot=1, player="42")
    again = _restored(play, table_id="t01")
    again("no_more_bets", round=2, wagers={"2": "5"})
    (ended,) = again.closed
    assert (ended.player, ended.ended, ended.ended_by) == ("42", out["ts"], "card_out")


def test_a_restored_book_numbers_on_a_rating_opened_without_a_seq() -> None:
    play = Stream()
    play.book.handle({"ts": 5000.0, "type": "card_in", "spot": 1, "player": "42"})
    again = _restored(play, table_id="t01")
    for book in (play.book, again.book):
        book.handle({"ts": 5001.0, "type": "card_in", "spot": 2, "player": "43"})
    ids = [r.rating_id for r in again.book.open_ratings()]
    assert ids == [r.rating_id for r in play.book.open_ratings()] and len(set(ids)) == 2


def test_an_event_without_a_seq_is_refused_naming_its_type() -> None:
    book = RatingBook(RULES)
    with pytest.raises(RatingInputError) as e:
        book.handle({"ts": 1.0, "type": "card_in", "spot": 9, "player": "42"})
    assert str(e.value) == "event 'card_in': spot must be 1..7, got 9"
    with pytest.raises(RatingInputError) as e:
        book.handle({"seq": 4, "ts": 1.0, "type": "card_in", "spot": 1})
    assert str(e.value) == "event 4 (card_in): no card number (player)"


def _deal(play: Stream, number: int, spot: int, cards: tuple[str, str], up: str, wager: str = "5") -> None:
    """Wagers locked on ``spot`` and the first two cards each, the dealer's up card and a hole card face down."""
    play("no_more_bets", round=number, wagers={str(spot): wager})
    play("card", to="spot", spot=spot, hand=0, card=cards[0])
    play("card", to="dealer", card=up, hole=False)
    play("card", to="spot", spot=spot, hand=0, card=cards[1])
    play("card", to="dealer", card=None, hole=True)


def test_an_uncarded_spot_with_no_round_yet_averages_nothing_and_its_wagers_are_kept_by_edge() -> None:
    from controller.ratings.book import UnratedPlay

    assert UnratedPlay(2).to_json()["average_bet"] == "0"
    play = Stream()
    play.round(1, {4: "10"}, nets={4: "-10"})
    play.round(2, {4: "5"}, nets={4: "7.50"})
    edge = house_edge(RULES).house_edge
    checkpoint = play.book.checkpoint()
    assert checkpoint is not None and checkpoint["unrated"] == [[4, 2, 1500, 1000, 250, 0.0, [[edge, 1500]]]]


def test_the_table_closing_ends_a_card_already_out_at_its_card_out_and_the_rest_now_in_that_order() -> None:
    play = Stream()
    play("card_in", spot=1, player="41")
    play("card_in", spot=2, player="42")
    play.round(1, {1: "5", 2: "5"})
    out = play("card_out", spot=2, player="42")
    closing = play("table_closed")
    assert [(r.player, r.ended, r.ended_by) for r in play.closed] == [("42", out["ts"], "card_out"),
                                                                      ("41", closing["ts"], "table_closed")]
    checkpoint = play.book.checkpoint()
    assert checkpoint is not None, "a closed table is between rounds"
    assert (checkpoint["open"], checkpoint["leaving"], checkpoint["idle"]) == ([], [], [])


def test_new_rules_are_the_books_from_then_on_and_in_its_checkpoint() -> None:
    from controller.game.rules import rules_digest, rules_from_json, rules_to_json

    h17 = load_rules("house-h17")
    play = Stream()
    play("rules_changed", rules=rules_to_json(h17))
    checkpoint = play.book.checkpoint()
    assert checkpoint is not None and rules_digest(rules_from_json(checkpoint["rules"])) == rules_digest(h17)
    play("rules_changed", digest=rules_digest(h17))  # the rules in force named by their digest: nothing changes


def test_cards_the_book_cannot_place_are_ignored() -> None:
    play = Stream()
    play("card_in", spot=1, player="9")
    play("card", to="spot", spot=1, hand=0, card="TC")  # no round in play
    _deal(play, 1, 1, ("TC", "7H"), "6D")
    play("card", to="spot", spot=1, hand=0, card="ZZ")  # not a card
    play("card", to="spot", spot=1, hand=1, card="2C")  # a hand the spot does not hold
    play("card", to="spot", spot=3, hand=0, card="2C")  # a spot without a wager
    play("decision", spot=1, hand=0, action="stand")
    play("round_settled", round=1, nets={"1": "5"})
    (rating,) = play.book.open_ratings()
    assert rating.departures == [], "hard 17 stood against a 6 is basic strategy"


def test_a_hit_departure_is_timed_by_its_card_and_a_decision_before_the_up_card_is_not_judged() -> None:
    play = Stream()
    play("card_in", spot=1, player="9")
    _deal(play, 1, 1, ("TC", "7H"), "6D")
    hit = play("card", to="spot", spot=1, hand=0, card="2C")  # a third card: hard 17 hit against a 6
    play("decision", spot=1, hand=0, action="stand")
    play("round_settled", round=1, nets={"1": "5"})
    (rating,) = play.book.open_ratings()
    (d,) = rating.departures
    assert (d.action, d.basic, d.ts, d.cards, d.dealer_up) == ("hit", "stand", hit["ts"], ("TC", "7H"), "6D")
    play("no_more_bets", round=2, wagers={"1": "5"})
    play("card", to="spot", spot=1, hand=0, card="TC")
    play("card", to="spot", spot=1, hand=0, card="6H")
    play("decision", spot=1, hand=0, action="stand")  # no up card seen: nothing to judge against
    play("round_settled", round=2, nets={"1": "5"})
    assert len(play.book.open_ratings()[0].departures) == 1


def test_a_double_for_less_is_judged_for_the_amount_doubled() -> None:
    """Hard 10 against a ten (basic: hit), doubled: for the full wager, and for less, which gives up less."""
    full, less = Stream(), Stream()
    for play, amount in ((full, "5"), (less, "2")):
        play("card_in", spot=1, player="9")
        _deal(play, 1, 1, ("6C", "4H"), "TD")
        play("peek", blackjack=False)
        play("decision", spot=1, hand=0, action="double", amount=amount)
        play("round_settled", round=1, nets={"1": "10"})
    (whole,) = full.book.open_ratings()[0].departures
    (part,) = less.book.open_ratings()[0].departures
    assert (whole.action, whole.basic) == (part.action, part.basic) == ("double", "hit")
    assert 0 < part.cost < whole.cost


def test_idle_rounds_of_one_is_the_least() -> None:
    assert RatingBook(RULES, idle_rounds=1).idle_rounds == 1
    with pytest.raises(ValueError, match="idle_rounds must be 1 or more, got 0"):
        RatingBook(RULES, idle_rounds=0)


def test_a_card_whose_rating_went_idle_opens_a_new_one_at_its_next_wager() -> None:
    play = Stream(RatingBook(RULES, table_id="t01", idle_rounds=1))
    play("card_in", spot=2, player="42")
    play.round(1, {1: "5"})
    (idle,) = play.closed
    bets = play("no_more_bets", round=2, wagers={"2": "0.01"})  # a one-cent wager is a wager
    (again,) = play.book.open_ratings()
    assert (again.player, again.spot, again.spots, again.started) == ("42", 2, [2], bets["ts"])
    assert again.rating_id != idle.rating_id


def test_even_money_taken_is_a_departure_of_the_hands_first_cards() -> None:
    play = Stream(RatingBook(load_rules("nj-shoe"), table_id="t01"))
    play("card_in", spot=1, player="9")
    _deal(play, 1, 1, ("AC", "KD"), "AS")
    taken = play("decision", spot=1, hand=0, action="even_money")
    play("decision", spot=1, hand=1, action="stand")  # a hand the spot does not hold: ignored
    play("round_settled", round=1, nets={"1": "5"})
    (d,) = play.book.open_ratings()[0].departures
    assert (d.action, d.basic, d.hand, d.cards, d.dealer_up, d.ts, d.wager) == (
        "even_money", "no_insurance", 0, ("AC", "KD"), "AS", taken["ts"], 500)
    assert d.cost > 0


def test_two_departures_in_a_round_on_an_uncarded_spot_both_cost() -> None:
    carded, uncarded = Stream(), Stream()
    carded("card_in", spot=1, player="9")
    uncarded("card_in", spot=4, player="9")
    for play in (carded, uncarded):
        _deal(play, 1, 1, ("TC", "2D"), "AS")
        play("decision", spot=1, hand=0, action="insurance", amount="2.50")  # basic takes no insurance
        play("peek", blackjack=False)
        play("decision", spot=1, hand=0, action="stand")  # 12 against an ace: basic hits
        play("round_settled", round=1, nets={"1": "-7.50"})
    (rating,) = carded.book.open_ratings()
    assert len(rating.departures) == 2
    assert uncarded.book.unrated()[1].to_json()["skill_theoretical_loss"] == rating.to_json()["skill_theoretical_loss"]


def test_split_aces_taking_their_one_card_are_not_judged() -> None:
    play = Stream()
    play("card_in", spot=1, player="9")
    _deal(play, 1, 1, ("AC", "AD"), "6S")
    play("decision", spot=1, hand=0, action="split")
    play("card", to="spot", spot=1, hand=0, card="5C")
    play("decision", spot=1, hand=0, action="stand")  # soft 16 on a split ace: one card, no choice
    play("card", to="spot", spot=1, hand=1, card="5H")
    play("round_settled", round=1, nets={"1": "-10"})
    assert play.book.open_ratings()[0].departures == []


def test_a_spot_the_settlement_does_not_name_nets_nothing() -> None:
    play = Stream()
    play("card_in", spot=1, player="9")
    play("no_more_bets", round=1, wagers={"1": "5", "2": "5"})
    play("round_settled", round=1, nets={})
    (rating,) = play.book.open_ratings()
    assert (rating.rounds, rating.house_net) == (1, 0)
    assert play.book.unrated()[2].house_net == 0
