"""The round engine before and after a change, side by side in one run, each as a ratio to a bare loop.

Run: ``.venv/bin/python benchmarks/engine_compare.py BEFORE_DIR [AFTER_DIR] [--runs N] [--rounds N]``. Each
directory is a checkout with its compiled engine built (``make setup``, or for an older tree its own build);
AFTER_DIR defaults to this checkout. The two trees' ``benchmarks/engine.py`` run alternately, each run
followed by the floor: a bare loop of the same number of rounds (a seeded shuffle, the cards of a round
drawn and summed, no engine), in the same process kind at the same moment. Load moves both figures alike, so
the ratio engine/floor is what is compared; the figure printed is the median over the runs and the change
of the after tree against the before one (#34: within 5 %).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RATE = re.compile(r"engine=(\w+).*rounds_per_s=([\d,]+)")


def bare_loop(rounds: int) -> float:
    """Rounds per second of a loop that only draws and adds up a round's worth of cards (about six)."""
    import random

    cards = [v for v in (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 11) for _ in range(24)]
    rng = random.Random(1)
    rng.shuffle(cards)
    at, total = 0, 0
    start = time.perf_counter()
    for _ in range(rounds):
        for _ in range(6):
            if at == len(cards):
                rng.shuffle(cards)
                at = 0
            total += cards[at]
            at += 1
    return rounds / (time.perf_counter() - start)


def engine_rate(tree: Path, rounds: int) -> tuple[str, float]:
    """The engine's rounds per second in ``tree`` (its own benchmark, its own build), and which engine ran."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("TABLECTL_PURE_ENGINE", None)
    out = subprocess.run([sys.executable, str(tree / "benchmarks" / "engine.py"), "--rounds", str(rounds)],
                         cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    found = _RATE.search(out)
    if found is None:
        raise SystemExit(f"{tree}: benchmarks/engine.py printed no rate: {out!r}")
    return found.group(1), float(found.group(2).replace(",", ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path, nargs="?", default=ROOT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=200_000)
    a = ap.parse_args()
    ratios: dict[str, list[float]] = {"before": [], "after": []}
    for run in range(a.runs):
        for name, tree in (("before", a.before), ("after", a.after)):
            kind, rate = engine_rate(tree.resolve(), a.rounds)
            floor = bare_loop(a.rounds)
            ratios[name].append(rate / floor)
            print(f"run {run + 1} {name}: engine={kind} rounds_per_s={rate:,.0f} floor={floor:,.0f} "
                  f"ratio={rate / floor:.3f}", flush=True)
    before, after = statistics.median(ratios["before"]), statistics.median(ratios["after"])
    print(f"median ratio to the floor: before={before:.3f} after={after:.3f} change={after / before - 1:+.1%}")


if __name__ == "__main__":
    main()
