"""Rounds per second of the round engine on one core: 6 decks, one spot, a fixed simple strategy.

Run: ``.venv/bin/python benchmarks/engine.py [--rounds N] [--profile NAME] [--narrate]``; it
names the engine it ran: ``compiled`` (mypyc, built by ``make setup``) or ``pure``
(``TABLECTL_PURE_ENGINE=1``, or no current build).
The strategy is deliberately simple (hit below 17, double 11, split aces and eights) so
the figure measures the engine, not a strategy lookup. The dealer's part is the croupier's
(:mod:`controller.game.croupier`, the loop every tool plays the engine with), from a shoe
shuffled outside the engine with a seeded ``random.Random``.
"""

from __future__ import annotations

import argparse
import random
import time

from controller.game import events as ev
from controller.game import legality
from controller.game.croupier import Croupier
from controller.game.table import Table
from controller.profiles import load_rules
from controller.strategy.player import BenchShoe


def play(rules_name: str, rounds: int, seed: int, narrate: bool) -> tuple[int, float, int]:
    rules = load_rules(rules_name, {"spots": 7})
    table = Table(rules, narrate=narrate)
    croupier = Croupier(table, BenchShoe(rules, random.Random(seed)))  # the bench's own seeded shoe
    handle = table.handle
    stand, double, split = ev.Decision(1, "stand"), ev.Decision(1, "double"), ev.Decision(1, "split")
    bet, no_more = ev.BetPlaced(1, rules.min_bet), ev.NoMoreBets()
    handle(ev.TableOpened(now=0.0))
    start = time.perf_counter()
    for _ in range(rounds):
        croupier.between_rounds()  # the shuffle at the cut card, and its burn
        handle(bet)
        handle(no_more)
        while True:
            croupier.play()  # the deal, the peek, the cards owed, the dealer's hand
            phase = table.phase
            if phase == "settled":
                break
            if phase == "insurance":
                croupier.close_insurance()
                continue
            spot, idx = table.active  # type: ignore[misc]
            hand = table.spots[spot].hands[idx]
            if len(hand.cards) == 2 and hand.cards[0][0] in "A8" and (
                    legality.split_refusal(rules, table.spots[spot], hand) is None):
                handle(split)
            elif hand.total == 11 and legality.double_refusal(rules, hand) is None:
                handle(double)
            elif hand.total < 17 and table.hit_refusal(spot) is None:
                croupier.hit(spot)
            else:
                handle(stand)
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
