"""Cards in the contract notation of DESIGN.md: two characters, rank then suit; a leaf every layer imports.

Ranks ``A 2 3 4 5 6 7 8 9 T J Q K``, suits ``S H D C`` (e.g. ``TD``, ``AS``). Cards are plain ``str`` on
purpose: they are what the wire, the journal and the scenario files carry, they hash and compare fast, and
Python interns them. Nothing here knows blackjack (values, naturals: ``controller.game.cards``), so the
drivers and the simulators read and write cards without importing the controller (DESIGN, "Layers").
"""

from __future__ import annotations

from typing import Final

__all__ = ["CARDS", "DECK", "RANKS", "SUITS", "CardError", "parse_card", "shoe_of"]

RANKS: Final = "A23456789TJQK"
SUITS: Final = "SHDC"

#: Every card of one deck, in a fixed order (rank-major).
DECK: Final[tuple[str, ...]] = tuple(r + s for r in RANKS for s in SUITS)

#: The 52 card codes: ``code in CARDS`` says whether two characters are a card.
CARDS: Final[frozenset[str]] = frozenset(DECK)


class CardError(ValueError):
    """A card string that is not in the contract notation."""


def parse_card(text: object) -> str:
    """Return ``text`` as a card, or raise :class:`CardError` saying why it is not one."""
    if not isinstance(text, str):
        raise CardError(f"card must be a two-character string like 'TD', got {text!r}")
    card = text.strip().upper()
    if card not in CARDS:
        raise CardError(f"{text!r} is not a card (rank one of {RANKS}, suit one of {SUITS}, e.g. 'TD')")
    return card


def shoe_of(decks: int) -> list[str]:
    """An unshuffled shoe of ``decks`` decks: the caller shuffles it (the core has no randomness)."""
    return list(DECK) * decks
