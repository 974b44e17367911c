"""A carded session on the real engine, for the ratings' tests: the table's published events, with the truth.

:class:`Session` plays rounds on an ordinary :class:`controller.game.table.Table` (the croupier deals from a
seeded shoe, the engine settles) and keeps every record the table publishes as an event body with ``seq``
and ``ts`` (each event 2 s after the one before), plus the card readers' ``card_in`` / ``card_out``. The
players' decisions come from a function, so a basic-strategy player and a scripted mistake play the same way
the bench's player does (``basic``: the bench's own flags to the chart). ``log`` is what happened, from the
session's side: the truth a rating is checked against.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from controller.game import events as ev
from controller.game import legality
from controller.game.cards import VALUE
from controller.game.croupier import Croupier
from controller.game.effects import Record
from controller.game.hand import Hand, Spot
from controller.game.rules import Rules, rules_to_json
from controller.game.table import Table
from controller.profiles import load_rules
from controller.strategy.chart import basic_strategy
from controller.strategy.player import BenchShoe

#: a player's decision: (rules, spot, hand, up-card value) -> hit, stand, double, split or surrender
Decide = Callable[[Rules, Spot, Hand, int], str]


def basic(rules: Rules, spot: Spot, hand: Hand, up: int) -> str:
    """The bench's basic-strategy player (controller/strategy/player.py, BenchTable._decide)."""
    strategy = basic_strategy(rules)
    cards = hand.cards
    if len(cards) != 2:
        return strategy.decide(hand.total, hand.soft, False, False, False, False, up)
    if hand.split_aces and rules.split_aces_one_card:
        return "split" if legality.split_refusal(rules, spot, hand) is None else "stand"
    can_double = legality.double_refusal(rules, hand) is None
    pair = VALUE[cards[0]] == VALUE[cards[1]]
    can_split = pair and legality.split_refusal(rules, spot, hand) is None
    can_surrender = rules.surrender == "late" and len(spot.hands) == 1
    return strategy.decide(hand.total, hand.soft, pair, can_double, can_split, can_surrender, up)


def stands_on_stiffs(rules: Rules, spot: Spot, hand: Hand, up: int) -> str:
    """A common mistake: stands on hard 12-16 against 7 to ace ("not busting"; a pair is still split as basic
    says); basic otherwise."""
    pair = len(hand.cards) == 2 and VALUE[hand.cards[0]] == VALUE[hand.cards[1]]
    if not hand.soft and not pair and 12 <= hand.total <= 16 and up in (7, 8, 9, 10, 1):
        return "stand"
    return basic(rules, spot, hand, up)


def never_doubles(rules: Rules, spot: Spot, hand: Hand, up: int) -> str:
    """A common mistake: never doubles (hits where basic doubles); basic otherwise."""
    action = basic(rules, spot, hand, up)
    if action != "double":
        return action
    return basic_strategy(rules).decide(hand.total, hand.soft, False, False, False, False, up)


@dataclass(slots=True)
class Session:
    """One table, seeded; ``events`` is its published stream (and the card readers')."""

    profile: str = "ny-4620"
    seed: int = 1
    t0: float = 1_800_000_000.0
    rules: Rules = field(init=False)
    events: list[dict[str, Any]] = field(default_factory=list)
    now: float = field(init=False)
    table: Table = field(init=False)
    croupier: Croupier = field(init=False)
    #: new rules waiting for the next shoe (taken while it is shuffled, as a table takes a changed profile)
    pending_rules: Rules | None = None

    def __post_init__(self) -> None:
        self.rules = load_rules(self.profile)
        self.now = self.t0
        self.table = Table(self.rules)
        self.croupier = Croupier(self.table, BenchShoe(self.rules, random.Random(self.seed)), self._feed)
        self._feed(ev.TableOpened(now=self.t0))
        self.croupier.between_rounds()

    def _feed(self, event: ev.Event) -> list[Any]:
        effects = self.table.handle(event)
        for effect in effects:
            if isinstance(effect, Record):
                self.publish({"type": effect.type, **effect.data})
        if self.pending_rules is not None and self.table.phase == "shuffling":
            self._change_rules(self.pending_rules)
        return effects

    def change_rules(self, rules: Rules) -> None:
        """Play on under ``rules`` from the next shoe (the engine takes new rules only between shoes)."""
        self.pending_rules = rules

    def _change_rules(self, rules: Rules) -> None:
        """The engine's ``rules_changed``, published as the table's core gives it to the book: with ``rules``, the
        journaled input's (the public record names only the profile and its digest)."""
        self.pending_rules = None
        data = rules_to_json(rules)
        for effect in self.table.handle(ev.RulesChanged(rules=data)):
            if isinstance(effect, Record):
                body = {"type": effect.type, **effect.data}
                self.publish({**body, "rules": data} if effect.type == "rules_changed" else body)
        self.rules = rules

    def publish(self, body: dict[str, Any]) -> dict[str, Any]:
        self.now += 2.0
        event = {"seq": len(self.events) + 1, "ts": self.now, **body}
        self.events.append(event)
        return event

    def card_in(self, spot: int, player: str) -> dict[str, Any]:
        return self.publish({"type": "card_in", "spot": spot, "player": player})

    def card_out(self, spot: int, player: str) -> dict[str, Any]:
        return self.publish({"type": "card_out", "spot": spot, "player": player})

    def play_round(self, bets: dict[int, int], decide: Decide = basic, *, insure: Collection[int] = (),
                   after_bets: Callable[[], object] | None = None) -> dict[str, Any]:
        """One round: ``bets`` spot -> cents; ``insure`` spots take insurance when offered;
        ``after_bets`` runs once the wagers are locked (a card pulled mid-round). The round_settled event."""
        t, croupier = self.table, self.croupier
        croupier.between_rounds()
        for spot, cents in sorted(bets.items()):
            self._feed(ev.BetPlaced(spot=spot, amount=cents))
        self._feed(ev.NoMoreBets())
        if after_bets is not None:
            after_bets()
        insured = False
        while True:
            croupier.play()
            if t.phase == "settled":
                break
            if t.phase == "insurance":
                if not insured:
                    insured = True
                    for spot in sorted(insure):
                        if spot in t.spots and t.spots[spot].hands[0].total != 21:
                            self._feed(ev.Decision(spot=spot, action="insurance"))
                croupier.close_insurance()
                continue
            active = t.active
            assert active is not None
            spot = t.spots[active[0]]
            action = decide(self.rules, spot, spot.hands[active[1]], VALUE[t.dealer[0]])
            if action == "hit":
                croupier.hit(active[0])
            else:
                self._feed(ev.Decision(spot=active[0], action=action))  # type: ignore[arg-type]
        return next(e for e in reversed(self.events) if e["type"] == "round_settled")

    def close(self) -> dict[str, Any]:
        self._feed(ev.TableClosed(now=self.now + 2.0))
        return next(e for e in reversed(self.events) if e["type"] == "table_closed")
