"""The bench against its floor: ``controller.bench.run`` beside a bare pure-Python blackjack loop, in one run.

    python benchmarks/bench_floor.py [--rounds 200000] [--bare-rounds N] [--repeat 3] [--seed 1]
                                     [--also-pure] [--json]

Issue 17's speed target: the bench of the *installed* package plays at least 0.4 times as many rounds
per second as a bare pure-Python loop measured in the same run on the same machine. Run it with the
interpreter of the environment to measure; it imports ``controller`` from wherever that interpreter
finds it (the script adds nothing to ``sys.path``) and prints which package and which engine it got:
``compiled`` (mypyc: ``controller.game.table.__file__`` is a ``.so``) or ``pure`` (``table.py``).

* In the checkout: ``.venv/bin/python benchmarks/bench_floor.py`` (``make setup`` builds the
  compiled engine in place; ``TABLECTL_PURE_ENGINE=1`` times the pure one).
* On the pip-installed package (``setup.py`` compiles the engine with mypyc at build time; about a
  minute), from the checkout's root::

      python3 -m venv /tmp/v && /tmp/v/bin/pip install -c requirements.lock .
      /tmp/v/bin/python benchmarks/bench_floor.py

  Python puts the script's folder (``benchmarks/``) on ``sys.path``, not the working directory, so the
  checkout's ``controller/`` is not imported: the ``package:`` line shows ``site-packages``. (The
  build writes ``build/`` and ``*.egg-info`` into the tree it installs from; both are git-ignored.)

The two loops, one spot, 6 decks, a shoe reshuffled at the cut card (75 % penetration):

(a) bare: cards as values 1-10 in a list shuffled by ``random.Random``; each round deals player,
    dealer, player, dealer, pays a natural 3:2, the player hits 16 or less and stands on 17 or more
    (soft totals counted), the dealer stands on all 17s, the wager is settled as an integer. No
    engine, no events, no strategy table, no doubles, splits, insurance, burn or surrender: the
    least a Python program can do to play a round.
(b) ``controller.bench.run(rules, rounds, seed=S, workers=1)``: the real engine (events in, effects
    out, every rule of the profile), basic strategy with doubles, splits and surrender, the
    bench's own shoe; its rate is ``rounds / elapsed`` as the bench reports it (the strategy chart
    is built before its clock starts).

Each figure is the best of ``--repeat`` runs taken in turn (bare, bench, bare, bench, ...), so a
change of the machine's load hits both; the ratio is printed from the best figures and as the median
of the ratios of the runs taken side by side. ``--also-pure`` adds the pure engine's figures from a
child process (``TABLECTL_PURE_ENGINE=1``, same interpreter) when the compiled one is in use.
Figures are printed, never asserted (the machine's load average is printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from typing import Any

#: the issue's target: the bench's rounds/s over the bare loop's
TARGET = 0.4


def bare_rounds(rounds: int, seed: int, decks: int = 6, penetration: float = 0.75, bet: int = 1000) -> tuple[int, int]:
    """Play ``rounds`` rounds of the bare loop; returns (rounds, player net in cents)."""
    rng = random.Random(seed)
    shoe = [min(rank, 10) for rank in range(1, 14)] * 4 * decks
    cut = int(len(shoe) * penetration)
    rng.shuffle(shoe)
    pos = 0
    net = 0
    natural_win = bet * 3 // 2
    for _ in range(rounds):
        if pos >= cut:
            rng.shuffle(shoe)
            pos = 0
        p1, d1, p2, d2 = shoe[pos], shoe[pos + 1], shoe[pos + 2], shoe[pos + 3]
        pos += 4
        player, player_ace = p1 + p2, p1 == 1 or p2 == 1
        dealer, dealer_ace = d1 + d2, d1 == 1 or d2 == 1
        player_natural = player_ace and player == 11
        dealer_natural = dealer_ace and dealer == 11
        if player_natural or dealer_natural:
            if not dealer_natural:
                net += natural_win
            elif not player_natural:
                net -= bet
            continue
        # the player: hit 16 or less, stand on 17 or more
        while True:
            best = player + 10 if player_ace and player <= 11 else player
            if best >= 17:
                break
            card = shoe[pos]
            pos += 1
            player += card
            player_ace = player_ace or card == 1
        if best > 21:
            net -= bet
            continue
        # the dealer stands on all 17s
        while True:
            dealer_best = dealer + 10 if dealer_ace and dealer <= 11 else dealer
            if dealer_best >= 17:
                break
            card = shoe[pos]
            pos += 1
            dealer += card
            dealer_ace = dealer_ace or card == 1
        if dealer_best > 21 or best > dealer_best:
            net += bet
        elif best < dealer_best:
            net -= bet
    return rounds, net


def bare_rate(rounds: int, seed: int) -> tuple[float, float]:
    """(rounds per second, house edge) of one run of the bare loop."""
    start = time.perf_counter()
    n, net = bare_rounds(rounds, seed)
    elapsed = time.perf_counter() - start
    return n / elapsed, -net / (n * 1000)


def bench_rate(rounds: int, seed: int) -> tuple[float, float]:
    """(rounds per second, house edge) of one ``controller.bench.run`` with one worker."""
    from controller import bench

    stats, _ = bench.run(reference_rules(), rounds, seed=seed, workers=1)
    return stats.rounds / stats.elapsed, stats.house_edge


def reference_rules() -> Any:
    """The bench's reference game (as benchmarks/bench.py): 6 decks, S17, peek, DAS, one spot."""
    from controller.game.rules import Rules

    return Rules(name="6D S17 DAS peek, 1 spot", decks=6)


def engine_kind() -> tuple[str, str, str]:
    """(compiled|pure, the engine module's file, the controller package's folder)."""
    import controller
    import controller.game.table as table

    path = table.__file__ or ""
    kind = "compiled" if path.endswith((".so", ".pyd")) else "pure"
    return kind, path, os.path.dirname(controller.__file__ or "")


def bench_only(rounds: int, repeat: int, seed: int) -> dict[str, Any]:
    """The bench's best rate alone (the ``--also-pure`` child process)."""
    from controller.strategy.chart import basic_strategy

    basic_strategy(reference_rules())
    kind, path, _ = engine_kind()
    best = max(bench_rate(rounds, seed)[0] for _ in range(repeat))
    return {"engine": kind, "engine_file": path, "bench_rounds_per_s": best}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=200_000, help="bench rounds per run (default 200,000)")
    ap.add_argument("--bare-rounds", type=int, default=None, help="bare-loop rounds per run (default 5 x --rounds)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each, taken in turn; the best is kept")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--also-pure", action="store_true", help="the pure engine's figures too (a child process)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the text")
    ap.add_argument("--bench-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.bench_only:
        print(json.dumps(bench_only(args.rounds, args.repeat, args.seed)))
        return
    bare_n = args.bare_rounds or 5 * args.rounds

    from controller.strategy.chart import basic_strategy

    basic_strategy(reference_rules())  # built (and cached) before any clock starts
    bare_rate(10_000, args.seed)  # warm both up
    bench_rate(5_000, args.seed)
    kind, path, package = engine_kind()
    bares: list[float] = []
    benches: list[float] = []
    edges: tuple[float, float] = (0.0, 0.0)
    for _ in range(args.repeat):
        b, bare_edge = bare_rate(bare_n, args.seed)
        e, bench_edge = bench_rate(args.rounds, args.seed)
        bares.append(b)
        benches.append(e)
        edges = (bare_edge, bench_edge)
    bare, best = max(bares), max(benches)
    ratio = best / bare
    paired = statistics.median(e / b for b, e in zip(bares, benches, strict=True))
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "package": package,
        "engine": kind,
        "engine_file": path,
        "bare_rounds_per_s": round(bare),
        "bench_rounds_per_s": round(best),
        "ratio": round(ratio, 3),
        "ratio_paired_median": round(paired, 3),
        "target": TARGET,
        "bare_house_edge": round(edges[0], 4),
        "bench_house_edge": round(edges[1], 5),
        "repeat": args.repeat,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cores": os.cpu_count(),
    }
    if args.also_pure and kind == "compiled":
        child = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--bench-only", "--rounds", str(args.rounds // 2),
             "--repeat", str(args.repeat), "--seed", str(args.seed)],
            env={**os.environ, "TABLECTL_PURE_ENGINE": "1"}, capture_output=True, text=True, check=True,
        )
        pure = json.loads(child.stdout)
        result["pure_bench_rounds_per_s"] = round(pure["bench_rounds_per_s"])
        result["pure_ratio"] = round(pure["bench_rounds_per_s"] / bare, 3)
    if args.json:
        print(json.dumps(result))
        return
    print(f"python {result['python']}, {result['cores']} cores, load average {result['load_average']}")
    print(f"package: {package}")
    print(f"engine : {kind} ({path})")
    print(f"best of {args.repeat}, taken in turn:")
    print(f"  (a) bare pure-Python loop : {bare:10,.0f} rounds/s  ({bare_n:,} rounds a run; "
          f"hit to 17, house edge {100 * edges[0]:.1f}%)")
    print(f"  (b) controller.bench.run  : {best:10,.0f} rounds/s  ({args.rounds:,} rounds a run, 1 worker, "
          f"basic strategy, {kind} engine, house edge {100 * edges[1]:.2f}%)")
    print(f"  (b)/(a) = {ratio:.3f} (median of the side-by-side runs {paired:.3f}); target >= {TARGET}: "
          f"{'met' if ratio >= TARGET else 'not met'}")
    if "pure_bench_rounds_per_s" in result:
        print(f"  pure engine (child, TABLECTL_PURE_ENGINE=1): {result['pure_bench_rounds_per_s']:10,} rounds/s, "
              f"{result['pure_ratio']:.3f} of (a)")


if __name__ == "__main__":
    main()
