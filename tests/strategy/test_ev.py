"""The arithmetic of decision EVs, checked by hand and against Wizard of Odds Appendix 1."""

from __future__ import annotations

import math

import pytest

from controller.game.rules import Rules
from controller.strategy.ev import (
    Context,
    _split_counts,
    deal_probability,
    dealer_outcomes,
    full_shoe,
    insurance_ev,
    player_hand_values,
    remove,
    situation_ev,
    stand_ev_table,
)

#: a shoe so deep that removal no longer matters: the infinite-deck figures
INFINITE = Rules(decks=1000)


def conditional(rules: Rules, i: int, j: int, up: int, action: str) -> float:
    """EV given no dealer blackjack (what Appendix 1 tabulates)."""
    sit = situation_ev(Context.of(rules), i, j, up)
    p = sit.p_blackjack
    return (sit.actions()[action] + p) / (1 - p)


def test_dealer_distribution_sums_to_one_and_bust_rate_of_a_six_is_the_textbook_42_percent() -> None:
    p_bj, dist = dealer_outcomes(remove(full_shoe(1000), 6), 6, False)
    assert p_bj == 0.0
    assert math.isclose(sum(dist), 1.0, abs_tol=1e-12)
    assert dist[5] == pytest.approx(0.4232, abs=5e-4)  # infinite deck S17, up 6


def test_dealer_blackjack_probability_is_counted_exactly_from_the_cards_left() -> None:
    # one deck, player holds 9,7 and the dealer shows an ace: 16 tens among 49 unseen cards
    shoe = remove(full_shoe(1), 9, 7, 1)
    p_bj, _ = dealer_outcomes(shoe, 1, False)
    assert p_bj == pytest.approx(16 / 49, abs=1e-15)


def test_single_dealer_path_by_hand() -> None:
    # a shoe of only 7s and one 10: dealer shows 10, the hole card is a 7 (prob 1): stands on 17
    shoe = (0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0)
    p_bj, dist = dealer_outcomes(shoe, 10, False)
    assert p_bj == 0.0 and dist == (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    # soft 17 (ace up, 6 hole) against H17 with only 6s left: A,6 -> hit -> A,6,6 = 13 -> 19
    shoe = (0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0)
    _, dist = dealer_outcomes(shoe, 1, True)
    assert dist == (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    _, dist = dealer_outcomes(shoe, 1, False)
    assert dist == (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("total", "up", "expected"),
    [  # Wizard of Odds Appendix 1 (infinite deck, S17): player's expected return by standing
        (20, 6, 0.7040),
        (20, 10, 0.5545),
        (18, 7, 0.3996),
        (17, 2, -0.1530),
        (16, 10, -0.5404),
        (21, 1, 0.9222),
        (19, 9, 0.2876),
    ],
)
def test_stand_ev_matches_appendix_1(total: int, up: int, expected: float) -> None:
    assert stand_ev_table(INFINITE, up)[total] == pytest.approx(expected, abs=6e-4)


def test_stand_on_20_vs_6_by_hand() -> None:
    # infinite deck S17 dealer finals vs 6: 17 .1654, 18 .1063, 19 .1063, 20 .1017, 21 .0972, bust .4232
    win = 0.4232 + 0.1654 + 0.1063 + 0.1063
    lose = 0.0972
    assert stand_ev_table(INFINITE, 6)[20] == pytest.approx(win - lose, abs=3e-4)


def test_eights_against_ten_match_appendix_1() -> None:
    # Appendix 1: 8,8 vs 10: stand -0.5404, hit -0.5398, double -1.0797, split -0.4807 (DAS, to 4 hands)
    assert conditional(INFINITE, 8, 8, 10, "hit") == pytest.approx(-0.5398, abs=6e-4)
    assert conditional(INFINITE, 8, 8, 10, "double") == pytest.approx(-1.0797, abs=1e-3)
    assert conditional(INFINITE, 8, 8, 10, "split") == pytest.approx(-0.4807, abs=1.5e-3)


def test_tie_rules_differ_by_exactly_the_chance_of_a_tie() -> None:
    push = stand_ev_table(Rules(decks=6), 10)
    house = stand_ev_table(Rules(decks=6, ties="house_wins"), 10)
    shoe = remove(full_shoe(6), 10)
    _, dist = dealer_outcomes(shoe, 10, False)
    assert push[20] - house[20] == pytest.approx(dist[3], abs=1e-12)
    assert push[16] == house[16]  # no dealer total below 17: nothing to tie


def test_natural_value_for_each_payout_and_tie_option() -> None:
    for pays, ratio in (((3, 2), 1.5), ((6, 5), 1.2), ((2, 1), 2.0), ((1, 1), 1.0)):
        sit = situation_ev(Context.of(Rules(natural_pays=pays)), 1, 10, 10)
        p = sit.p_blackjack
        assert sit.natural == pytest.approx((1 - p) * ratio)
    sit = situation_ev(Context.of(Rules(ties="house_wins")), 1, 10, 10)
    assert sit.natural == pytest.approx((1 - sit.p_blackjack) * 1.5 - sit.p_blackjack)


def test_insurance_by_hand() -> None:
    # 1 deck, player 9,7, dealer ace: 16 tens of 49: 2*16/49 - 33/49 = -1/49
    assert insurance_ev(1, 9, 7) == pytest.approx(-1 / 49)
    # player holding two tens makes insurance worse: 14 tens of 49
    assert insurance_ev(1, 10, 10) == pytest.approx((28 - 35) / 49)


def test_surrender_values_for_each_hole_card_rule() -> None:
    peek = situation_ev(Context.of(Rules(surrender="late")), 10, 6, 10)
    p = peek.p_blackjack
    assert peek.surrender == pytest.approx(-0.5 * (1 - p) - p)
    lost = Rules(hole_card="no_peek", peek_on=frozenset(), surrender="late", surrender_lost_to_blackjack=True)
    assert situation_ev(Context.of(lost), 10, 6, 10).surrender == pytest.approx(-0.5 * (1 - p) - p)
    euro = Rules(hole_card="none", peek_on=frozenset(), dealer_blackjack_takes="all", surrender="european")
    assert situation_ev(Context.of(euro), 10, 6, 10).surrender == -0.5  # early: half back even on a blackjack
    assert situation_ev(Context.of(euro), 10, 6, 1).surrender is None  # never against an ace


def test_no_hole_card_all_loses_more_on_doubles_than_original_bets_only() -> None:
    obo = Rules(hole_card="no_peek", peek_on=frozenset(), dealer_blackjack_takes="original")
    obbo = Rules(hole_card="no_peek", peek_on=frozenset(), dealer_blackjack_takes="all")
    a = situation_ev(Context.of(obo), 5, 6, 10)
    b = situation_ev(Context.of(obbo), 5, 6, 10)
    assert a.stand == pytest.approx(b.stand)  # one unit at risk either way
    assert a.double is not None and b.double is not None
    # the extra unit lost to a blackjack (up to the player's draws knowing the hole card is not an ace)
    assert a.double - b.double == pytest.approx(a.p_blackjack, abs=1e-3)
    # original bets only with no peek is worth exactly what a peek is worth for these plays
    peek = situation_ev(Context.of(Rules()), 5, 6, 10)
    assert peek.double == pytest.approx(a.double)


def test_resplit_counts() -> None:
    q = 1 / 13
    assert _split_counts(q, 2) == pytest.approx((2 * (1 - q), 2 * q))
    nonpair, stuck = _split_counts(q, 16)
    # unlimited: each slot ends (1-q) or becomes two slots (q): 2(1-q)/(1-2q) hands expected
    assert nonpair + stuck == pytest.approx(2 * (1 - q) / (1 - 2 * q), rel=1e-6)


def test_double_restrictions_remove_the_double() -> None:
    ctx = Context.of(Rules(double_on="10-11"))
    assert situation_ev(ctx, 4, 5, 6).double is None
    assert situation_ev(ctx, 4, 6, 6).double is not None
    hard = Context.of(Rules(double_on="hard-9-11"))
    assert situation_ev(hard, 1, 8, 6).double is None
    assert situation_ev(Context.of(Rules(double_on="9-11")), 1, 8, 6).double is not None


def test_deal_probabilities_sum_to_one() -> None:
    for decks in (1, 6):
        total = sum(deal_probability(decks, i, j, u) for u in range(1, 11) for i, j in player_hand_values())
        assert total == pytest.approx(1.0, abs=1e-12)
