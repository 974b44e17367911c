"""Rounds per second of the round engine on one core: 6 decks, one spot, a fixed simple strategy.

Run: ``.venv/bin/python benchmarks/engine.py [--rounds N] [--profile NAME] [--narrate]``; it
names the engine it ran: ``compiled`` (mypyc, built by ``make setup``) or ``pure``
(``TABLECTL_PURE_ENGINE=1``, or no current build).
The strategy is deliberately simple (hit below 17, double 11, split aces and eights) so
the figure measures the engine, not a strategy lookup. The shoe is shuffled outside the
engine with a seeded ``random.Random``, as the bench and the simulators do.
"""

from __future__ import annotations

import argparse
import random
import time

from controller.game import events as ev
from controller.game.cards import is_natural, shoe_of
from controller.game.effects import RequestPeek
from controller.game.table import Table
from controller.profiles import load_rules


def play(rules_name: str, rounds: int, seed: int, narrate: bool) -> tuple[int, float, int]:
    rules = load_rules(rules_name, {"spots": 7})
    table = Table(rules, narrate=narrate)
    rng = random.Random(seed)
    cards = shoe_of(rules.decks)
    cut = rules.cut_card_index
    handle = table.handle
    card_drawn, stand, double, split = ev.CardDrawn, ev.Decision(1, "stand"), ev.Decision(1, "double"), ev.Decision(
        1, "split")
    bet, no_more = ev.BetPlaced(1, rules.min_bet), ev.NoMoreBets()
    pos = 0

    def shuffle() -> None:
        nonlocal pos
        rng.shuffle(cards)
        pos = 0
        handle(ev.ShuffleDone(count=len(cards)))

    def act(event: ev.Event) -> None:
        for eff in handle(event):
            if type(eff) is RequestPeek:  # the peek reader answers from the hole card
                d = table.dealer
                handle(ev.PeekResult(blackjack=is_natural(d)))

    def draw() -> None:
        nonlocal pos
        card = cards[pos]
        pos += 1
        act(card_drawn(card))
        if pos == cut:
            handle(ev.CutCardReached())

    handle(ev.TableOpened(now=0.0))
    shuffle()
    start = time.perf_counter()
    for _ in range(rounds):
        if table.shuffle_due:
            shuffle()
        while table.card_required:
            draw()
        handle(bet)
        handle(no_more)
        while True:
            while table.card_required:
                draw()
            phase = table.phase
            if phase == "settled":
                break
            if phase == "insurance":
                act(ev.InsuranceClosed())
                continue
            spot, idx = table.active  # type: ignore[misc]
            hand = table.spots[spot].hands[idx]
            if len(hand.cards) == 2 and hand.cards[0][0] == hand.cards[1][0] and hand.cards[0][0] in "A8" and (
                    len(table.spots[spot].hands) < 4):
                act(split)
            elif len(hand.cards) == 2 and hand.total == 11 and not hand.from_split:
                act(double)
            elif hand.total < 17 and table.wants_card:
                draw()
            else:
                act(stand)
    elapsed = time.perf_counter() - start
    return rounds, elapsed, table.house_net


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=200_000)
    ap.add_argument("--profile", default="house-h17")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--narrate", action="store_true", help="build public records too (the table service's mode)")
    a = ap.parse_args()
    rounds, elapsed, net = play(a.profile, a.rounds, a.seed, a.narrate)
    import controller.game.table as engine

    kind = "compiled" if engine.__file__ and engine.__file__.endswith(".so") else "pure"
    print(f"engine={kind} profile={a.profile} decks=6 spots=1 narrate={a.narrate} rounds={rounds} "
          f"seconds={elapsed:.2f} rounds_per_s={rounds / elapsed:,.0f} house_net_cents={net}")


if __name__ == "__main__":
    main()
