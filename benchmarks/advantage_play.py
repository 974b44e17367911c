"""The advantage-play signals' rates, measured on simulated shoes dealt by the real engine.

    nice -n 19 python benchmarks/advantage_play.py [--runs 300] [--shoes 5] [--seed 2026] [--profile house-h17]
                                                   [--min-bets N] [--min-spread X] [--min-z Z] [--window W] [--json]
    nice -n 19 python benchmarks/advantage_play.py --demo-hours 10 [--seed 1] [thresholds as above]

``--demo-hours H`` instead plays H hours of the default demo's table (5,450 rounds each, its crowd only, no
counter; seeds ``--seed`` on) and reads each as ``tablectl report`` does: the flags an honest hour raises.

Each run plays two tables of their own (seeded by ``--seed`` and the run): the real engine
(:class:`controller.game.table.Table`) dealt by the simulated dealer of ``tablectl demo``
(:class:`controller.sim.dealer.SimulatedDealer`), with regulars who keep their spot every round
(:mod:`controller.strategy.counter`) among the demo's crowd (one to five players a round on the free spots,
each betting 1 to 20 table minimums at random):

* the counter's table: **the counter** at spot 1: Hi-Lo, ``clamp(round(TC) - 1, 1, 12)`` table minimums,
  the Illustrious 18 (what ``tablectl demo --counter-spot 1`` seats);
* the honest table: **a flat bettor** at spot 3 (two table minimums every round), **a random bettor** at
  spot 5 (1 to 12 table minimums, uniformly at random each round, unrelated to the count: as wide a spread
  as the counter's) and **a never-bust bettor** at spot 7 (one minimum, stands on every hard 12-16).

Each table's public records go through the signals exactly as ``tablectl report`` reads them from a journal
(:func:`controller.analytics.advantage.shoes`, then :class:`controller.analytics.advantage.ShoeCounter` with
each spot's window).
Printed for each regular: the share of runs in which its spot was flagged at the end of one of the first
``k`` shoes (k = 1, 3 and ``--shoes``) and the share of its spot-shoes flagged; for the counter, the share of
runs in which he had raised his bet at all by then (no bet-based rule can flag him before); and the crowd's
spot-shoes flagged. The rule's thresholds default to :data:`controller.analytics.advantage.RULE`. Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from controller.analytics.advantage import RULE, FlagRule, ShoeCounter, SpotSignal, shoes
from controller.game.cards import hand_total
from controller.game.rules import Rules
from controller.profiles import ProfileError, load_rules
from controller.sim.dealer import SimulatedDealer, public_records
from controller.strategy.chart import basic_strategy
from controller.strategy.counter import CountingPlayer, CountView, FlatBettor, RandomBettor, Regular

#: who sits where: the counter alone among the crowd at one table (as ``tablectl demo --counter-spot 1``),
#: the three honest regulars among the crowd at another
TABLES: dict[str, dict[str, int]] = {"counter": {"counter": 1}, "honest": {"flat": 3, "random": 5, "never-bust": 7}}
KINDS = [kind for seats in TABLES.values() for kind in seats]


class NeverBust(FlatBettor):
    """A flat bettor who never risks busting: stands on every hard 12 to 16 where basic strategy hits. He makes
    the stand-side index plays (16 v T, 15 v T, 12 v 2...) at every count, as many honest players do."""

    kind = "never-bust"

    def play(self, cards: Sequence[str], up: int, basic: str, legal: set[str], count: CountView) -> str | None:
        total, soft = hand_total(list(cards))
        return "stand" if basic == "hit" and not soft and 12 <= total <= 16 else basic


def _regulars(table: str, seed: int) -> tuple[Regular, ...]:
    seats = TABLES[table]
    if table == "counter":
        return (CountingPlayer(seats["counter"]),)
    return (FlatBettor(seats["flat"]), RandomBettor(seats["random"], seed), NeverBust(seats["never-bust"], units=1))


def records(rules: Rules, seed: int, regulars: tuple[Regular, ...]) -> Iterator[dict[str, Any]]:
    """The public records of a simulated table, endlessly (the caller stops reading)."""
    return public_records(SimulatedDealer(rules, seed=seed, table_id="bench", regulars=regulars))


def run_table(rules: Rules, seed: int, regulars: tuple[Regular, ...], n_shoes: int,
              rule: FlagRule) -> list[list[SpotSignal]]:
    """The signals at the end of each of the first ``n_shoes`` shoes of one simulated table."""
    strategy = basic_strategy(rules)
    out: list[list[SpotSignal]] = []
    for shoe in islice(shoes(records(rules, seed, regulars)), n_shoes):
        counter = ShoeCounter(rules, strategy)
        for r in shoe.rounds:
            counter.add(r)
        out.append(counter.signals(shoe.shoe, rule, [s for signals in out for s in signals]))
    return out


def _quantiles(xs: list[float]) -> dict[str, float | None]:
    xs = sorted(xs)
    if not xs:
        return {"median": None, "p99": None, "max": None}
    return {"median": round(xs[len(xs) // 2], 2), "p99": round(xs[min(len(xs) - 1, int(0.99 * len(xs)))], 2),
            "max": round(xs[-1], 2)}


def measure(rules: Rules, runs: int, n_shoes: int, seed: int, rule: FlagRule) -> dict[str, Any]:
    """Play ``runs`` x both tables for ``n_shoes`` shoes each; the rates (see the module docstring)."""
    flagged_by = {kind: [0] * n_shoes for kind in KINDS}  # runs flagged at the end of shoe k+1 or before
    raised_by = [0] * n_shoes  # runs in which the counter had raised his bet by the end of shoe k+1
    shoe_flags = dict.fromkeys(KINDS, 0)
    bets = dict.fromkeys(KINDS, 0)
    zs: dict[str, list[float]] = {kind: [] for kind in KINDS}
    crowd = crowd_flags = 0
    index = {"due": 0, "taken": 0, "against": 0}
    started = time.perf_counter()
    for run in range(runs):
        for table, seats in TABLES.items():
            first: dict[str, int | None] = dict.fromkeys(seats)
            raised: int | None = None
            table_seed = seed * 100_000 + run
            for k, signals in enumerate(run_table(rules, table_seed, _regulars(table, table_seed), n_shoes, rule)):
                by_spot = {s.spot: s for s in signals}
                for kind, spot in seats.items():
                    s = by_spot.get(spot)
                    if s is None:
                        continue
                    bets[kind] += s.bets
                    shoe_flags[kind] += s.flagged
                    if s.z is not None:
                        zs[kind].append(s.z)
                    if s.flagged and first[kind] is None:
                        first[kind] = k
                    if kind == "counter":
                        raised = k if raised is None and s.max_bet > s.min_bet else raised
                        for key, n in (("due", s.index_due), ("taken", s.index_taken), ("against", s.index_against)):
                            index[key] += n
                for s in signals:
                    if s.spot not in seats.values():
                        crowd += 1
                        crowd_flags += s.flagged
            for kind, k0 in first.items():
                for k in range(k0 if k0 is not None else n_shoes, n_shoes):
                    flagged_by[kind][k] += 1
            for k in range(raised if raised is not None else n_shoes, n_shoes):
                raised_by[k] += 1
    spot_shoes = runs * n_shoes
    return {
        "profile": rules.name, "runs": runs, "shoes": n_shoes, "seed": seed,
        "rule": {"min_bets": rule.min_bets, "min_spread": rule.min_spread, "min_z": rule.min_z, "window": rule.window,
                 "min_z_alone": rule.min_z_alone},
        "flagged_within": {kind: [n / runs for n in flagged_by[kind]] for kind in KINDS},
        "counter_raised_within": [n / runs for n in raised_by],
        "spot_shoes_flagged": {kind: shoe_flags[kind] / spot_shoes for kind in KINDS},
        "crowd_spot_shoes": crowd, "crowd_spot_shoes_flagged": crowd_flags,
        "bets_per_shoe": {kind: round(bets[kind] / spot_shoes, 1) for kind in KINDS},
        "z": {kind: _quantiles(zs[kind]) for kind in KINDS},
        "counter_index_plays": index, "elapsed_s": round(time.perf_counter() - started, 1),
    }


#: rounds in an hour of the default demo (issue 28: 5,450 rounds, 1,904 spot-shoes judged, with no counter)
DEMO_HOUR_ROUNDS = 5_450


def demo_hours(rules: Rules, hours: int, seed: int, rule: FlagRule) -> dict[str, Any]:
    """``hours`` hours of the default demo's table (its crowd only, no counter; seeds ``seed``, ``seed`` + 1...),
    each read as ``tablectl report`` reads its journal (:func:`controller.analytics.shift.read_shift`): the spots
    flagged, which no honest hour should show."""
    from controller.analytics.shift import read_shift

    out = []
    started = time.perf_counter()
    for h in range(hours):
        settled = 0

        def hour(table_seed: int) -> Iterator[dict[str, Any]]:
            nonlocal settled
            for body in public_records(SimulatedDealer(rules, seed=table_seed, table_id="t01")):
                yield body
                if body["type"] == "round_settled":
                    settled += 1
                    if settled == DEMO_HOUR_ROUNDS:
                        return

        shift = read_shift(hour(seed + h), rules, rule=rule)
        out.append({"seed": seed + h, "spot_shoes": shift.spot_shoes, "flagged": len(shift.flagged),
                    "z": [round(f.z, 2) for f in shift.flagged if f.z is not None]})
    return {"profile": rules.name, "hours": hours, "rounds_per_hour": DEMO_HOUR_ROUNDS, "seed": seed,
            "rule": {"min_bets": rule.min_bets, "min_spread": rule.min_spread, "min_z": rule.min_z,
                     "window": rule.window, "min_z_alone": rule.min_z_alone},
            "spot_shoes": sum(h["spot_shoes"] for h in out), "flagged": sum(h["flagged"] for h in out),
            "hours_flagged": sum(1 for h in out if h["flagged"]), "each": out,
            "elapsed_s": round(time.perf_counter() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=300, help="simulated tables (default 300)")
    p.add_argument("--shoes", type=int, default=5, help="shoes per table: 'within K shoes' (default 5)")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--profile", default="house-h17")
    p.add_argument("--min-bets", type=int, default=RULE.min_bets)
    p.add_argument("--min-spread", type=float, default=RULE.min_spread)
    p.add_argument("--min-z", type=float, default=RULE.min_z)
    p.add_argument("--window", type=int, default=RULE.window, help="shoes a spot is judged over")
    p.add_argument("--min-z-alone", type=float, default=RULE.min_z_alone,
                   help="z that flags on the bets alone, without index plays to back them")
    p.add_argument("--demo-hours", type=int, default=0, metavar="H",
                   help="instead: H hours of the default demo's table (its crowd, no counter), the flags raised")
    p.add_argument("--json", action="store_true", help="one JSON object")
    args = p.parse_args(argv)
    if args.runs < 1 or args.shoes < 1:
        print("advantage_play: --runs and --shoes: at least 1", file=sys.stderr)
        return 2
    try:
        rules = load_rules(args.profile)
    except ProfileError as e:
        print(f"advantage_play: {e}", file=sys.stderr)
        return 2
    rule = FlagRule(args.min_bets, args.min_spread, args.min_z, args.window, args.min_z_alone)
    if args.demo_hours > 0:
        hours = demo_hours(rules, args.demo_hours, args.seed, rule)
        if args.json:
            print(json.dumps(hours))
            return 0
        print(f"{rules.name}: {args.demo_hours} hours of the default demo ({DEMO_HOUR_ROUNDS} rounds each, seeds "
              f"{args.seed}..{args.seed + args.demo_hours - 1}), no counter; flag over a window of {rule.window} "
              f"shoes: at least {rule.min_bets} bets, spread >= {rule.min_spread:g}, z >= {rule.min_z:g} with index "
              f"plays, {rule.min_z_alone:g} without")
        for h in hours["each"]:
            print(f"  seed {h['seed']}: {h['flagged']} flagged of {h['spot_shoes']} spot-shoes {h['z'] or ''}")
        print(f"  {hours['flagged']} flagged of {hours['spot_shoes']} spot-shoes; {hours['hours_flagged']} of "
              f"{args.demo_hours} hours with a flag; {hours['elapsed_s']} s")
        return 0
    result = measure(rules, args.runs, args.shoes, args.seed, rule)
    if args.json:
        print(json.dumps(result))
        return 0
    k = args.shoes
    marks = sorted({1, min(3, k), k})

    def rates(values: list[float]) -> str:
        return ", ".join(f"{n} shoe{'s' if n > 1 else ''} {values[n - 1]:7.2%}" for n in marks)

    print(f"{rules.name}: {args.runs} runs x {k} shoes a table, seed {args.seed}; flag over a window of {rule.window} "
          f"shoes: at least {rule.min_bets} bets, spread >= {rule.min_spread:g}, z >= {rule.min_z:g} with index plays, "
          f"{rule.min_z_alone:g} without")
    for kind in KINDS:
        print(f"  {kind:>10}: flagged within {rates(result['flagged_within'][kind])}; spot-shoes flagged "
              f"{result['spot_shoes_flagged'][kind]:7.2%}; {result['bets_per_shoe'][kind]} bets a shoe; "
              f"z {result['z'][kind]}")
    print(f"  the counter had raised his bet within {rates(result['counter_raised_within'])} (no bet-based rule can "
          "flag him before)")
    print(f"  the crowd (1 to 20 minimums at random): {result['crowd_spot_shoes_flagged']} of "
          f"{result['crowd_spot_shoes']} spot-shoes flagged")
    print(f"  the counter's index plays: {result['counter_index_plays']}; {result['elapsed_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
