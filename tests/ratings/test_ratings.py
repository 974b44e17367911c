"""Ratings from the table's own events, checked against sessions whose truth is known.

Each session is played on the real engine (tests/ratings/session.py): its published events and the card
readers' card_in / card_out go through :class:`RatingBook`; the truth (wagers placed, nets the engine
settled, when each card went in and out, each decision and its cards) comes from the session itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.game.cards import VALUE
from controller.game.money import format_money, parse_money
from controller.game.rules import Rules, rules_digest
from controller.profiles import load_rules
from controller.ratings import Rating, RatingBook, RatingInputError
from controller.strategy.edge import house_edge
from controller.strategy.ev import Context, hand_evs, insurance_ev, situation_ev
from tests.ratings.session import Session, basic, never_doubles, stands_on_stiffs


def _feed(book: RatingBook, events: list[dict[str, Any]]) -> list[Rating]:
    closed: list[Rating] = []
    for event in events:
        closed += book.handle(event)
    return closed


def _nets(session: Session, spots: set[int]) -> int:
    """The players' net at ``spots`` over the session, as the engine settled it (cents)."""
    return sum(parse_money(n) for e in session.events if e["type"] == "round_settled"
               for s, n in e["nets"].items() if int(s) in spots)


# -- known truth --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["ny-4620", "house-shoe-surrender", "european-6d", "house-h17"])
def test_a_basic_strategy_players_skill_theo_equals_theo(profile: str) -> None:
    session = Session(profile=profile, seed=7)
    session.card_in(2, "1001")
    session.card_in(5, "2002")
    unit = session.rules.min_bet
    for n in range(150):
        session.play_round({2: unit, 5: unit * (1 + n % 3)}, basic)
    session.card_out(2, "1001")
    session.card_out(5, "2002")
    session.close()
    book = RatingBook(session.rules, table_id="t01")
    closed = _feed(book, session.events)
    assert [r.player for r in closed] == ["1001", "2002"]
    edge = house_edge(session.rules).house_edge
    for rating in closed:
        shown = rating.to_json()
        assert rating.departures == [], [d.to_json() for d in rating.departures]
        assert shown["skill_theoretical_loss"] == shown["theoretical_loss"]
        assert shown["theoretical_loss"] == format_money(round(rating.initial_wagers * edge))
        assert shown["rounds"] == 150 and shown["hands"] == 150


def test_rounds_average_bet_time_and_net_are_exact() -> None:
    session = Session(seed=3)
    card_in = session.card_in(4, "6001234567")
    went_in = card_in["ts"]
    bets = [100, 300, 500, 200, 500, 100, 400]
    for cents in bets:
        session.play_round({4: cents, 1: 500})  # spot 1 plays with no card
    went_out = session.card_out(4, "6001234567")["ts"]
    session.play_round({1: 500})  # the next round's wagers end the rating
    book = RatingBook(session.rules, table_id="t01")
    (rating,) = _feed(book, session.events)
    shown = rating.to_json()
    assert shown["player"] == "6001234567" and shown["spot"] == 4 and shown["ended_by"] == "card_out"
    assert (shown["started"], shown["ended"]) == (went_in, went_out)
    assert shown["minutes"] == round((went_out - went_in) / 60, 2)
    assert (shown["rounds"], shown["hands"]) == (7, 7)
    assert shown["initial_wagers"] == format_money(sum(bets))
    assert shown["average_bet"] == format_money(round(sum(bets) / len(bets)))
    assert shown["max_bet"] == "5"
    assert shown["house_net"] == format_money(-_nets(session, {4}))
    assert shown["rating_id"] == f"t01-{card_in['seq']}"  # the table and the seq of its card_in
    unrated = book.unrated()[1].to_json()
    assert (unrated["rounds"], unrated["initial_wagers"]) == (8, "40")
    assert unrated["house_net"] == format_money(-_nets(session, {1}))


def _expected_cost(session: Session, departure: dict[str, Any]) -> int:
    """The departure's cost from the ev module directly: EV(basic) - EV(taken) at that moment, x wager."""
    return _expected_cost_under(session.rules, departure)


def _expected_cost_under(rules: Rules, departure: dict[str, Any]) -> int:
    """:func:`_expected_cost` under ``rules``."""
    ctx = Context.of(rules)
    up = VALUE[departure["dealer_up"]]
    values = [VALUE[c] for c in departure["cards"]]
    sit = situation_ev(ctx, values[0], values[1], up)
    if len(values) == 2:
        evs = sit.actions()
    else:
        low = sum(values)
        stand, hit = hand_evs(ctx, values[0], values[1], up, low, 1 in values)
        evs = {"stand": stand, "hit": hit}
    diff = evs[departure["basic"]] - evs[departure["action"]]
    if ctx.peeked(up):  # the dealer peeked (ny-4620: on A and T): decisions are made knowing there is no blackjack
        diff /= 1.0 - sit.p_blackjack
    return round(diff * parse_money(departure["wager"]))


@pytest.mark.parametrize("profile", ["ny-4620", "european-6d", "house-shoe-surrender"])
@pytest.mark.parametrize(("mistake", "actions", "basic_actions"), [
    (stands_on_stiffs, {"stand"}, {"hit", "surrender"}),  # surrender where the profile offers it (16 v T)
    (never_doubles, {"hit", "stand"}, {"double"}),  # stand: a soft 18 that basic doubles
])
def test_each_scripted_mistake_costs_the_ev_difference_to_the_cent(mistake: Any, actions: set[str],
                                                                   basic_actions: set[str], profile: str) -> None:
    session = Session(profile=profile, seed=11)
    session.card_in(3, "555")
    for _ in range(200):
        session.play_round({3: 2 * session.rules.min_bet}, mistake)
    session.card_out(3, "555")
    session.close()
    (rating,) = _feed(RatingBook(session.rules), session.events)
    shown = rating.to_json()
    departures = shown["departures"]
    assert departures, "200 rounds hold some of these hands"
    for d in departures:
        assert d["action"] in actions and d["basic"] in basic_actions, d
        assert parse_money(d["cost"]) == _expected_cost(session, d), d
        # a cost may be negative: a three-card 16 stood against a ten is worth more than a hit (the chart,
        # total-dependent, says hit); the mistake as a whole costs
    extra = parse_money(shown["skill_theoretical_loss"]) - parse_money(shown["theoretical_loss"])
    assert extra > 0 and abs(extra - round(sum(dep.cost for dep in rating.departures))) <= 1


def test_a_rules_change_mid_rating_prices_each_round_under_the_rules_then_in_force() -> None:
    """The table's profile changed while a player is rated (taken between shoes, as a table takes it): each round's
    theo is its wagers x the edge of the rules it was played under, each departure is priced with those rules'
    EVs (house-h17 doubles 11 against an ace, house-shoe-surrender hits it), not with the rules the book began
    with nor the last ones."""
    first, second = load_rules("house-h17"), load_rules("house-shoe-surrender")
    session = Session(profile="house-h17", seed=5)
    session.card_in(3, "555")
    for _ in range(80):
        session.play_round({3: 1000}, never_doubles)
    session.change_rules(second)
    while session.pending_rules is not None:
        session.play_round({3: 1000}, never_doubles)
    changed = next(e["seq"] for e in session.events if e["type"] == "rules_changed")
    for _ in range(80):
        session.play_round({3: 1000}, never_doubles)
    session.card_out(3, "555")
    session.close()
    (rating,) = _feed(RatingBook(first, table_id="t01"), session.events)
    shown = rating.to_json()
    bets = [e for e in session.events if e["type"] == "no_more_bets"]
    last_before = max(e["round"] for e in bets if e["seq"] < changed)
    wagers_before = sum(parse_money(w) for e in bets if e["seq"] < changed for w in e["wagers"].values())
    wagers_after = sum(parse_money(w) for e in bets if e["seq"] > changed for w in e["wagers"].values())
    edge_a, edge_b = house_edge(first).house_edge, house_edge(second).house_edge
    assert abs(edge_a - edge_b) * wagers_after > 100, "the two profiles' edges differ by more than a cent here"
    assert shown["theoretical_loss"] == format_money(round(wagers_before * edge_a + wagers_after * edge_b))
    assert shown["theoretical_edge"] == round((wagers_before * edge_a + wagers_after * edge_b)
                                              / (wagers_before + wagers_after), 6)
    departures = shown["departures"]
    before = [d for d in departures if d["round"] <= last_before]
    after = [d for d in departures if d["round"] > last_before]
    assert before and after, "both rule sets saw departures"
    for d in before:
        assert parse_money(d["cost"]) == _expected_cost_under(first, d), d
    for d in after:
        assert parse_money(d["cost"]) == _expected_cost_under(second, d), d
        assert not (d["cards"] in (["6", "5"], ["5", "6"]) and d["dealer_up"] == "A"), "no double of 11 v A here"


def test_new_rules_the_book_is_not_given_are_refused_naming_the_event() -> None:
    book = RatingBook(load_rules("house-h17"))
    with pytest.raises(RatingInputError, match=r"event 3 \(rules_changed\): new rules without their rules"):
        book.handle({"seq": 3, "ts": 1.0, "type": "rules_changed", "profile": "x", "digest": "0" * 16})
    assert book.handle({"seq": 4, "ts": 1.0, "type": "rules_changed", "profile": "house-h17",
                        "digest": rules_digest(load_rules("house-h17"))}) == []


def test_a_stiff_stood_against_a_ten_after_the_peek_costs_what_the_engine_says() -> None:
    """One hand by hand: T,6 against a ten, stood (basic hits), $5 on ny-4620 (4 decks, peek on T)."""
    session = Session(seed=0)
    ctx = Context.of(session.rules)
    book = RatingBook(session.rules)
    events = [
        {"seq": 1, "ts": 10.0, "type": "card_in", "spot": 1, "player": "9"},
        {"seq": 2, "ts": 20.0, "type": "no_more_bets", "round": 1, "wagers": {"1": "5"}},
        {"seq": 3, "ts": 21.0, "type": "card", "to": "spot", "spot": 1, "hand": 0, "card": "TC"},
        {"seq": 4, "ts": 22.0, "type": "card", "to": "dealer", "card": "KD", "hole": False},
        {"seq": 5, "ts": 23.0, "type": "card", "to": "spot", "spot": 1, "hand": 0, "card": "6H"},
        {"seq": 6, "ts": 24.0, "type": "card", "to": "dealer", "card": None, "hole": True},
        {"seq": 7, "ts": 25.0, "type": "peek", "blackjack": False},
        {"seq": 8, "ts": 26.0, "type": "decision", "spot": 1, "hand": 0, "action": "stand"},
        {"seq": 9, "ts": 30.0, "type": "round_settled", "round": 1, "nets": {"1": "-5"}},
        {"seq": 10, "ts": 40.0, "type": "table_closed", "at": "x"},
    ]
    (rating,) = _feed(book, events)
    sit = situation_ev(ctx, 6, 10, 10)
    per_unit = (sit.hit - sit.stand) / (1.0 - sit.p_blackjack)
    (d,) = rating.to_json()["departures"]
    assert d["cost"] == format_money(round(500 * per_unit)) == "0.05"  # 0.96% of $5
    assert d["ev_basic"] - d["ev_action"] == pytest.approx(per_unit, abs=1e-6)
    assert rating.to_json()["ended_by"] == "table_closed"


def test_insurance_costs_its_negative_ev() -> None:
    session = Session(seed=5)
    session.card_in(6, "77")
    for _ in range(120):
        session.play_round({6: 400}, basic, insure={6})
    session.card_out(6, "77")
    session.close()
    (rating,) = _feed(RatingBook(session.rules), session.events)
    insured = [d for d in rating.to_json()["departures"] if d["action"] == "insurance"]
    assert insured
    for d in insured:
        i, j = sorted(VALUE[c] for c in d["cards"])
        assert d["cost"] == format_money(round(-insurance_ev(4, i, j) * 200))  # half the $4 wager


# -- what a floor person expects ------------------------------------------------------------------------------


def test_a_card_pulled_mid_round_keeps_that_round_and_ends_at_the_next_wagers() -> None:
    session = Session(seed=2)
    session.card_in(3, "42")
    session.play_round({3: 500})
    pulled: list[float] = []
    session.play_round({3: 500}, after_bets=lambda: pulled.append(session.card_out(3, "42")["ts"]))
    book = RatingBook(session.rules)
    assert _feed(book, session.events) == []  # not yet: the card may come back before the next round
    (open_,) = book.open_ratings()
    assert open_.rounds == 2
    seen = len(session.events)
    session.play_round({3: 500})  # no card: unrated
    (rating,) = _feed(book, session.events[seen:])
    assert (rating.rounds, rating.ended, rating.ended_by) == (2, pulled[0], "card_out")
    assert book.unrated()[3].rounds == 1


def test_a_card_moved_to_another_spot_is_one_rating() -> None:
    session = Session(seed=4)
    session.card_in(3, "42")
    session.play_round({3: 500})
    session.card_out(3, "42")
    session.card_in(5, "42")
    session.play_round({5: 300})
    session.close()
    (rating,) = _feed(RatingBook(session.rules), session.events)
    shown = rating.to_json()
    assert (shown["spot"], shown["spots"], shown["rounds"], shown["initial_wagers"]) == (3, [3, 5], 2, "8")


def test_a_player_on_two_spots_is_one_rating_each_round_counted_once() -> None:
    session = Session(seed=6)
    session.card_in(2, "42")
    session.card_in(3, "42")  # a second card of the same account
    for _ in range(4):
        session.play_round({2: 500, 3: 200})
    session.card_out(2, "42")
    session.card_out(3, "42")
    session.close()
    (rating,) = _feed(RatingBook(session.rules), session.events)
    shown = rating.to_json()
    assert (shown["rounds"], shown["hands"], shown["initial_wagers"]) == (4, 8, "28")
    assert (shown["average_bet"], shown["max_bet"]) == ("3.50", "5")
    assert shown["house_net"] == format_money(-_nets(session, {2, 3}))


def test_a_card_read_twice_changes_nothing_and_another_card_ends_the_first() -> None:
    session = Session(seed=8)
    first = session.card_in(1, "42")
    session.play_round({1: 500})
    session.card_in(1, "42")  # the reader (or the table PC) restarted: the same card again
    session.play_round({1: 500})
    session.card_in(1, "43")  # another card where 42 was: 42's card out was missed
    session.play_round({1: 500})
    session.close()
    book = RatingBook(session.rules)
    closed = _feed(book, session.events)
    assert [(r.player, r.rounds, r.started) for r in closed] == [("42", 2, first["ts"]), ("43", 1, closed[1].started)]


def test_idle_rounds_end_a_rating_and_the_next_wager_opens_a_new_one() -> None:
    session = Session(seed=9)
    session.card_in(2, "42")
    last = session.play_round({2: 500})
    session.play_round({6: 500})
    book = RatingBook(session.rules, idle_rounds=2)
    assert _feed(book, session.events) == []
    session.play_round({6: 500})
    (idle,) = _feed(RatingBook(session.rules, idle_rounds=2), session.events)
    assert (idle.ended, idle.ended_by, idle.rounds) == (last["ts"], "idle", 1)
    session.play_round({2: 500})  # the card is still in: a new rating
    session.close()
    first, second = _feed(RatingBook(session.rules, idle_rounds=2), session.events)
    assert first.rating_id != second.rating_id and second.rounds == 1 and second.ended_by == "table_closed"


def test_the_same_events_rebuild_the_same_open_ratings_after_a_restart() -> None:
    session = Session(seed=12)
    session.card_in(1, "42")
    session.card_in(4, "77")
    for _ in range(10):
        session.play_round({1: 300, 4: 500}, stands_on_stiffs)
    live = RatingBook(session.rules, table_id="t01")
    _feed(live, session.events)
    rebuilt = RatingBook(session.rules, table_id="t01")  # a table killed and restarted replays its journal
    _feed(rebuilt, session.events)
    assert [r.to_json() for r in rebuilt.open_ratings()] == [r.to_json() for r in live.open_ratings()]
    assert [r.to_json()["open"] for r in live.open_ratings()] == [True, True]


def test_a_checkpoint_restores_the_same_book_and_none_is_taken_while_a_round_is_in_play() -> None:
    """The book written between rounds (as JSON, the way the journal keeps it) and read back goes on exactly as the
    book that never stopped: the same open and ended ratings (departures and exact losses), unrated play, cards."""
    session = Session(seed=12)
    session.card_in(1, "42")
    session.card_in(4, "77")
    for n in range(30):
        session.play_round({1: 300, 4: 500, 6: 200}, stands_on_stiffs)  # spot 6: no card
        if n == 14:
            half = len(session.events)
            session.card_out(4, "77")
    session.card_out(1, "42")
    session.close()
    live = RatingBook(session.rules, table_id="t01")
    _feed(live, session.events[:half])
    state = live.checkpoint()
    assert state is not None
    restored = RatingBook.restore(json.loads(json.dumps(state)), table_id="t01")
    assert [r.to_json() for r in restored.open_ratings()] == [r.to_json() for r in live.open_ratings()]
    rest = session.events[half:]
    ended_live, ended_restored = _feed(live, rest), _feed(restored, rest)
    assert [r.to_json() for r in ended_restored] == [r.to_json() for r in ended_live]
    assert [(r.theoretical_loss, r.skill_cost) for r in ended_restored] == \
        [(r.theoretical_loss, r.skill_cost) for r in ended_live]
    assert len(ended_live) == 2 and ended_live[0].departures
    assert {s: u.to_json() for s, u in restored.unrated().items()} == \
        {s: u.to_json() for s, u in live.unrated().items()}
    mid = RatingBook(session.rules)
    _feed(mid, session.events[:next(i for i, e in enumerate(session.events) if e["type"] == "no_more_bets") + 1])
    assert mid.checkpoint() is None, "a round in play is not written"


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.pop("open"), "KeyError: 'open'"),
    (lambda s: s.update(format=99), "format 99, not 1"),
    (lambda s: s["open"][0].update(initial_wagers="lots"), "ValueError"),
    (lambda s: s.update(rules={"decks": "six"}), "ratings checkpoint: "),
])
def test_a_checkpoint_that_does_not_read_is_refused_naming_it(change: Any, message: str) -> None:
    session = Session(seed=2)
    session.card_in(3, "42")
    session.play_round({3: 500})
    book = RatingBook(session.rules)
    _feed(book, session.events)
    state = book.checkpoint()
    assert state is not None
    change(state)
    with pytest.raises(RatingInputError, match=f"ratings checkpoint: .*{message}" if "checkpoint" not in message
                       else message):
        RatingBook.restore(state)


@pytest.mark.parametrize(("event", "message"), [
    ({"seq": 4, "type": "card_in", "spot": 1, "player": "1"}, "event 4 (card_in): no time"),
    ({"seq": 5, "ts": 1.0, "type": "card_in", "spot": 9, "player": "1"}, "event 5 (card_in): spot must be 1..7"),
    ({"seq": 6, "ts": 1.0, "type": "card_in", "spot": 1, "player": ""}, "event 6 (card_in): no card number"),
    ({"seq": 7, "ts": 1.0, "type": "no_more_bets", "round": 1, "wagers": {"1": 2.5}}, "event 7 (no_more_bets): "),
    ({"seq": 8, "ts": 1.0, "type": "no_more_bets", "round": 1}, "event 8 (no_more_bets): KeyError: 'wagers'"),
    ({"seq": 9, "ts": 1.0, "type": "no_more_bets", "round": 1, "wagers": ["5"]}, "event 9 (no_more_bets): "),
    ({"seq": 10, "ts": 1.0, "type": "no_more_bets", "round": 1, "wagers": {"x": "5"}}, "event 10 (no_more_bets): "),
])
def test_an_event_the_book_cannot_read_is_refused_naming_it(event: dict[str, Any], message: str) -> None:
    book = RatingBook(Session().rules)
    book.handle({"seq": 1, "ts": 0.5, "type": "card_in", "spot": 2, "player": "42"})
    book.handle({"seq": 2, "ts": 0.6, "type": "card_out", "spot": 2, "player": "42"})  # ends at the next wagers
    with pytest.raises(RatingInputError) as e:
        book.handle(event)
    assert str(e.value).startswith(message)
    assert [r.player for r in book.open_ratings()] == ["42"]  # the book is as it was: nothing ended unseen
    (ended,) = book.handle({"seq": 11, "ts": 2.0, "type": "no_more_bets", "round": 1, "wagers": {"2": "5"}})
    assert (ended.player, ended.ended) == ("42", 0.6)


def test_a_decision_of_the_wrong_shape_in_a_round_is_refused_naming_it() -> None:
    book = RatingBook(Session().rules)
    book.handle({"seq": 1, "ts": 1.0, "type": "no_more_bets", "round": 1, "wagers": {"2": "5"}})
    with pytest.raises(RatingInputError, match=r"^event 2 \(decision\): ValueError"):
        book.handle({"seq": 2, "ts": 2.0, "type": "decision", "spot": 2, "hand": "first", "action": "stand"})


# -- what a pit screen sees -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("number", "shown"), [
    ("6001234567", "*******567"), ("600123456789", "********6789"), ("1234", "***4"), ("12", "**"), ("7", "*"),
])
def test_a_masked_number_shows_at_most_four_and_at_most_a_third(number: str, shown: str) -> None:
    from controller.ratings import masked

    assert masked(number) == shown


def test_the_screens_view_of_a_running_rating_holds_no_part_of_the_card_number_beyond_the_mask() -> None:
    """The insider's move: read the number off the dashboard's view (state) instead of the ratings topic."""
    import json

    number = "6001234567"
    session = Session(seed=13)
    session.card_in(3, number)
    for _ in range(20):
        session.play_round({3: 500}, stands_on_stiffs)  # departures: cards and times a screen must not get
    book = RatingBook(session.rules, table_id="t01")
    _feed(book, session.events)
    view = book.spot_view()
    assert set(view) == {3} and view[3]["rated"] is True and view[3]["player"] == "*******567"
    text = json.dumps(view)
    runs = {number[i:i + 4] for i in range(len(number) - 3)}  # every 4 characters in a row of the number
    assert not [run for run in runs if run in text] and "departures" not in text
    assert book.open_ratings()[0].to_json()["player"] == number  # the ratings topic itself carries it


def test_the_public_view_is_the_full_rating_s_figures_without_number_or_departures() -> None:
    """public_json is built apart from to_json (it goes into every state): the same figures, to the cent."""
    from controller.ratings.rating import Departure, Rating

    r = Rating("t01-5", "6001234567", 3, 1_800_000_000.0, 0.0062, spots=[3], rounds=7, hands=9,
               initial_wagers=12_345, last_seen=1_800_000_725.0, wagers_by_edge={0.0062: 12_345})
    r.add_departure(Departure(2, 3, 0, ("TS", "6H"), "T", "stand", "hit", -0.54, -0.51, 1000, 31.7, 1.0))
    full, public = r.to_json(), r.public_json()
    assert full["theoretical_loss"] == "0.77" and full["skill_theoretical_loss"] == "1.08"
    assert public == {"rated": True, "player": "*******567", "rating_id": "t01-5",
                      **{k: full[k] for k in ("started", "minutes", "rounds", "average_bet", "theoretical_loss",
                                              "skill_theoretical_loss")}}
