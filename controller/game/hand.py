"""A player's hand and a betting spot: the small mutable records the round updates.

Slotted classes, not dataclasses with validation: they are touched on every card
on the bench's hot path. Money is integer cents.

Hand ``status`` values (the ``state`` snapshot shows them):
``waiting`` (not yet played), ``active`` (being played), ``stood``, ``bust``,
``doubled`` (took its one card), ``surrendered``, ``blackjack`` (a natural,
awaiting or given its payout), ``settled`` (paid early: even money, a natural).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.game.cards import VALUE


class Hand:
    """Cards, wager and progress of one hand; a split adds hands to the same spot."""

    __slots__ = (
        "cards", "doubled", "from_split", "outcome", "payout", "soft", "split_aces", "status", "total", "wager",
    )

    def __init__(self, wager: int, cards: list[str] | None = None, *, from_split: bool = False) -> None:
        self.cards: list[str] = cards if cards is not None else []
        self.wager = wager
        self.doubled = False
        self.from_split = from_split
        self.split_aces = False
        self.status = "waiting"
        self.outcome: str | None = None
        self.payout: int | None = None
        self.total = 0
        self.soft = False
        if self.cards:  # a new spot's or the dealer's hand has none yet: nothing to count
            self._recount()

    def _recount(self) -> None:
        total = 0
        ace = False
        for c in self.cards:
            v = VALUE[c]
            total += v
            if v == 1:
                ace = True
        if ace and total <= 11:
            self.total, self.soft = total + 10, True
        else:
            self.total, self.soft = total, False

    def add(self, card: str) -> None:
        self.cards.append(card)
        v = VALUE[card]
        if self.soft:
            total = self.total + v
            if total > 21:
                self.total, self.soft = total - 10, False
            else:
                self.total = total
        elif v == 1 and self.total <= 10:
            self.total, self.soft = self.total + 11, True
        else:
            self.total += v

    def __reduce__(self) -> tuple[Callable[..., Hand], tuple[Any, ...]]:
        # pickled and copied field by field (compiled, the class cannot be made without calling __init__)
        return (_hand, (self.wager, self.cards, self.doubled, self.from_split, self.split_aces, self.status,
                        self.outcome, self.payout, self.total, self.soft))

    @property
    def hard_total(self) -> int:
        """Total counting every ace as one."""
        return self.total - 10 if self.soft else self.total

    @property
    def is_natural(self) -> bool:
        """Two cards making 21 on the initial deal (a split 21 is never a natural)."""
        return len(self.cards) == 2 and self.total == 21 and not self.from_split


class Spot:
    """One betting spot in the round: its hands (several after a split) and insurance."""

    __slots__ = ("hands", "insurance", "insurance_payout", "number", "player", "wager")

    def __init__(self, number: int, wager: int, player: str | None = None) -> None:
        self.number = number
        self.wager = wager  # the original wager
        self.player = player
        self.hands: list[Hand] = [Hand(wager)]
        self.insurance: int | None = None
        self.insurance_payout: int | None = None

    def __reduce__(self) -> tuple[Callable[..., Spot], tuple[Any, ...]]:
        return (_spot, (self.number, self.wager, self.player, self.hands, self.insurance, self.insurance_payout))

    @property
    def net(self) -> int:
        """What the spot won (+) or lost (-) so far in the round."""
        net = self.insurance_payout or 0
        for h in self.hands:
            net += h.payout or 0
        return net

    @property
    def settled(self) -> bool:
        return all(h.payout is not None for h in self.hands) and (
            self.insurance is None or self.insurance_payout is not None
        )


def _hand(wager: int, cards: list[str], doubled: bool, from_split: bool, split_aces: bool, status: str,
          outcome: str | None, payout: int | None, total: int, soft: bool) -> Hand:
    """A hand as :meth:`Hand.__reduce__` saved it."""
    hand = Hand(wager, cards, from_split=from_split)
    hand.doubled, hand.split_aces, hand.status, hand.outcome = doubled, split_aces, status, outcome
    hand.payout, hand.total, hand.soft = payout, total, soft
    return hand


def _spot(number: int, wager: int, player: str | None, hands: list[Hand], insurance: int | None,
          insurance_payout: int | None) -> Spot:
    """A spot as :meth:`Spot.__reduce__` saved it."""
    spot = Spot(number, wager, player)
    spot.hands, spot.insurance, spot.insurance_payout = hands, insurance, insurance_payout
    return spot
