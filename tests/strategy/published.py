"""Published house-edge figures (player's expected return, as a fraction) and the rules they assume.

Every entry is also in ``docs/house-edge.md`` with its source. Wizard of Odds "Blackjack Appendix 9"
tables are combinatorial (peek unless marked no-hole-card; resplit to four hands except aces; one
card to split aces; no surrender; 3:2). Appendix 1 is the infinite-deck table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.game.rules import Rules

WIZ9 = "Wizard of Odds, Blackjack Appendix 9"


@dataclass(frozen=True)
class Published:
    name: str
    player_return: float  # as published: player's expected return per initial wager
    source: str
    rules: dict[str, Any]

    def to_rules(self) -> Rules:
        base: dict[str, Any] = {"max_hands": 4, "resplit_aces": False, "split_aces_one_card": True, "surrender": "none"}
        base.update(self.rules)
        return Rules(name=self.name, **base)


ENHC = {"hole_card": "none", "peek_on": frozenset(), "dealer_blackjack_takes": "all"}

PUBLISHED: list[Published] = [
    Published("1D S17 DAS", 0.001839, f"{WIZ9} (1ds17r4)", {"decks": 1, "double_after_split": True}),
    Published("1D S17 no DAS", 0.000423, f"{WIZ9} (1ds17r4)", {"decks": 1, "double_after_split": False}),
    Published("1D H17 DAS", -0.000072, f"{WIZ9} (1dh17r4)",
              {"decks": 1, "dealer_hits_soft_17": True, "double_after_split": True}),
    Published("1D H17 no DAS", -0.001513, f"{WIZ9} (1dh17r4)",
              {"decks": 1, "dealer_hits_soft_17": True, "double_after_split": False}),
    Published("2D H17 DAS", -0.003797, f"{WIZ9} (2dh17r4)",
              {"decks": 2, "dealer_hits_soft_17": True, "double_after_split": True}),
    Published("2D H17 no DAS", -0.005252, f"{WIZ9} (2dh17r4)",
              {"decks": 2, "dealer_hits_soft_17": True, "double_after_split": False}),
    Published("5D S17 DAS", -0.003804, f"{WIZ9} (5ds17r4)", {"decks": 5, "double_after_split": True}),
    Published("5D S17 no DAS", -0.005225, f"{WIZ9} (5ds17r4)", {"decks": 5, "double_after_split": False}),
    Published("5D H17 DAS", -0.005918, f"{WIZ9} (5dh17r4)",
              {"decks": 5, "dealer_hits_soft_17": True, "double_after_split": True}),
    Published("5D H17 no DAS", -0.007366, f"{WIZ9} (5dh17r4)",
              {"decks": 5, "dealer_hits_soft_17": True, "double_after_split": False}),
    Published("6D H17 no hole card DAS", -0.0072705, f"{WIZ9} (euro-6dh17r4)",
              {"decks": 6, "dealer_hits_soft_17": True, "double_after_split": True, **ENHC}),
    Published("6D H17 no hole card no DAS", -0.0086975, f"{WIZ9} (euro-6dh17r4)",
              {"decks": 6, "dealer_hits_soft_17": True, "double_after_split": False, **ENHC}),
    Published("8D H17 no hole card DAS", -0.007562, f"{WIZ9} (euro-8dh17r4)",
              {"decks": 8, "dealer_hits_soft_17": True, "double_after_split": True, **ENHC}),
    Published("8D H17 no hole card no DAS", -0.0089865, f"{WIZ9} (euro-8dh17r4)",
              {"decks": 8, "dealer_hits_soft_17": True, "double_after_split": False, **ENHC}),
    Published("6D S17 DAS", -0.0040, "Grochowski-style rule summary quoting 0.40% (trian-lazard.com FAQ)",
              {"decks": 6, "double_after_split": True}),
    Published("6D S17 DAS late surrender", -0.0033, "same page: 0.33% with late surrender",
              {"decks": 6, "double_after_split": True, "surrender": "late"}),
]
