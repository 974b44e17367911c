"""What each common mistake adds to a player's theoretical loss, as the ratings measure it.

    nice -n 19 python benchmarks/ratings_mistakes.py [--rounds 20000] [--seed 2027] [--profile house-h17] [--json]

One carded player per mistake type plays ``--rounds`` rounds at one spot, one unit a round, on the real engine
(tests/ratings/session.py: the croupier deals a seeded shoe, the engine settles); the table's published
events go through :class:`controller.ratings.RatingBook`. Printed for each player: rounds, the departures the
rating found, ``skill_theoretical_loss - theoretical_loss`` per 100 hands in units of the wager (= the added
house edge, in percent of initial wagers) beside the published figure for that mistake (:data:`PUBLISHED`, each
with its source), and the time the book took per event. Figures are printed, never asserted (the assertions are
tests/ratings/).

The players: basic strategy (the control: no departure, skill theo = theo); stands on hard 12-16 against 7-A
(half of "never bust"); never doubles (hits where basic doubles); takes insurance every time it is offered.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.game.money import parse_money
from controller.ratings import RatingBook
from tests.ratings.session import Session, basic, never_doubles, stands_on_stiffs

#: the published extra cost of each mistake, units per 100 hands (= percent of initial wagers), and its source
PUBLISHED: dict[str, tuple[float | None, str]] = {
    "basic strategy": (0.0, "basic strategy is the zero of the scale"),
    "stands on 12-16 v 7-A": (4.0, "at most: 'never bust' (every hard 12+ stood) 'up to nearly 4%', casinogametip.com, "
                                   "Never Bust Blackjack; these hands are most of it"),
    "never doubles": (1.6, "doubling trims 1.6 percent from the edge: A. Krigman, 'Winning hands!', Gaming Today, "
                           "2002-04-23"),
    "always insures": (0.28, "insuring every ace costs 0.28 percent with six decks: A. Krigman, 'Are There Conditions "
                             "Under Which Insurance Is a Good Bet?', casinocity.com"),
}

PLAYERS = {
    "basic strategy": (basic, False),
    "stands on 12-16 v 7-A": (stands_on_stiffs, False),
    "never doubles": (never_doubles, False),
    "always insures": (basic, True),
}


def measure(profile: str, rounds: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for n, (name, (decide, insures)) in enumerate(PLAYERS.items()):
        session = Session(profile=profile, seed=seed + n)
        unit = session.rules.min_bet * 2
        session.card_in(1, f"{1000 + n}")
        for _ in range(rounds):
            session.play_round({1: unit}, decide, insure={1} if insures else ())
        session.card_out(1, f"{1000 + n}")
        session.close()
        book = RatingBook(session.rules, table_id="bench")
        start = time.perf_counter()
        closed = []
        for event in session.events:
            closed += book.handle(event)
        took = time.perf_counter() - start
        (rating,) = closed
        shown = rating.to_json()
        extra = rating.skill_cost / rating.initial_wagers
        out.append({
            "player": name, "rounds": shown["rounds"], "departures": len(rating.departures),
            "theoretical_loss": shown["theoretical_loss"], "skill_theoretical_loss": shown["skill_theoretical_loss"],
            "extra_per_100_hands_units": round(100 * extra, 4), "added_edge_pct": round(100 * extra, 4),
            "published_per_100_hands_units": PUBLISHED[name][0], "published_source": PUBLISHED[name][1],
            "house_net_units_per_100": round(100 * parse_money(shown["house_net"]) / rating.initial_wagers, 3),
            "events": len(session.events), "us_per_event": round(1e6 * took / len(session.events), 2),
        })
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20000)
    p.add_argument("--seed", type=int, default=2027)
    p.add_argument("--profile", default="house-h17")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    rows = measure(args.profile, args.rounds, args.seed)
    if args.json:
        print(json.dumps({"profile": args.profile, "rows": rows}, indent=1))
        return
    print(f"{args.profile}, {args.rounds} rounds per player; extra = skill theo - theo, in units of the wager per "
          "100 hands (= added edge, %)")
    for r in rows:
        print(f"  {r['player']:24} departures {r['departures']:6}  extra per 100 hands {r['added_edge_pct']:7.3f}"
              f"  published {r['published_per_100_hands_units']:5.2f}"
              f"  (theo {r['theoretical_loss']:>8}, skill theo {r['skill_theoretical_loss']:>8})"
              f"  actual house net {r['house_net_units_per_100']:7.2f} %  book {r['us_per_event']:6.1f} us/event")
    print("published figures:")
    for name, (_, source) in PUBLISHED.items():
        print(f"  {name}: {source}")


if __name__ == "__main__":
    main()
