"""The croupier: the one loop that plays the dealer and the shoe around the engine."""

from __future__ import annotations

import ast
import random
from collections import Counter
from pathlib import Path

import pytest

from controller.game import events as ev
from controller.game.croupier import Croupier, ListShoe
from controller.game.effects import AlarmRaised, Effect
from controller.game.errors import IllegalAction
from controller.game.rules import Rules
from controller.game.table import Table
from controller.profiles import load_rules
from controller.strategy.player import BenchTable

ROOT = Path(__file__).resolve().parents[2]


class StackedShoe:
    """Cards in order; a cut card after ``cut`` cards; shuffles counted."""

    def __init__(self, cards: list[str], cut: int = 10_000, count: int = 312) -> None:
        self.cards = list(cards)
        self.count = count
        self.pos = 0
        self.cut = cut
        self.shuffles = 0
        self.discard_shuffles: list[int] = []

    def draw(self, why: str) -> str:
        card = self.cards[self.pos]
        self.pos += 1
        return card

    def cut_card_next(self) -> bool:
        return self.pos == self.cut

    def empty(self) -> bool:
        return self.pos >= len(self.cards)

    def shuffle(self) -> ev.ShuffleDone:
        self.shuffles += 1
        return ev.ShuffleDone(count=self.count)

    def shuffle_discards(self, count: int) -> None:
        self.discard_shuffles.append(count)
        self.cards += ["5S", "6S", "7S", "8S", "9S"]


def opened(rules: Rules, shoe: StackedShoe) -> tuple[Table, Croupier]:
    table = Table(rules)
    croupier = Croupier(table, shoe)
    table.handle(ev.TableOpened(now=0.0))
    croupier.between_rounds()
    return table, croupier


def test_between_rounds_shuffles_and_burns_then_waits_for_bets() -> None:
    shoe = StackedShoe(["2C"])
    table, croupier = opened(load_rules("house-h17"), shoe)
    assert shoe.shuffles == 1 and table.burned == ["2C"] and table.phase == "betting"
    assert croupier.next_event() is None, "bets are the players' to make"


def test_play_deals_answers_the_peek_and_stops_for_the_player() -> None:
    rules = load_rules("house-h17")  # peeks under an ace or a ten
    shoe = StackedShoe(["2C", "9H", "TD", "7C", "6S", "8D"])
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    assert table.phase == "players" and table.dealer_blackjack is False, "the peek was answered: no blackjack"
    waiting = table.awaiting()
    assert (waiting.card, waiting.card_required, waiting.active) == ("hit", False, (1, 0)), "a hit is his choice"
    croupier.hit(1)  # 9 + 7 + 8 = 24
    assert table.spots[1].hands[0].cards == ["9H", "7C", "8D"] and table.spots[1].hands[0].status == "bust"
    assert table.phase == "settled"


def test_play_stops_at_the_settlement_and_leaves_the_next_shuffle_to_between_rounds() -> None:
    rules = load_rules("house-h17")
    shoe = StackedShoe(["2C", "9H", "TD", "TC", "7S", "3D", "4D"], cut=3)  # the cut card comes out in the deal
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    assert table.cut_card_reached
    table.handle(ev.Decision(1, "stand"))
    croupier.play()
    assert table.phase == "settled" and shoe.shuffles == 1, "play() never crosses into the next round"
    croupier.between_rounds()
    assert shoe.shuffles == 2 and table.phase == "betting"


def test_a_hit_the_rules_refuse_draws_nothing_and_names_the_rule() -> None:
    rules = load_rules("house-h17")
    shoe = StackedShoe(["2C", "TH", "6D", "TD", "7C", "5S"])
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    table.handle(ev.Decision(1, "stand"))
    croupier.play()  # the dealer's 16 draws the 5: 21
    assert table.phase == "settled" and table.dealer == ["6D", "7C", "5S"]
    drawn = shoe.pos
    with pytest.raises(IllegalAction, match="spot 1: hit refused: no hit in the settled phase") as refused:
        croupier.hit(1)
    assert refused.value.rule == "procedure" and shoe.pos == drawn


def test_a_doubled_hand_refuses_a_second_hit_and_says_why() -> None:
    rules = load_rules("house-h17")
    shoe = StackedShoe(["2C", "5H", "9D", "6D", "7C", "TS", "8S", "8H"])
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.BetPlaced(spot=2, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    table.handle(ev.Decision(1, "double"))
    croupier.play()  # the double's one card
    drawn = shoe.pos
    with pytest.raises(IllegalAction, match="spot 1: hit refused: not this spot's turn"):
        croupier.hit(1)
    assert shoe.pos == drawn, "a refused hit draws no card"


def test_the_shoe_running_dry_mid_round_shuffles_the_discards_nj_2_15_f() -> None:
    rules = load_rules("nj-shoe")
    # the burn and the deal: nothing left for a hit
    shoe = StackedShoe(["2C", "TH", "6D", "TD", "7C"], count=rules.cards_in_shoe)
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    croupier.hit(1)  # the shoe is empty: the discards are shuffled, one burnt, then the card
    assert shoe.discard_shuffles == [1]
    assert table.spots[1].hands[0].cards == ["TH", "TD", "6S"] and table.burned[-1] == "5S"


class Listed(ListShoe):
    """StackedShoe as a ListShoe: the compiled croupier asks it directly, not through the protocol."""

    def __init__(self, cards: list[str], cut: int = 10_000, count: int = 312) -> None:
        super().__init__(list(cards), cut)
        self.count = count
        self.shuffles = 0
        self.discard_shuffles: list[int] = []

    def shuffle(self) -> ev.ShuffleDone:
        self.shuffles += 1
        return ev.ShuffleDone(count=self.count)

    def shuffle_discards(self, count: int) -> None:
        self.discard_shuffles.append(count)
        self.cards += ["5S", "6S", "7S", "8S", "9S"]


@pytest.mark.parametrize(("profile", "cards", "cut", "rounds"), [
    ("house-h17", ["2C", "9H", "TD", "7C", "6S", "8D", "4H", "5C", "QS", "3D", "AH", "KC", "6D", "2H", "9S", "TC",
                   "5D", "8C", "JH", "4S", "7H", "3C", "KD", "6H", "2S", "9C", "QH", "5H"], 7, 3),  # the cut card
    ("nj-shoe", ["2C", "TH", "6D", "TD", "7C"], 10_000, 1),  # run dry mid-round: the discards shuffled
], ids=["cut-card", "shoe-empty"])
def test_a_list_shoe_is_asked_the_same_questions_as_any_shoe(profile: str, cards: list[str], cut: int,
                                                             rounds: int) -> None:
    """The croupier's direct path for a ListShoe feeds exactly what the protocol's feeds: the same events and the
    same table."""
    rules = load_rules(profile)
    played = []
    for shoe in (StackedShoe(cards, cut, rules.cards_in_shoe), Listed(cards, cut, rules.cards_in_shoe)):
        table = Table(rules)
        fed: list[ev.Event] = []

        def feed(event: ev.Event, table: Table = table, fed: list[ev.Event] = fed) -> list[Effect]:
            fed.append(event)
            return table.handle(event)

        croupier = Croupier(table, shoe, feed)  # type: ignore[arg-type]
        feed(ev.TableOpened(now=0.0))
        croupier.between_rounds()
        for _ in range(rounds):
            feed(ev.BetPlaced(spot=1, amount=1000))
            feed(ev.NoMoreBets())
            croupier.play()
            while table.phase == "players":
                if table.spots[1].hands[0].total < 17:
                    croupier.hit(1)
                else:
                    feed(ev.Decision(spot=1, action="stand"))
                croupier.play()
            croupier.between_rounds()
        played.append((fed, table.snapshot(), shoe.pos, shoe.shuffles, shoe.discard_shuffles))
    assert played[0] == played[1]
    events = {type(e) for e in played[0][0]}
    assert ev.CutCardReached in events if cut < len(cards) else ev.ShoeEmpty in events


def test_insurance_closes_at_the_first_other_action() -> None:
    rules = load_rules("house-h17")
    shoe = StackedShoe(["2C", "TH", "AD", "9D", "7C"])
    table, croupier = opened(rules, shoe)
    table.handle(ev.BetPlaced(spot=1, amount=1000))
    table.handle(ev.NoMoreBets())
    croupier.play()
    assert table.phase == "insurance"
    croupier.before_decision("insurance")
    assert table.phase == "insurance", "an insurance decision keeps the offer open"
    croupier.before_decision("stand")
    assert table.phase == "players" and table.dealer_blackjack is False, "closed, and the peek answered"


# The tools that play the engine (scenario runner, bench, simulated dealer, benchmarks, the invariants
# test) answer the peek, bring out the cut card and report an empty shoe through the croupier only:
# these inputs are built by the croupier, by the table PC's translation of real device events, and by
# tests that feed the engine a hand-picked sequence on purpose.
_DEALER_INPUTS = {"PeekResult", "CutCardReached", "ShoeEmpty"}
_ALLOWED = {
    "controller/game/croupier.py",
    "controller/service/device_inputs.py",  # the real shoe's peek reader and cut card
}


def test_no_tool_plays_the_dealer_but_the_croupier() -> None:
    offenders: list[str] = []
    for folder in ("controller", "benchmarks", "simulators"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in _ALLOWED:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in _DEALER_INPUTS):
                    offenders.append(f"{rel}:{node.lineno} builds {node.func.attr}")
    assert offenders == [], "play the dealer through controller.game.croupier: " + "; ".join(offenders)


@pytest.mark.parametrize("profile", ["house-h17", "european-6d", "nj-shoe", "house-shoe-surrender", "ny-4620"])
def test_a_required_card_is_taken_and_a_hit_is_required_only_where_the_hand_may_not_stand(profile: str) -> None:
    """``Table.card_required``, asked before every input the croupier feeds in 600 rounds of three spots: a card it
    requires is one the table calls for (``awaiting().card``) and takes (never a dead card); a hit it requires is
    owed (the hand may not stand: a split hand's second card, a double's card), and one it does not require is the
    player's choice (the hand may stand)."""
    rules = load_rules(profile)
    bench = BenchTable(rules, random.Random(7), spots=3)
    t = bench.table
    targets: Counter[str | None] = Counter()

    def checked(event: ev.Event) -> list[Effect]:
        required = t.card_required
        target = t.awaiting().card
        assert not required or target is not None, (t.phase, event)
        if target == "hit":
            assert t.active is not None
            may_stand = any(d.action == "stand" and d.spot == t.active[0] for d in t.legal_actions())
            assert required != may_stand, (required, may_stand, event)
        targets[target] += 1
        effects = t.handle(event)
        if required and isinstance(event, ev.CardDrawn):
            assert not [e for e in effects if isinstance(e, AlarmRaised)], (target, event, effects)
        return effects

    bench.croupier.feed = checked
    for _ in range(600):
        bench.play_round()
    assert {"burn", "deal", "hit", "dealer", None} <= set(targets), targets
