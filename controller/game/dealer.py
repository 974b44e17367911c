"""The dealer's play, as pure functions: whether the dealer draws, and how much of the hand must be played.

NY 4620.5(i): the dealer stands on 17 or more and draws below it; on a soft 17 the profile says
(``dealer_hits_soft_17``). With no hand left standing against the dealer the hand is not drawn to
(:func:`must_play`). :mod:`controller.strategy.ev` computes the dealer's outcomes with the same rule.
"""

from __future__ import annotations

from typing import Final

from controller.game.hand import Spot

#: How much of the dealer's hand is played (:func:`must_play`).
FULL: Final = "full"
CHECK: Final = "check"
NONE: Final = "none"

# Player hand states in which the hand is finished and waits for the dealer.
_LIVE: Final = frozenset({"stood", "doubled"})


def stands(total: int, soft: bool, hits_soft_17: bool) -> bool:
    """Whether the dealer's rule says stand on ``total`` (17 or more; a soft 17 hit under H17)."""
    return total > 17 or (total == 17 and not (soft and hits_soft_17))


def draws(cards: int, total: int, soft: bool, play: str, hits_soft_17: bool) -> bool:
    """Whether the dealer takes another card, holding ``cards`` cards worth ``total`` (``soft``), when ``play``
    (:func:`must_play`) of the hand is to be played."""
    if cards >= 2:
        if play != FULL:
            # NY 4620.5(i): with no hand left standing against him the dealer draws nothing
            return False
        if cards == 2 and total == 21:
            return False
        return not stands(total, soft, hits_soft_17)
    return play != NONE


def must_play(order: list[Spot]) -> str:
    """'full' when a hand stands against the dealer, 'check' when only a blackjack matters, else 'none'."""
    check = False
    for s in order:
        if s.insurance is not None and s.insurance_payout is None:
            check = True
        for h in s.hands:
            if h.status in _LIVE:
                return FULL
            if h.payout is None and h.status in ("blackjack", "surrendered"):
                check = True
    return CHECK if check else NONE
