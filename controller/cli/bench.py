"""``tablectl bench --profile NAME|PATH --rounds N [--seed S] [--spots K] [--workers W] [--json]``.

Plays N rounds on the table's own engine with basic-strategy players and reports rounds, rounds
per second, the house edge per initial wager with its standard error, the hold, the theoretical
edge of ``tablectl edge`` and the difference in standard errors. A progress bar is shown only
when stderr is a terminal; Ctrl-C stops the run and the figures so far are still printed. The
figures depend on ``--seed`` and ``--rounds`` only: ``--workers`` changes the speed, not the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from controller import bench
from controller.cli.edge import load
from controller.errors import UsageError
from controller.strategy.edge import house_edge
from controller.strategy.player import BenchStats


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "bench", help="play many rounds with basic strategy and report the house edge"
    )
    p.add_argument("--profile", required=True, metavar="NAME|PATH", help="house-rule profile name or TOML path")
    p.add_argument("--rounds", required=True, type=int, metavar="N", help="rounds to play")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="seed of the shuffles (default 1)")
    p.add_argument("--spots", type=int, default=1, metavar="K", help="betting spots played each round (default 1)")
    p.add_argument(
        "--workers", type=int, default=1, metavar="W",
        help=f"processes to use (default 1; this machine has {os.cpu_count()} cores)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run)


def report(
    rules_name: str, stats: BenchStats, theory: float, *, workers: int, seed: int, interrupted: bool
) -> dict[str, Any]:
    """The bench figures as a JSON-ready dict."""
    se = stats.stderr
    return {
        "profile": rules_name,
        "rounds": stats.rounds,
        "spots": stats.spots,
        "hands": stats.hands,
        "workers": workers,
        "seed": seed,
        "seconds": round(stats.elapsed, 3),
        "rounds_per_s": round(stats.rounds / stats.elapsed, 1) if stats.elapsed > 0 else 0.0,
        "house_edge": round(stats.house_edge, 7),
        "stderr": round(se, 7),
        "hold": round(stats.hold, 7),
        "theoretical_edge": round(theory, 7),
        "difference_in_se": round((stats.house_edge - theory) / se, 3) if se > 0 else None,
        "wager": stats.unit,
        "handle": stats.handle,
        "house_net": stats.house_net,
        "shuffles": stats.shuffles,
        "interrupted": interrupted,
    }


def run(args: argparse.Namespace) -> int:
    rules = load(args.profile)
    if args.rounds < 1:
        raise UsageError(f"--rounds must be at least 1, got {args.rounds}")
    if not 1 <= args.spots <= rules.spots:
        raise UsageError(f"--spots must be 1 to {rules.spots} (the spots of {rules.name}), got {args.spots}")
    if args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    workers = bench.useful_workers(args.rounds, args.workers)  # no more than the run has blocks
    theory = house_edge(rules).house_edge
    bar: Any = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=args.rounds, unit="round", unit_scale=True, desc=rules.name, file=sys.stderr)
    try:
        stats, interrupted = bench.run(
            rules, args.rounds, seed=args.seed, spots=args.spots, workers=workers,
            progress=None if bar is None else bar.update,
        )
    finally:
        if bar is not None:
            bar.close()
    out = report(rules.name, stats, theory, workers=workers, seed=args.seed, interrupted=interrupted)
    if args.json:
        print(json.dumps(out))
        return 0
    if interrupted:
        print(f"interrupted: {stats.rounds} of {args.rounds} rounds played")
    diff = out["difference_in_se"]
    print(f"profile        {rules.name} ({stats.spots} spot(s), {workers} worker(s), seed {args.seed})")
    print(f"rounds         {stats.rounds} in {stats.elapsed:.2f} s = {out['rounds_per_s']:.0f} rounds/s")
    print(f"house edge     {stats.house_edge * 100:.3f}% +/- {stats.stderr * 100:.3f}% (one standard error)")
    print(f"hold           {stats.hold * 100:.3f}% (house net / handle)")
    print(f"theoretical    {theory * 100:.3f}%  difference {'n/a' if diff is None else f'{diff:+.2f}'} standard errors")
    return 0
