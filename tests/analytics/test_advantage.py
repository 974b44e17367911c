"""Advantage-play signals: the Hi-Lo count the table keeps, the bet figures, the flag, and the simulated counter.

The count is checked on a stacked shoe dealt by the real engine (every figure worked out by hand below), the
bet figures on rounds made by hand, and the flag on whole simulated shoes: the counter is flagged, a flat
bettor and a random bettor at the same table are not.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from typing import Any

import pytest

from controller.analytics.advantage import (
    RULE,
    Bet,
    FlagRule,
    ShoeCounter,
    SpotSignal,
    correlation,
    flag,
    shoe_signals,
    shoes,
    window,
)
from controller.game import events as ev
from controller.game.cards import DECK
from controller.game.table import Table
from controller.profiles import load_rules
from controller.records import rounds
from controller.sim.dealer import SimulatedDealer, public_records
from controller.strategy.chart import basic_strategy
from controller.strategy.counter import (
    CountingPlayer,
    CountView,
    FlatBettor,
    RandomBettor,
    Regular,
    index_play,
    ramp_units,
    running_count,
    seen_before_round,
    true_count,
)

RULES = load_rules("house-h17")  # 6 decks (312 cards), burn 1, cut card at 234, $5 to $500, H17, no surrender
STRATEGY = basic_strategy(RULES)


# -- playing a table ---------------------------------------------------------------------------------------------


class _Stacked(SimulatedDealer):
    """The demo's dealer with a stacked first shoe and no crowd: only the regulars bet."""

    def __init__(self, top: list[str], regulars: tuple[Regular, ...]) -> None:
        super().__init__(RULES, seed=1, table_id="stacked", regulars=regulars)
        rest = Counter(list(DECK) * RULES.decks)
        rest.subtract(top)
        assert min(rest.values()) >= 0
        self.stacked = top + sorted(rest.elements())

    def shoe(self, shuffle_no: int) -> list[str]:
        return self.stacked if shuffle_no == 1 else super().shoe(shuffle_no)

    def _seats(self, round_no: int, min_bet: int, max_bet: int) -> dict[int, tuple[int, str]]:
        return {}


def _rounds_of_the_first_shoe(dealer: SimulatedDealer, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in rounds(public_records(dealer)):
        out.append(r)
        if len(out) == n:
            return out
    raise AssertionError("the table stopped")


#: the bets alone judged at z 3, as before index plays backed a flag below z 4: these rounds made by hand hold
#: no index play, and a dozen bets on a straight line reach z 3.3 only
BETS_ALONE = FlagRule(min_z_alone=3.0)


# -- the count -------------------------------------------------------------------------------------------------

# burn KS (never seen); then per round: spot 1, dealer up, spot 1, hole, dealer's draws
ROUND_1 = ["TH", "5D", "9C", "6S", "2H", "3C", "4D"]  # 19 stands v 5; dealer 11, 13, 16, 20
ROUND_2 = ["7H", "6C", "5S", "5H", "2C", "3D", "4S"]  # 12 stands v 6 (12 v 6: hit only below -1); dealer 20
ROUND_3 = ["TD", "4C", "TC", "2S", "3S", "4H", "5C"]  # T,T stands v 4; dealer 6, 9, 13, 18


def test_the_hi_lo_count_of_a_stacked_shoe_dealt_by_the_engine_is_the_count_by_hand() -> None:
    dealer = _Stacked(["KS", *ROUND_1, *ROUND_2, *ROUND_3], (CountingPlayer(1),))
    played = _rounds_of_the_first_shoe(dealer, 3)
    assert [r["dealer"]["cards"] for r in played] == [["5D", "6S", "2H", "3C", "4D"], ["6C", "5H", "2C", "3D", "4S"],
                                                      ["4C", "2S", "3S", "4H", "5C"]], "the shoe as stacked"
    (signal,) = shoe_signals(played, RULES, shoe=1, strategy=STRATEGY)
    # by hand: round 1 sees T(-1) 5 9(0) 6 2 3 4 (+1 each): +4; round 2 sees 7(0) and six low cards: +6;
    # cards out before round 2: the burn and 7; before round 3: 15. Decks left = (312 - out) / 52.
    assert [(b.round, b.running) for b in signal.samples] == [(1, 0), (2, 4), (3, 10)]
    assert [b.true for b in signal.samples] == pytest.approx([0.0, 4 / (304 / 52), 10 / (297 / 52)])
    assert [b.true for b in signal.samples] == pytest.approx([0.0, 0.6842, 1.7508], abs=1e-4)
    # the counter's bets: one unit (the $5 minimum) below a true count of +2.5
    assert [b.amount for b in signal.samples] == [500, 500, 500]
    assert signal.spread == 1.0 and signal.correlation is None and not signal.flagged
    # 12 v 6 in round 2, at running count 4 + 7H(0) 6C(+1) 5S(+1) (the hole card face down), 12 cards out
    (play,) = signal.plays
    assert (play.round, play.situation, play.play, play.action, play.due) == (2, "12 v 6", "hit", "stand", False)
    assert play.true == pytest.approx(6 / (300 / 52))


def test_the_burn_card_is_out_but_never_seen() -> None:
    shoe = ["AS", "2H", "3H", "KD"]
    assert seen_before_round(shoe, 0, 1) == ([], 1), "before the burn: it counts as out all the same"
    assert seen_before_round(shoe, 3, 1) == (["2H", "3H"], 3)
    assert running_count(["2H", "3H", None, "KD", "AS", "7C"]) == 0
    assert true_count(6, 52, 312) == pytest.approx(1.2)
    assert true_count(6, 300, 312) == 12.0, "never divided by less than half a deck"


# -- the figures and the flag -----------------------------------------------------------------------------------


def test_correlation_by_hand() -> None:
    assert correlation([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # x - mean: -1.5 -0.5 0.5 1.5; y - mean: -1.5 0.5 -0.5 1.5; sum of products 4, each sum of squares 5
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert correlation([5, 5, 5], [1, 2, 3]) is None, "a flat bettor's bets do not vary"
    assert correlation([1], [1]) is None


def _round(number: int, wagers: dict[str, str], cards: list[str]) -> dict[str, Any]:
    """A settled round as recall gives it, reduced to what the count reads: the wagers and the cards."""
    return {"round": number, "wagers": wagers,
            "events": [{"type": "card", "to": "dealer", "card": c, "hole": False} for c in cards]}


def test_spread_correlation_and_flag_on_rounds_made_by_hand() -> None:
    # twelve rounds, each dealing four cards; spot 1 bets $5 more for every 4 of running count, spot 2 bets $10
    low, high, neutral = ["2C", "3C", "4C", "5C"], ["KC", "QC", "JC", "TC"], ["7C", "8C", "9C", "7D"]
    dealt = [low, low, neutral, low, high, high, low, low, neutral, high, high, high]
    running = [0, 4, 8, 8, 12, 8, 4, 8, 12, 12, 8, 4]  # by hand: +4 after a low round, -4 after a high one
    bets = [5 * (1 + rc // 4) for rc in running]
    assert bets == [5, 10, 15, 15, 20, 15, 10, 15, 20, 20, 15, 10]
    made = [_round(i + 1, {"1": str(bets[i]), "2": "10"}, cards) for i, cards in enumerate(dealt)]
    spot1, spot2 = shoe_signals(made, RULES, shoe=4, strategy=STRATEGY, rule=BETS_ALONE)

    trues = [rc / ((312 - 1 - 4 * i) / 52) for i, rc in enumerate(running)]  # the burn and 4 cards a round out
    assert [(b.round, b.amount, b.running) for b in spot1.samples] == [
        (i + 1, 100 * d, rc) for i, (d, rc) in enumerate(zip(bets, running, strict=True))]
    assert [b.true for b in spot1.samples] == pytest.approx(trues)
    assert (spot1.bets, spot1.min_bet, spot1.max_bet, spot1.spread) == (12, 500, 2000, 4.0)
    r = correlation([float(b) for b in bets], trues)
    assert r == pytest.approx(0.99642, abs=1e-5), "nearly a straight line: the true count moves the bet"
    assert r is not None and spot1.correlation == pytest.approx(r) and spot1.window_correlation == pytest.approx(r)
    assert spot1.z == pytest.approx(r * math.sqrt(11)) and spot1.z == pytest.approx(3.3048, abs=1e-4)
    assert spot1.flagged and "bets follow the true count: r 1.00, z 3.3, spread 4.0 over 12 bets" in spot1.reason
    assert spot1.shoe == 4

    assert (spot2.spread, spot2.correlation, spot2.z, spot2.flagged) == (1.0, None, None, False)
    assert "spread 1.0 under 2" in spot2.reason

    # the same bets in the reverse order: as wide a spread, unrelated to the count
    unrelated = [_round(i + 1, {"1": str(b)}, cards) for i, (b, cards) in enumerate(zip(bets[::-1], dealt,
                                                                                         strict=True))]
    (spot,) = shoe_signals(unrelated, RULES, strategy=STRATEGY)
    assert spot.spread == 4.0 and spot.correlation == pytest.approx(0.33348, abs=1e-5) and not spot.flagged
    assert "r 0.33, z 1.1 < 2.5" in spot.reason

    # ten of the first twelve: as straight a line, too few bets for the same r to be beyond chance
    (short,) = [s for s in shoe_signals(made[:10], RULES, strategy=STRATEGY) if s.spot == 1]
    assert short.correlation is not None and short.correlation > 0.99 and not short.flagged, "z = r x 3 < 3"


def test_the_flag_rule_and_its_window() -> None:
    assert flag(7, 5.0, 0.99) == (False, "too few bets to judge: 7 in 1 shoe, under 8")
    assert not flag(20, 1.5, 0.99)[0]
    assert not flag(8, 4.0, 0.94, index_taken=1)[0], "z = 0.94 x sqrt(7) = 2.49 < 2.5"
    assert flag(8, 4.0, 0.95, index_taken=1)[0], "z = 0.95 x sqrt(7) = 2.51, backed by an index play"
    # an honest spot's bets cross z 3 once in some 740 windows (three times in an hour of the demo's crowd):
    # below min_z_alone the bets need index plays to back them, taken when due and none against the count
    assert not flag(11, 4.0, 0.99)[0], "z 3.13 on the bets alone"
    assert not flag(11, 4.0, 0.99, index_taken=3, index_against=1)[0], "a play against the count backs nothing"
    assert "no index play backs them" in flag(11, 4.0, 0.99)[1]
    assert flag(18, 4.0, 0.99)[0], "z = 0.99 x sqrt(17) = 4.08: the bets alone"
    assert flag(30, 2.0, 0.5, shoes=3, index_taken=2)[0] and not flag(30, 2.0, 0.45, shoes=3, index_taken=2)[0], (
        "0.5 x sqrt(29) = 2.69; 0.45: 2.42")
    assert flag(8, 4.0, 0.9, FlagRule(min_z=2.0, min_z_alone=2.0))[0]

    def signal(shoe: int, amounts: list[int], trues: list[float]) -> SpotSignal:
        return SpotSignal(shoe, 3, len(amounts), 0, 0, None, None, 1, len(amounts), None, None, None, 0, 0, 0,
                          False, "", tuple(Bet(None, a, 0, t) for a, t in zip(amounts, trues, strict=True)))

    earlier = [signal(n, [500], [0.0]) for n in (1, 2, 4, 5)]
    assert [s.shoe for s in window(earlier, 6, 3)] == [4, 5], "the two shoes before, by number"
    assert [s.shoe for s in window(earlier, 4, 3)] == [2], "shoe 3 not played at the spot: not in it"
    assert window(earlier, 6, 1) == []
    # a short shoe (five rounds) is too little to judge alone; with the two shoes before it, it is enough
    low, high = ["2C", "3C", "4C", "5C"], ["KC", "QC", "JC", "TC"]
    dealt, amounts = [low, high, low, low, high], [5, 10, 5, 10, 15]  # running count 0, 4, 0, 4, 8 before each
    made = [_round(i + 1, {"3": str(a)}, cards) for i, (a, cards) in enumerate(zip(amounts, dealt, strict=True))]
    (alone,) = shoe_signals(made, RULES, shoe=3, strategy=STRATEGY)
    assert not alone.flagged and alone.window_shoes == 1 and "too few bets" in alone.reason
    before = [signal(n, [100 * a for a in amounts], [b.true for b in alone.samples]) for n in (1, 2)]
    (pooled,) = shoe_signals(made, RULES, shoe=3, strategy=STRATEGY, earlier=before, rule=BETS_ALONE)
    assert pooled.window_shoes == 3 and pooled.window_bets == 15 and pooled.bets == 5
    assert pooled.window_correlation == pytest.approx(alone.correlation)
    assert pooled.window_correlation is not None and pooled.flagged, pooled.reason
    assert pooled.z == pytest.approx(pooled.window_correlation * math.sqrt(14))
    (later,) = shoe_signals(made, RULES, shoe=4, strategy=STRATEGY, earlier=before)
    assert (later.window_shoes, later.window_bets) == (2, 10), "shoe 1 is out of shoe 4's window"
    assert later.window_correlation is not None and later.z == pytest.approx(later.window_correlation * 3.0)


def test_the_signals_are_json_ready_with_money_as_strings() -> None:
    made = [_round(i + 1, {"1": str(5 * (i + 1))}, ["2C", "3C"]) for i in range(12)]
    (spot,) = shoe_signals(made, RULES, shoe=2, strategy=STRATEGY, rule=BETS_ALONE)
    data = spot.to_json()
    assert data["spot"] == 1 and data["shoe"] == 2 and data["flagged"] is True
    assert data["min_bet"] == "5" and data["max_bet"] == "60" and data["samples"][1]["amount"] == "10"
    assert set(spot.to_json(samples=False)) == set(data) - {"samples", "plays"}
    assert json.loads(json.dumps(data)) == data


# -- index plays -------------------------------------------------------------------------------------------------


def test_index_plays_only_where_they_depart_from_basic_strategy() -> None:
    play = index_play(["TC", "6D"], 10, "hit")
    assert play is not None and play.name == "16 v T" and play.applies(0.0) and not play.applies(-0.1)
    assert index_play(["8C", "8D"], 10, "split") is None, "8,8 v T: basic splits; the stand play is not a departure"
    assert index_play(["TC", "6D"], 10, "surrender") is None, "where basic surrenders 16 v T"
    split = index_play(["KC", "QD"], 6, "stand")
    assert split is not None and split.play == "split" and split.applies(4.0) and not split.applies(3.9)
    assert index_play(["AC", "5D"], 10, "hit") is None, "soft 16: no Illustrious 18 play"
    assert index_play(["5C", "3D", "2D"], 10, "hit") is None, "10 v T doubles on two cards only"
    hit = index_play(["TC", "3D"], 2, "stand")
    assert hit is not None and hit.play == "hit" and hit.applies(-1.5) and not hit.applies(-1.0)
    counter = CountingPlayer(1)
    assert counter.play(["TC", "6D"], 10, "hit", {"stand", "hit"}, CountView(1, 52, 312)) == "stand"
    assert counter.play(["TC", "6D"], 10, "hit", {"stand", "hit"}, CountView(-1, 52, 312)) == "hit"
    assert counter.insure(CountView(15, 52, 312)) is True and counter.insure(CountView(14, 52, 312)) is False
    assert CountingPlayer(1, index_plays=False).play(["TC", "6D"], 10, "hit", {"stand"}, CountView(9, 52, 312)) == "hit"


# -- the simulated players ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tc", "units"), [(-4.0, 1), (0.0, 1), (2.49, 1), (2.5, 2), (3.49, 2), (3.5, 3),
                                           (7.0, 6), (12.49, 11), (12.5, 12), (30.0, 12)])
def test_the_counter_bets_one_to_twelve_units_on_the_true_count(tc: float, units: int) -> None:
    assert ramp_units(tc) == units
    count = CountView(round(tc * 5), 52, 312)  # five decks left: the true count is running / 5
    assert CountingPlayer(1).wager(count, 500, 50_000, 1) == ramp_units(count.true) * 500


def test_the_counters_bet_stays_within_the_table_limits() -> None:
    counter = CountingPlayer(1)
    assert counter.wager(CountView(50, 52, 312), 500, 2500, 1) == 2500, "12 units of $5, capped at the $25 maximum"
    assert counter.wager(CountView(-50, 52, 312), 1000, 50_000, 1) == 1000, "one unit: the table minimum"
    assert FlatBettor(2, units=3).wager(CountView(50, 52, 312), 500, 50_000, 9) == 1500
    bettor = RandomBettor(5, seed=7)
    amounts = {bettor.wager(CountView(0, 52, 312), 500, 50_000, n) for n in range(200)}
    assert amounts == {500 * u for u in range(1, 13)}
    assert bettor.wager(CountView(30, 52, 312), 500, 50_000, 3) == bettor.wager(CountView(-9, 52, 312), 500, 50_000,
                                                                                3), "unrelated to the count"


def _signals(regulars: tuple[Regular, ...], seed: int, n_shoes: int) -> list[list[SpotSignal]]:
    dealer = SimulatedDealer(RULES, seed=seed, table_id="t01", regulars=regulars)
    out: list[list[SpotSignal]] = []
    for shoe in islice(shoes(public_records(dealer)), n_shoes):
        counter = ShoeCounter(RULES, STRATEGY)
        for r in shoe.rounds:
            counter.add(r)
        out.append(counter.signals(shoe.shoe, earlier=[s for signals in out for s in signals]))
    return out


def test_the_counter_is_flagged_and_flat_and_random_bettors_are_not() -> None:
    regulars = (CountingPlayer(1), FlatBettor(3), RandomBettor(5, seed=11))
    played = _signals(regulars, seed=11, n_shoes=5)
    assert [[s.shoe for s in signals][:1] for signals in played] == [[1], [2], [3], [4], [5]]
    by_spot: dict[int, list[SpotSignal]] = {}
    for signals in played:
        for s in signals:
            by_spot.setdefault(s.spot, []).append(s)
    counter, flat, random_ = by_spot.pop(1), by_spot.pop(3), by_spot.pop(5)
    assert any(s.flagged for s in counter), [s.reason for s in counter]
    for s in counter:  # the table's count is the counter's: every bet is his ramp on the count the table kept
        assert [b.amount for b in s.samples] == [ramp_units(b.true) * RULES.min_bet for b in s.samples]
        assert s.index_taken == s.index_due and s.index_against == 0, "he makes every index play due, no other"
    assert sum(s.index_due for s in counter) > 0
    assert all(s.spread == 1.0 and s.correlation is None and not s.flagged for s in flat)
    assert all(s.bets >= RULE.min_bets for s in flat), "judged: enough bets"
    assert all(not s.flagged and (s.spread or 0) >= 2 for s in random_), [s.reason for s in random_]
    assert not any(s.flagged for crowd in by_spot.values() for s in crowd)


def test_a_dealer_started_afresh_makes_the_counters_choices_again() -> None:
    """Nothing the counter decides by is kept in the dealer: after a restart (a new dealer on the table the
    journal rebuilt) every bet and decision is the one the first dealer would have made."""
    table = Table(RULES)
    first = SimulatedDealer(RULES, seed=3, table_id="t01", counter_spot=2)
    table.handle(ev.TableOpened(now=0.0))
    for step in range(3000):
        event = first.next_event(table)
        assert event is not None
        if step % 7 == 0:
            assert SimulatedDealer(RULES, seed=3, table_id="t01", counter_spot=2).next_event(table) == event
        table.handle(event)
    assert table.shuffles >= 3, "several shoes played"


def test_the_demos_crowd_whose_bets_crossed_z_3_by_chance_is_not_flagged() -> None:
    """An hour of the default demo, no counter seated, raised 3 flags in 1,904 spot-shoes (issue 28): the crowd's
    random bets follow the count beyond z 3 once in some 740 windows. Seed 5's crowd does so at spot 7 by its
    15th shoe; the bets alone no longer flag it below z 4: no index play backs them."""
    from controller.analytics.shift import read_shift

    def first_rounds(n: int) -> Iterator[dict[str, Any]]:
        settled = 0
        for body in public_records(SimulatedDealer(RULES, seed=5, table_id="t01")):
            yield body
            settled += body["type"] == "round_settled"
            if settled == n:
                return

    bets_at_3 = read_shift(first_rounds(320), RULES, rule=FlagRule(min_z=3.0, min_z_alone=3.0))
    assert [(f.shoe, f.spot) for f in bets_at_3.flagged] == [(15, 7)], "the premise: a crowd spot at z 3.37"
    assert read_shift(first_rounds(320), RULES).flagged == []
