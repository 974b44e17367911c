"""Bench throughput: rounds per second on the real engine, one worker and all workers.

    .venv/bin/python benchmarks/bench.py [--rounds N] [--repeat R] [--workers W] [--profile NAME]
                                         [--profile-hot]

Rules: 6 decks, dealer stands on soft 17, peek, DAS, one spot, basic strategy (the issue's
reference game), or ``--profile NAME``. Three figures, each the best of ``--repeat`` runs taken in
turn (this machine's cores change speed with the other jobs on it and on its host):

* ``bench.run`` with one worker (``--rounds`` rounds) and with W workers (W times as many);
* the machine's ceiling: W independent processes (fresh interpreters, no communication) each
  playing ``--rounds`` rounds at once, as total rounds over the time until the last one ends (the
  sum of each one's own rate is printed too: it counts a process that ended early as still
  playing, so it overstates what the machine does).

Then every shipped profile with one worker, the ``decide()`` rate, and with ``--profile-hot`` a
cProfile of one worker's hot loop (functions by own time, with their share). Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing as mp
import os
import pstats
import random
import time
from typing import Any

import controller.game.table as engine
from controller import bench
from controller.game.rules import Rules
from controller.profiles import available_profiles, load_rules
from controller.strategy.chart import basic_strategy
from controller.strategy.player import BenchTable


def rate(rules: Rules, rounds: int, workers: int) -> float:
    stats, _ = bench.run(rules, rounds, seed=1, workers=workers)
    return stats.rounds / stats.elapsed


def _independent(rules: Rules, rounds: int, seed: int, barrier: Any, queue: Any) -> None:
    strategy = basic_strategy(rules)  # before the common start, as bench.run does
    barrier.wait()
    stats, _ = bench.run_inline(rules, rounds, seed, 1, strategy=strategy)
    queue.put((stats.rounds, stats.elapsed))


def ceiling(rules: Rules, rounds: int, procs: int) -> tuple[float, float]:
    """``procs`` independent processes playing ``rounds`` rounds each at once: (total rounds over
    the time until the last ends, sum of each process's own rate)."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(procs + 1)
    queue = ctx.Queue()
    ps = [ctx.Process(target=_independent, args=(rules, rounds, 100 + k, barrier, queue)) for k in range(procs)]
    for p in ps:
        p.start()
    barrier.wait()
    start = time.perf_counter()
    results: list[tuple[int, float]] = [queue.get() for _ in ps]
    wall = time.perf_counter() - start
    for p in ps:
        p.join()
    return sum(r for r, _ in results) / wall, sum(r / e for r, e in results)


def hot_profile(rules: Rules, rounds: int) -> None:
    table = BenchTable(rules, random.Random(1))
    table.play(2000)
    prof = cProfile.Profile()
    prof.enable()
    table.play(rounds)
    prof.disable()
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in raw.values())
    print(f"one worker's hot loop under cProfile ({rounds:,} rounds, {total:.2f} s of own time):")
    print(f"  {'own %':>6} {'cum %':>6} {'calls':>10}  function")
    for (path, line, func), (_, calls, own, cum, _) in sorted(raw.items(), key=lambda kv: -kv[1][2])[:12]:
        where = func if path == "~" else f"{os.path.basename(path)}:{line}({func})"
        print(f"  {100 * own / total:6.1f} {100 * cum / total:6.1f} {calls:10,}  {where}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200_000, help="rounds per worker (default 200,000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each figure, the best is kept (default 3)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="workers (default: the cores)")
    ap.add_argument("--profile", metavar="NAME", help="rules of a profile instead of the reference game")
    ap.add_argument("--profile-hot", action="store_true", help="cProfile one worker's hot loop")
    args = ap.parse_args()
    w = args.workers
    if args.profile:
        ref = load_rules(args.profile)
        desc = f"profile {ref.name}"
    else:
        ref = Rules(name="6D S17 DAS peek, 1 spot", decks=6)
        desc = f"{ref.name} (decks=6, S17, peek, DAS, resplit to 4, 3:2)"
    kind = "compiled" if (engine.__file__ or "").endswith(".so") else "pure Python"
    print(f"rules: {desc}, basic strategy, real engine ({kind}), {os.cpu_count()} cores")
    basic_strategy(ref)  # chart built before timing
    one = many = ceil = ceil_sum = 0.0
    for _ in range(args.repeat):
        one = max(one, rate(ref, args.rounds, 1))
        many = max(many, rate(ref, args.rounds * w, w))
        c, s = ceiling(ref, args.rounds, w)
        ceil, ceil_sum = max(ceil, c), max(ceil_sum, s)
    print(f"best of {args.repeat}, {args.rounds:,} rounds per worker:")
    print(f"1 worker : {one:10,.0f} rounds/s")
    print(f"{w} workers: {many:10,.0f} rounds/s  (scaling {many / one:.2f}x on {os.cpu_count()} cores)")
    print(
        f"{w} independent processes at once: {ceil:10,.0f} rounds/s (scaling {ceil / one:.2f}x; "
        f"sum of their own rates {ceil_sum:,.0f}): the bench reaches {100 * many / ceil:.0f}% of it"
    )
    strat = basic_strategy(ref)
    n = 1_000_000
    t = time.perf_counter()
    d = strat.decide
    for _ in range(n):
        d(16, False, False, True, False, False, 10)
    print(f"decide() : {n / (time.perf_counter() - t):10,.0f} calls/s")
    for name in available_profiles():
        rules = load_rules(name)
        basic_strategy(rules)
        print(f"  {name:22} 1 worker {rate(rules, args.rounds // 4, 1):10,.0f} rounds/s")
    if args.profile_hot:
        hot_profile(ref, 50_000)


if __name__ == "__main__":
    main()
