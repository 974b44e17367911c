"""Do fair tables land within their control limits as often as the normal says? ``win_z`` before and after issue 38.

    nice -n 19 python benchmarks/control_limits.py [--tables 1000] [--rounds 30] [--spots 1,3,7] [--seed 38]
                                                   [--profile house-h17]
    nice -n 19 python benchmarks/control_limits.py --by-rounds 1,3,5,10,20,30 [--tables 4000] [--spots 1,7]
    nice -n 19 python benchmarks/control_limits.py --demo [--tables 200] [--rounds 14]

Each table seats the same number of basic-strategy spots, one wager each, plays ``--rounds`` rounds on the real
engine (its own seeded shoe: :func:`controller.analytics.calibration.fair_tables`) and is judged as the report
judges a table. For each number of spots, over ``--tables`` tables: the variance of ``win_z`` (1 for the standard
normal, with its standard error) and how many tables lie beyond 2 and 3 SD (4.55 % and 0.27 % of them for the
normal), with today's formula (each round's variance with its hands' covariance) and with the formula before (the
hands as if independent: ``sigma x sqrt(sum of w^2)``).

``--by-rounds`` instead prints, for the formula of today without its minimum sample, the share of fair tables
beyond 2 and 3 SD after each number of rounds, both tails and each alone (house ahead: ``win_z > 2``): where
the normal approximation's tails hold, the minimum sample of docs/analytics.md.

``--demo`` instead deals each table as ``tablectl demo`` does (:class:`controller.sim.dealer.SimulatedDealer`: its
crowd of one to five players a round on the free spots, each betting 1 to 20 minimums at random, a slip now and
then, insurance at random) and reads its public records as ``tablectl report`` reads a journal
(:func:`controller.analytics.shift.read_shift`): the floor of issue 38's acceptance run (about 14 rounds a table),
without the cluster. The crowd is not quite basic strategy (its slips give the house a little more), so the mean
may sit a little above 0. Figures are printed, never asserted (``tests/analytics/test_control_limits.py`` asserts
them).
"""

from __future__ import annotations

import argparse
import math
import time

from controller.analytics.calibration import Table, fair_tables, independent_z, new_z, tail_counts
from controller.analytics.hold import Spread, spread, theoretical_edge, win_variance
from controller.analytics.shift import read_shift
from controller.game.rules import Rules
from controller.profiles import load_rules
from controller.sim.dealer import SimulatedDealer, public_records


def _line(label: str, zs: list[float]) -> str:
    n = len(zs)
    mean, variance, beyond2, beyond3 = tail_counts(zs)
    se = math.sqrt(2 / (n - 1))
    return (f"  {label:<26} var(win_z) {variance:5.2f} +- {se:.2f}   mean {mean:+.3f}   beyond 2 SD {beyond2:4d} "
            f"({100 * beyond2 / n:4.1f} %)   beyond 3 SD {beyond3:4d} ({100 * beyond3 / n:4.2f} %)")


def _raw_z(t: Table, rules: Rules, s: Spread) -> float:
    """Today's z without the minimum sample (for --by-rounds)."""
    tally = t.tally
    return (tally.house_net - round(tally.initial * theoretical_edge(rules))) / math.sqrt(
        win_variance(s, tally.squares, tally.pairs))


def _demo(rules: Rules, tables: int, rounds: int, seed: int, s: Spread) -> None:
    new: list[float] = []
    before: list[float] = []
    hands = 0
    start = time.process_time()
    for i in range(tables):
        records = []
        settled = 0
        for n, body in enumerate(public_records(SimulatedDealer(rules, seed=seed * 100_000 + i, table_id="t"))):
            body["ts"] = float(n)
            records.append(body)
            settled += body["type"] == "round_settled"
            if settled == rounds:
                break
        shift = read_shift(iter(records), rules)
        f = shift.figures
        hands += f.hands
        if f.win_z is not None:
            new.append(f.win_z)
        before.append((f.house_net - f.theoretical_win) / (s.sigma * math.sqrt(shift.squares)))
    print(f"the demo's crowd, {tables} tables x {rounds} rounds, {hands / tables / rounds:.1f} hands a round "
          f"({time.process_time() - start:.1f} s CPU):")
    print(_line("today (with covariance)", new) if new else f"  today: every table under {rounds} rounds is too few")
    print(_line("before (hands independent)", before))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--spots", default="1,3,7", help="the numbers of spots seated, comma-separated")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--profile", default="house-h17")
    ap.add_argument("--by-rounds", help="comma-separated numbers of rounds: the tails' shares after each")
    ap.add_argument("--demo", action="store_true", help="tables dealt to the demo's crowd, read as the report reads")
    args = ap.parse_args()
    rules = load_rules(args.profile)
    s = spread(rules)
    print(f"{args.profile}: sigma {s.sigma:.4f}, covariance {s.covariance:.4f} ({s.source})")
    print(f"the normal: var(win_z) 1, beyond 2 SD {4.55 * args.tables / 100:.1f} of {args.tables} tables, "
          f"beyond 3 SD {0.27 * args.tables / 100:.1f}")
    if args.demo:
        _demo(rules, args.tables, args.rounds, args.seed, s)
        return
    for k in (int(x) for x in args.spots.split(",")):
        if args.by_rounds:
            for n in (int(x) for x in args.by_rounds.split(",")):
                tables = fair_tables(rules, args.tables, n, [k], seed=args.seed * 1000 + n)
                zs = [_raw_z(t, rules, s) for t in tables]
                both2, both3 = sum(abs(z) > 2 for z in zs), sum(abs(z) > 3 for z in zs)
                up2, up3 = sum(z > 2 for z in zs), sum(z > 3 for z in zs)
                pct = 100 / len(zs)
                print(f"{k} spot(s), {n:3d} rounds: beyond 2 SD {both2 * pct:5.2f} % (house ahead {up2 * pct:4.2f}, "
                      f"behind {(both2 - up2) * pct:4.2f}; normal 4.55: 2.28 each)   beyond 3 SD {both3 * pct:4.2f} % "
                      f"(ahead {up3 * pct:4.2f}, behind {(both3 - up3) * pct:4.2f}; normal 0.27: 0.13 each)",
                      flush=True)
            continue
        start = time.process_time()
        tables = fair_tables(rules, args.tables, args.rounds, [k], seed=args.seed)
        cpu = time.process_time() - start
        print(f"{k} spot(s) seated, {args.tables} tables x {args.rounds} rounds ({cpu:.1f} s CPU):")
        print(_line("today (with covariance)", [z for t in tables if (z := new_z(t, rules, s)) is not None]))
        print(_line("before (hands independent)", [z for t in tables if (z := independent_z(t, rules, s)) is not None]),
              flush=True)


if __name__ == "__main__":
    main()
