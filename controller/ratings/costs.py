"""What a player's decision cost against basic strategy, at the moment it was made (pure arithmetic).

The figures are the engine's own: the EV of each action comes from :mod:`controller.strategy.ev`
(:func:`~controller.strategy.ev.situation_ev` for a two-card hand, :func:`~controller.strategy.ev.hand_evs`
after hits), the action basic strategy takes from the chart the bench plays
(:meth:`controller.strategy.chart.BasicStrategy.decide`, with the same "allowed" flags the bench
gives it), and what the rules allow from the engine's legality (:mod:`controller.game.legality`).

A decision's *cost* is ``EV(basic action) - EV(action taken)`` per unit of the hand's wager, times that
wager: the money the player gave up in expectation. "At that moment": once the peek has shown no
dealer blackjack, the EVs are taken given none (the ev module values them before the peek; dividing
the difference by ``1 - P(blackjack)`` conditions it); where no peek was made the blackjack the dealer
may hold is part of the moment. The cost may be negative: basic strategy is total-dependent, and a
player who departs from it in the rare composition where that pays gains.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.game import legality
from controller.game.cards import VALUE
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules
from controller.strategy.chart import BasicStrategy, basic_strategy
from controller.strategy.ev import Context, hand_evs, insurance_ev, situation_ev


@dataclass(frozen=True, slots=True)
class Judged:
    """One decision against basic strategy: EVs per unit of ``wager`` (cents), cost in cents (float)."""

    action: str
    basic: str
    ev_action: float
    ev_basic: float
    wager: int
    cost: float

    @property
    def departed(self) -> bool:
        """Whether the player did something else than basic strategy."""
        return self.action != self.basic


class Judge:
    """Judges the decisions of one rule set (the chart and the EV context built once)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.ctx = Context.of(rules)
        self.strategy: BasicStrategy = basic_strategy(rules)

    def _at_moment(self, evs: dict[str, float], up: int, peeked: bool, p_bj: float) -> dict[str, float]:
        """The ev module's EVs (valued before the peek: a blackjack takes the original wager) as they
        stand once the peek said "no blackjack": ``(ev + P(bj)) / (1 - P(bj))``."""
        if not (peeked and self.ctx.peeked(up) and p_bj < 1.0):
            return evs
        return {a: (ev + p_bj) / (1.0 - p_bj) for a, ev in evs.items()}

    def play(self, spot: Spot, hand: Hand, up_card: str, action: str, *, amount: int | None = None,
             peeked: bool = False) -> Judged | None:
        """A playing decision (``hit``, ``stand``, ``double``, ``split``, ``surrender``) on ``hand`` of
        ``spot`` before it is applied; None where basic strategy has nothing to say (split aces that
        take one card, a two-card 21)."""
        rules = self.rules
        up = VALUE[up_card]
        cards = hand.cards
        if len(cards) < 2 or (hand.split_aces and rules.split_aces_one_card):
            return None
        i, j = VALUE[cards[0]], VALUE[cards[1]]
        evs: dict[str, float]
        sit = situation_ev(self.ctx, i, j, up)
        if len(cards) == 2:
            if sit.natural is not None:
                return None
            pair = i == j
            can_double = legality.double_refusal(rules, hand) is None and sit.double is not None
            can_split = pair and legality.split_refusal(rules, spot, hand) is None and sit.split is not None
            if action == "surrender":
                can_surrender = sit.surrender is not None
            else:  # as the bench's player: late surrender on the spot's only hand (European: before play)
                can_surrender = rules.surrender == "late" and len(spot.hands) == 1 and sit.surrender is not None
            basic = self.strategy.decide(hand.total, hand.soft, pair, can_double, can_split, can_surrender, up)
            evs = {"stand": sit.stand, "hit": sit.hit}
            if sit.double is not None:
                evs["double"] = sit.double
                if amount is not None and amount < hand.wager:  # double for less: the stake scales
                    evs["double"] = self._for_less(sit.double, amount / hand.wager, sit.p_blackjack, up)
            if sit.split is not None:
                evs["split"] = sit.split
            if sit.surrender is not None:
                evs["surrender"] = sit.surrender
        else:
            low = hand.total - 10 if hand.soft else hand.total
            stand, hit = hand_evs(self.ctx, i, j, up, low, any(VALUE[c] == 1 for c in cards))
            basic = self.strategy.decide(hand.total, hand.soft, False, False, False, False, up)
            evs = {"stand": stand, "hit": hit}
        if action not in evs or basic not in evs:
            return None
        evs = self._at_moment(evs, up, peeked, sit.p_blackjack)
        cost = (evs[basic] - evs[action]) * hand.wager
        return Judged(action, basic, evs[action], evs[basic], hand.wager, cost)

    def _for_less(self, double: float, fraction: float, p_bj: float, up: int) -> float:
        """EV of doubling for ``fraction`` of the wager, from the full double's EV."""
        if self.ctx.conditional(up) and p_bj:  # the blackjack costs the original wager only
            return (1.0 + fraction) / 2.0 * (double + p_bj) - p_bj
        return (1.0 + fraction) / 2.0 * double

    def insurance(self, hand: Hand, action: str, amount: int) -> Judged:
        """Insurance (``amount`` cents) or even money taken on ``hand`` against an ace: basic strategy
        takes neither. Insurance costs its negative EV; even money what the natural was worth beyond 1."""
        i, j = sorted((VALUE[hand.cards[0]], VALUE[hand.cards[1]]))
        if action == "even_money":
            natural = situation_ev(self.ctx, 1, 10, 1).natural
            assert natural is not None
            return Judged("even_money", "no_insurance", 1.0, natural, hand.wager, (natural - 1.0) * hand.wager)
        unit = insurance_ev(self.rules.decks, i, j)
        return Judged("insurance", "no_insurance", unit, 0.0, amount, -unit * amount)
