"""The demo's carded players: regulars with a player card in their spot's reader, so the table rates them.

Most play basic strategy exactly (no slips, insurance declined), so their ``skill_theoretical_loss``
equals ``theoretical_loss``; the others make one of the common mistakes every pit sees, so the two
losses differ where they should (docs/ratings.md):

* ``never_doubles``: where the chart doubles, hits (stands on a soft 18 or more);
* ``stands_stiff``: stands on hard 12 to 16 against a 7 to ace, where the chart hits or surrenders;
* ``insures``: takes insurance (or even money) every time it is offered; otherwise basic strategy.

Each player keeps one spot and bets a flat amount (a multiple of the table minimum drawn from the seed),
so a demo restarted on its journal seats the same players with the same cards. Card numbers are drawn
from the seed and the table id: the demo's privacy test greps every published message for them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

from controller.game.cards import VALUE
from controller.strategy.counter import CountView, Regular, clamp_bet

#: the styles of play, in the order the spots are given them
STYLES: Final = ("basic", "never_doubles", "basic", "stands_stiff", "insures")
#: the spots the demo's carded players take, in order (those the table has)
CARDED_SPOTS: Final = (1, 3, 4, 6, 7)
_HIGH: Final = frozenset({7, 8, 9, 10, 1})


def _total(cards: Sequence[str]) -> tuple[int, bool]:
    total = sum(VALUE[c] for c in cards)
    soft = any(VALUE[c] == 1 for c in cards) and total + 10 <= 21
    return (total + 10 if soft else total), soft


class CardedPlayer(Regular):
    """A regular with a player card (``number``) who plays ``style`` (see the module docstring)."""

    kind = "rated"

    def __init__(self, spot: int, number: str, style: str, units: int) -> None:
        if style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(sorted(set(STYLES)))}, not {style!r}")
        super().__init__(spot)
        self.number = number
        self.style = style
        self.units = units

    def wager(self, count: CountView, min_bet: int, max_bet: int, round_no: int) -> int:
        return clamp_bet(self.units * min_bet, min_bet, max_bet)

    def play(self, cards: Sequence[str], up: int, basic: str, legal: set[str], count: CountView) -> str | None:
        total, soft = _total(cards)
        if self.style == "never_doubles" and basic == "double":
            return "stand" if soft and total >= 18 else "hit"
        if self.style == "stands_stiff" and not soft and 12 <= total <= 16 and up in _HIGH \
                and basic in ("hit", "surrender"):
            return "stand"
        return basic

    def insure(self, count: CountView) -> bool | None:
        return self.style == "insures"


def carded_players(seed: int, table_id: str, spots: int, count: int = len(STYLES)) -> tuple[CardedPlayer, ...]:
    """Up to ``count`` carded players for a table of ``spots`` spots, drawn from the seed and the table id."""
    players = []
    for spot, style in zip([s for s in CARDED_SPOTS if s <= spots][:count], STYLES, strict=False):
        rng = random.Random(f"{seed}:{table_id}:card:{spot}")
        number = str(6_000_000_000 + rng.randrange(1_000_000_000))
        players.append(CardedPlayer(spot, number, style, units=rng.choice((1, 2, 2, 3, 5))))
    return tuple(players)
