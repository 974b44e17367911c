"""The derived basic strategy against well-known published charts (4-8 decks)."""

from __future__ import annotations

import pytest

from controller.game.rules import Rules
from controller.strategy.chart import HARD, PAIR, SOFT, basic_strategy

S17_DAS = Rules(decks=6)
S17_DAS_LS = Rules(decks=6, surrender="late")
H17_DAS_LS = Rules(decks=6, dealer_hits_soft_17=True, surrender="late")
S17_NODAS = Rules(decks=6, double_after_split=False)
ENHC = Rules(decks=6, hole_card="none", peek_on=frozenset(), dealer_blackjack_takes="all", double_after_split=True)

A = 1  # ace up card


def code(rules: Rules, kind: int, row: int, up: int) -> str:
    return basic_strategy(rules).cell(kind, row, up).code


@pytest.mark.parametrize(
    ("rules", "kind", "row", "up", "expected"),
    [
        # the standard multi-deck S17 DAS chart
        (S17_DAS, HARD, 16, 10, "H"),
        (S17_DAS, HARD, 16, 6, "S"),
        (S17_DAS, HARD, 12, 2, "H"),
        (S17_DAS, HARD, 12, 3, "H"),
        (S17_DAS, HARD, 12, 4, "S"),
        (S17_DAS, HARD, 13, 2, "S"),
        (S17_DAS, HARD, 11, A, "H"),  # S17 shoe: hit 11 against an ace
        (S17_DAS, HARD, 11, 10, "Dh"),
        (S17_DAS, HARD, 10, 9, "Dh"),
        (S17_DAS, HARD, 10, 10, "H"),
        (S17_DAS, HARD, 9, 2, "H"),
        (S17_DAS, HARD, 9, 3, "Dh"),
        (S17_DAS, HARD, 9, 7, "H"),
        (S17_DAS, SOFT, 18, 2, "S"),  # A,7 vs 2 stands when the dealer stands on soft 17
        (S17_DAS, SOFT, 18, 3, "Ds"),
        (S17_DAS, SOFT, 18, 9, "H"),
        (S17_DAS, SOFT, 18, A, "H"),
        (S17_DAS, SOFT, 17, 2, "H"),
        (S17_DAS, SOFT, 17, 3, "Dh"),
        (S17_DAS, SOFT, 13, 4, "H"),
        (S17_DAS, SOFT, 13, 5, "Dh"),
        (S17_DAS, SOFT, 19, 6, "S"),
        (S17_DAS, PAIR, 1, A, "P"),
        (S17_DAS, PAIR, 8, A, "P"),
        (S17_DAS, PAIR, 8, 10, "P"),
        (S17_DAS, PAIR, 9, 7, "S"),
        (S17_DAS, PAIR, 9, 8, "P"),
        (S17_DAS, PAIR, 9, A, "S"),
        (S17_DAS, PAIR, 10, 6, "S"),
        (S17_DAS, PAIR, 5, 9, "Dh"),
        (S17_DAS, PAIR, 4, 5, "P"),  # DAS
        (S17_DAS, PAIR, 2, 2, "P"),
        (S17_DAS, PAIR, 6, 2, "P"),
        (S17_DAS, PAIR, 7, 7, "P"),
        (S17_DAS, PAIR, 7, 8, "H"),
        # without doubling after a split the small pairs are hit more
        (S17_NODAS, PAIR, 4, 5, "H"),
        (S17_NODAS, PAIR, 2, 2, "H"),
        (S17_NODAS, PAIR, 6, 2, "H"),
        (S17_NODAS, PAIR, 3, 3, "H"),
        # late surrender, S17
        (S17_DAS_LS, HARD, 16, 10, "Rh"),
        (S17_DAS_LS, HARD, 16, 9, "Rh"),
        (S17_DAS_LS, HARD, 16, A, "Rh"),
        (S17_DAS_LS, HARD, 15, 10, "Rh"),
        (S17_DAS_LS, HARD, 15, A, "H"),
        (S17_DAS_LS, HARD, 17, A, "S"),
        (S17_DAS_LS, PAIR, 8, A, "P"),
        # H17 changes (the five cells every H17 chart lists)
        (H17_DAS_LS, HARD, 11, A, "Dh"),
        (H17_DAS_LS, SOFT, 18, 2, "Ds"),
        (H17_DAS_LS, SOFT, 19, 6, "Ds"),
        (H17_DAS_LS, HARD, 15, A, "Rh"),
        (H17_DAS_LS, HARD, 17, A, "Rs"),
        (H17_DAS_LS, PAIR, 8, A, "Rp"),
        # no hole card, all bets lost to a blackjack: no double of 11 against ten, no split of 8s against ten or ace
        (ENHC, HARD, 11, 10, "H"),
        (ENHC, HARD, 11, A, "H"),
        (ENHC, PAIR, 8, 10, "H"),
        (ENHC, PAIR, 8, A, "H"),
        (ENHC, PAIR, 1, A, "H"),
    ],
)
def test_chart_matches_published_basic_strategy(rules: Rules, kind: int, row: int, up: int, expected: str) -> None:
    assert code(rules, kind, row, up) == expected


def test_decide_falls_back_when_an_action_is_not_allowed() -> None:
    s = basic_strategy(S17_DAS_LS)
    # 11 vs 6: double; after three cards (no double) hit
    assert s.decide(11, False, False, True, False, False, 6) == "double"
    assert s.decide(11, False, False, False, False, False, 6) == "hit"
    # A,7 vs 3: double, else stand
    assert s.decide(18, True, False, True, False, False, 3) == "double"
    assert s.decide(18, True, False, False, False, False, 3) == "stand"
    # 16 vs 10: surrender when offered, else hit; three-card 16 hits
    assert s.decide(16, False, False, True, False, True, 10) == "surrender"
    assert s.decide(16, False, False, True, False, False, 10) == "hit"
    # 8,8 vs 10 splits; when it may not split (hand limit) it is a 16: surrender or hit
    assert s.decide(16, False, True, True, True, True, 10) == "split"
    assert s.decide(16, False, True, True, False, True, 10) == "surrender"
    assert s.decide(16, False, True, True, False, False, 10) == "hit"
    # A,A is a soft-12 pair
    assert s.decide(12, True, True, True, True, False, 6) == "split"
    assert s.decide(12, True, True, False, False, False, 6) == "hit"
    # 21 and hard 20 stand
    assert s.decide(21, False, False, False, False, False, 10) == "stand"
    assert s.decide(20, False, True, True, False, False, 6) == "stand"


def test_restricted_doubles_leave_the_chart() -> None:
    ny = Rules(decks=4, double_on="10-11", double_after_split=False, split_by="value", max_hands=0, resplit_aces=True)
    chart = basic_strategy(ny).chart()
    assert "D" not in "".join(chart["hard"]["9"])
    assert all(not c.startswith("D") for row in chart["soft"].values() for c in row)
    assert chart["hard"]["11"][4] == "Dh"


def test_chart_has_one_column_per_up_card_and_all_rows() -> None:
    chart = basic_strategy(S17_DAS_LS).chart()
    assert list(chart["hard"]) == [str(t) for t in range(5, 21)]
    assert list(chart["soft"]) == [f"A,{k}" for k in range(2, 10)]
    assert list(chart["pairs"]) == ["2,2", "3,3", "4,4", "5,5", "6,6", "7,7", "8,8", "9,9", "T,T", "A,A"]
    assert all(len(r) == 10 for sec in chart.values() for r in sec.values())
    assert chart["surrender"]["hard 16"] == [".", ".", ".", ".", ".", ".", ".", "R", "R", "R"]
