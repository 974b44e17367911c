"""Fair simulated tables, to check that ``win_z`` means what it says (a test and ``benchmarks/control_limits.py``).

Each table seats some basic-strategy spots on the real engine (:class:`controller.strategy.player.BenchTable`, its
own seeded stream), plays some rounds and folds each settled round into a :class:`controller.analytics.hold.Tally`
exactly as the report and the live topic do, from a round dict of the shape :mod:`controller.records` rebuilds.
Over many such tables ``win_z`` should be standard normal: its variance 1, about 4.55 % beyond 2 SD and 0.27 %
beyond 3 SD. :func:`independent_z` is the formula before the covariance was counted, for comparison.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from controller.analytics.hold import Spread, Tally, theoretical_edge, win_variance, z_score
from controller.game.money import format_money
from controller.game.rules import Rules
from controller.strategy.chart import basic_strategy
from controller.strategy.player import BenchTable

__all__ = ["Table", "fair_tables", "independent_z", "new_z", "tail_counts"]


@dataclass(frozen=True, slots=True)
class Table:
    """One simulated table's spots and its rounds' sums."""

    spots: int
    tally: Tally


def fair_tables(rules: Rules, tables: int, rounds: int, spots: Sequence[int], seed: int) -> list[Table]:
    """``tables`` tables of ``rounds`` rounds each, table ``i`` seating ``spots[i % len(spots)]`` spots, seeded
    by ``seed`` (the same tables every time)."""
    strategy = basic_strategy(rules)
    out = []
    for i in range(tables):
        k = spots[i % len(spots)]
        bench = BenchTable(rules, random.Random(f"calibration:{seed}:{i}"), spots=k, strategy=strategy)
        engine = bench.table
        tally = Tally()
        for r in range(rounds):
            bench.play_round()
            tally.add({
                "started": float(r), "ended": r + 0.5,
                "spots": {str(s.number): {"wager": format_money(s.wager)} for s in engine.order},
                "totals": {"rounds": r + 1, "handle": format_money(engine.handle_cents),
                           "house_net": format_money(engine.house_net)},
            })
        out.append(Table(k, tally))
    return out


def new_z(t: Table, rules: Rules, spread_: Spread) -> float | None:
    """The table's ``win_z`` as the product computes it (:mod:`controller.analytics.hold`)."""
    tally = t.tally
    theoretical = round(tally.initial * theoretical_edge(rules))
    return z_score(tally.house_net, theoretical, win_variance(spread_, tally.squares, tally.pairs), tally.rounds)


def independent_z(t: Table, rules: Rules, spread_: Spread) -> float | None:
    """The table's ``win_z`` as if its hands were independent (sigma x sqrt(sum of w^2)): the formula before."""
    tally = t.tally
    theoretical = round(tally.initial * theoretical_edge(rules))
    sd = spread_.sigma * math.sqrt(tally.squares)
    return (tally.house_net - theoretical) / sd if sd else None


def tail_counts(zs: Sequence[float]) -> tuple[float, float, int, int]:
    """Mean and variance (about 0) of ``zs``, and how many lie beyond 2 and beyond 3 in absolute value."""
    n = len(zs)
    mean = sum(zs) / n
    variance = sum((z - mean) ** 2 for z in zs) / (n - 1)
    return mean, variance, sum(abs(z) > 2 for z in zs), sum(abs(z) > 3 for z in zs)
