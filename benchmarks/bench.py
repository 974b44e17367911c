"""Bench throughput: rounds per second on the real engine, one worker and all workers.

    .venv/bin/python benchmarks/bench.py [--rounds N] [--profile-hot]

Rules: 6 decks, dealer stands on soft 17, peek, DAS, one spot, basic strategy (the issue's
reference game), then every shipped profile with one worker. ``--profile-hot`` adds a cProfile
of one worker, top functions by own time. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import random
import time

from controller import bench
from controller.game.rules import Rules
from controller.profiles import available_profiles, load_rules
from controller.strategy.chart import basic_strategy
from controller.strategy.player import BenchTable


def rate(rules: Rules, rounds: int, workers: int) -> float:
    stats, _ = bench.run(rules, rounds, seed=1, workers=workers)
    return stats.rounds / stats.elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200_000)
    ap.add_argument("--profile-hot", action="store_true")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    ref = Rules(name="6D S17 DAS peek, 1 spot", decks=6)
    basic_strategy(ref)  # chart built before timing
    one = rate(ref, args.rounds, 1)
    allw = rate(ref, args.rounds * cores, cores)
    print(f"rules: {ref.name} (decks=6, S17, peek, DAS, resplit to 4, 3:2), basic strategy, real engine")
    print(f"1 worker : {one:10,.0f} rounds/s")
    print(f"{cores} workers: {allw:10,.0f} rounds/s  (scaling {allw / one:.2f}x on {cores} cores)")
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
        table = BenchTable(ref, random.Random(1))
        table.play(2000)
        prof = cProfile.Profile()
        prof.enable()
        table.play(50_000)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(12)
        print(out.getvalue())


if __name__ == "__main__":
    main()
