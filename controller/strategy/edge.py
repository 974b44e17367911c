"""Theoretical house edge of a rule set for the basic-strategy player, and its breakdown.

The edge is the dealt-probability-weighted average of the EV of the first decision over the 550
starting situations (55 two-card hands by value x 10 up cards), off the top of a full shoe:

* ``basic`` plays the total-dependent chart of :mod:`controller.strategy.chart` for the first
  decision (what the bench plays), then the best hit/stand continuation by total;
* ``optimal`` takes the best first decision for each two-card composition (the
  "composition-dependent" figure, which published combinatorial tables quote).

Insurance and even money are never taken (basic strategy), so they do not enter the edge; their
EV per unit is reported separately. ``house_edge`` is a fraction of the initial wager, positive
when the house wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from controller.game.rules import Rules
from controller.strategy.chart import basic_strategy, tens_pair_fraction
from controller.strategy.ev import (
    Context,
    SituationEV,
    deal_probability,
    full_shoe,
    player_hand_values,
    situation_ev,
)


@dataclass(frozen=True, slots=True)
class EdgeReport:
    """The house edge and a few figures behind it (fractions of the initial wager)."""

    house_edge: float
    house_edge_optimal: float
    player_blackjack: float
    dealer_blackjack: float
    insurance_ev: float
    method: str


def _ev_of(sit: SituationEV, action: str) -> float:
    acts = sit.actions()
    return acts[action]


def _allowed(sit: SituationEV, split_ok: bool) -> tuple[bool, bool, bool]:
    return sit.double is not None, split_ok and sit.split is not None, sit.surrender is not None


@lru_cache(maxsize=64)
def house_edge(rules: Rules) -> EdgeReport:
    """The theoretical house edge of ``rules`` for basic-strategy play (see module docstring)."""
    ctx = Context.of(rules)
    strat = basic_strategy(rules)
    tens_split = tens_pair_fraction(rules)
    basic = 0.0
    optimal = 0.0
    p_player_bj = 0.0
    p_dealer_bj = 0.0
    for up in range(1, 11):
        for i, j in player_hand_values():
            w = deal_probability(rules.decks, i, j, up)
            sit = situation_ev(ctx, i, j, up)
            p_dealer_bj += w * sit.p_blackjack
            if sit.natural is not None:
                p_player_bj += w
                basic += w * sit.natural
                optimal += w * sit.natural
                continue
            low = i + j
            soft = i == 1
            total = low + 10 if soft else low
            pair = i == j
            shares = ((tens_split, True), (1.0 - tens_split, False)) if pair and i == 10 else ((1.0, pair),)
            for share, split_ok in shares:
                if share == 0.0:
                    continue
                can_double, can_split, can_surrender = _allowed(sit, split_ok)
                action = strat.decide(total, soft, pair, can_double, can_split, can_surrender, up)
                basic += w * share * _ev_of(sit, action)
                acts = sit.actions()
                if not split_ok:
                    acts.pop("split", None)
                optimal += w * share * max(acts.values())
    shoe = full_shoe(rules.decks)
    n = sum(shoe)
    p_ten = shoe[10] / (n - 1)
    return EdgeReport(
        house_edge=-basic,
        house_edge_optimal=-optimal,
        player_blackjack=p_player_bj,
        dealer_blackjack=p_dealer_bj,
        insurance_ev=2.0 * p_ten - (1.0 - p_ten),
        method=(
            "exact dealer recursion on the shoe less the up card and the player's two cards; player draws "
            "from that shoe; resplits in the infinite-deck model; first decision from the total-dependent chart"
        ),
    )
