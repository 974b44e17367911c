"""Cards at the blackjack table: each card's value, hand totals, naturals.

The notation itself (ranks, suits, parsing, a deck) is the leaf package :mod:`cardnotation`, which every
layer may import; it is re-exported here for the engine's modules. The hot path looks values up in
:data:`VALUE` instead of building objects.
"""

from __future__ import annotations

from typing import Final

from cardnotation import DECK, RANKS, SUITS, CardError, parse_card, shoe_of

__all__ = ["DECK", "RANKS", "RANK_VALUE", "SUITS", "TEN_RANKS", "VALUE", "CardError", "hand_total", "is_natural",
           "parse_card", "shoe_of"]

#: Blackjack value of a card, aces counting 1 (the soft ace is added by the hand).
VALUE: Final[dict[str, int]] = {
    card: (1 if card[0] == "A" else 10 if card[0] in "TJQK" else int(card[0])) for card in DECK
}

#: Value of a rank letter (same convention as :data:`VALUE`).
RANK_VALUE: Final[dict[str, int]] = {r: VALUE[r + "S"] for r in RANKS}

TEN_RANKS: Final = frozenset("TJQK")


def hand_total(cards: list[str] | tuple[str, ...]) -> tuple[int, bool]:
    """Best total of ``cards`` and whether it is soft (an ace counted as 11)."""
    total = 0
    ace = False
    for card in cards:
        v = VALUE[card]
        total += v
        if v == 1:
            ace = True
    if ace and total <= 11:
        return total + 10, True
    return total, False


def is_natural(cards: list[str] | tuple[str, ...]) -> bool:
    """Two cards making 21: an ace and a ten-value card."""
    return len(cards) == 2 and VALUE[cards[0]] + VALUE[cards[1]] == 11 and (
        VALUE[cards[0]] == 1 or VALUE[cards[1]] == 1
    )
