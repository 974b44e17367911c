"""Cards in the contract notation of DESIGN.md: two characters, rank then suit.

Ranks ``A 2 3 4 5 6 7 8 9 T J Q K``, suits ``S H D C`` (e.g. ``TD``, ``AS``).
Cards are plain ``str`` on purpose: they are what the wire, the journal and
the scenario files carry, they hash and compare fast, and Python interns them.
The hot path looks values up in :data:`VALUE` instead of building objects.
"""

from __future__ import annotations

from typing import Final

RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"

#: Every card of one deck, in a fixed order (rank-major).
DECK: Final[tuple[str, ...]] = tuple(r + s for r in RANKS for s in SUITS)

#: Blackjack value of a card, aces counting 1 (the soft ace is added by the hand).
VALUE: Final[dict[str, int]] = {
    card: (1 if card[0] == "A" else 10 if card[0] in "TJQK" else int(card[0])) for card in DECK
}

#: Value of a rank letter (same convention as :data:`VALUE`).
RANK_VALUE: Final[dict[str, int]] = {r: VALUE[r + "S"] for r in RANKS}

TEN_RANKS: Final = frozenset("TJQK")


class CardError(ValueError):
    """A card string that is not in the contract notation."""


def parse_card(text: object) -> str:
    """Return ``text`` as a card, or raise :class:`CardError` saying why it is not one."""
    if not isinstance(text, str):
        raise CardError(f"card must be a two-character string like 'TD', got {text!r}")
    card = text.strip().upper()
    if card not in VALUE:
        raise CardError(f"{text!r} is not a card (rank one of {RANKS}, suit one of {SUITS}, e.g. 'TD')")
    return card


def shoe_of(decks: int) -> list[str]:
    """An unshuffled shoe of ``decks`` decks: the caller shuffles it (the core has no randomness)."""
    return list(DECK) * decks


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
