"""The shuffle-quality monitor's error rates, measured on simulated shoes.

    nice -n 19 python benchmarks/shuffle_quality.py [--shoes 10000] [--trials 2000] [--seed 2026]
                                                    [--profile house-h17] [--threshold T] [--json]

Shoes are made by the simulated machines of ``simulators/shuffler.py`` (the ones ``tablectl demo
--shuffler`` uses) and judged by :func:`controller.analytics.shuffle_quality.score_shoe`, each shoe seen as the
table sees it: up to the profile's cut card (``decks x 52 x penetration`` cards; the round that
finishes after the cut card is left out, so the figures are for the fewest cards a table sees).

* **false alarms**: a chain of ``--shoes`` shoes, each a good (uniform) shuffle of the one before,
  each judged against the one before: the share that fails (target: at most 1 in 1,000).
* **detection within 3 comparable shoes**: ``--trials`` times, a well-shuffled shoe goes through the
  faulty machine five times in a row, each shoe judged against the one before; detected within ``k``
  shoes when one of the first ``k`` fails (target: at least 99 % within 3). Given for ``weak`` (the broken
  one-pass machine) and ``clumpy`` (cards stick in clumps of 2-3, the milder fault), within 1, 3 and 5.

Also printed: the good shoes' score quantiles (how far the threshold is from what good shoes reach)
and the time per judged shoe. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Any

from controller.analytics.shuffle_quality import THRESHOLD, ShuffleScore, score_shoe
from controller.profiles import ProfileError, load_rules
from simulators.shuffler import shuffle_with

FAULTS = ("weak", "clumpy")


def _judge(prev: list[str], new: list[str], seen: int, decks: int, threshold: float) -> ShuffleScore:
    score = score_shoe(prev[:seen], new[:seen], decks, threshold=threshold)
    assert score is not None, "a shoe seen to its cut card is always judged"
    return score


def false_alarms(shoes: int, rng: random.Random, decks: int, seen: int, threshold: float) -> dict[str, Any]:
    """A chain of good shuffles, each shoe judged against the one before."""
    prev = shuffle_with("good", [c for c in _deck() for _ in range(decks)], rng)
    scores: list[float] = []
    failed = 0
    for _ in range(shoes):
        new = shuffle_with("good", prev, rng)
        s = _judge(prev, new, seen, decks, threshold)
        scores.append(s.score)
        failed += not s.passed
        prev = new
    scores.sort()

    def q(f: float) -> float:
        return round(scores[min(len(scores) - 1, int(f * len(scores)))], 2)

    return {"shoes": shoes, "failed": failed, "rate": failed / shoes if shoes else 0.0,
            "score_quantiles": {"0.5": q(0.5), "0.99": q(0.99), "0.999": q(0.999), "max": scores[-1] if scores
                                else 0.0}}


RUN = 5  # faulty shoes in a row per trial


def detection(fault: str, trials: int, rng: random.Random, decks: int, seen: int,
              threshold: float) -> dict[str, Any]:
    """``trials`` runs of :data:`RUN` shoes in a row from the faulty machine, each judged against the one before."""
    first_failure: list[int] = []  # per trial: the number of the first failing shoe (RUN + 1: none)
    failed = 0
    for _ in range(trials):
        prev = shuffle_with("good", [c for c in _deck() for _ in range(decks)], rng)
        first = RUN + 1
        for k in range(1, RUN + 1):
            new = shuffle_with(fault, prev, rng)
            s = _judge(prev, new, seen, decks, threshold)
            failed += not s.passed
            if not s.passed:
                first = min(first, k)
            prev = new
        first_failure.append(first)

    def within(k: int) -> float:
        return sum(1 for f in first_failure if f <= k) / trials if trials else 0.0

    return {"fault": fault, "trials": trials, "detected_within_3": sum(1 for f in first_failure if f <= 3),
            "rate_within_1": within(1), "rate_within_3": within(3), "rate_within_5": within(5),
            "single_shoe_rate": failed / (RUN * trials) if trials else 0.0}


def _deck() -> list[str]:
    from cardnotation import DECK

    return list(DECK)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shoes", type=int, default=10_000, help="good shoes judged for false alarms (default 10000)")
    p.add_argument("--trials", type=int, default=2_000, help="runs of 3 faulty shoes per fault (default 2000)")
    p.add_argument("--seed", type=int, default=2026, help="seed of every shoe (default 2026)")
    p.add_argument("--profile", default="house-h17", help="decks and penetration from this profile (the demo's)")
    p.add_argument("--decks", type=int, default=None, help="override the profile's decks")
    p.add_argument("--threshold", type=float, default=THRESHOLD, help=f"the alarm threshold (default {THRESHOLD})")
    p.add_argument("--json", action="store_true", help="one JSON object")
    args = p.parse_args(argv)
    if args.shoes < 1 or args.trials < 0:
        print("shuffle_quality: --shoes must be 1 or more and --trials 0 or more", file=sys.stderr)
        return 2
    try:
        rules = load_rules(args.profile, {"decks": args.decks} if args.decks else None)
    except ProfileError as e:
        print(f"shuffle_quality: {e}", file=sys.stderr)
        return 2
    decks, seen = rules.decks, rules.cut_card_index
    rng = random.Random(args.seed)
    started = time.perf_counter()
    good = false_alarms(args.shoes, rng, decks, seen, args.threshold)
    faults = [detection(f, args.trials, rng, decks, seen, args.threshold) for f in FAULTS]
    judged = args.shoes + RUN * args.trials * len(FAULTS)
    elapsed = time.perf_counter() - started
    out = {"profile": rules.name, "decks": decks, "cards_seen_per_shoe": seen, "threshold": args.threshold,
           "seed": args.seed, "false_alarms": good, "detection": faults,
           "ms_per_judged_shoe": round(1000 * elapsed / judged, 3), "load_average": os.getloadavg()[0]}
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"{rules.name}: {decks} decks, {seen} cards seen per shoe (to the cut card), threshold {args.threshold}, "
          f"seed {args.seed}")
    print(f"false alarms (good shuffler): {good['failed']} of {good['shoes']} shoes = {good['rate']:.5f} "
          f"(target <= 0.001); good scores: median {good['score_quantiles']['0.5']}, "
          f"99% {good['score_quantiles']['0.99']}, 99.9% {good['score_quantiles']['0.999']}, "
          f"max {good['score_quantiles']['max']:.2f}")
    for f in faults if args.trials else []:
        print(f"{f['fault']}: detected within 3 shoes in {f['detected_within_3']} of {f['trials']} runs = "
              f"{f['rate_within_3']:.4f} (target >= 0.99); within 1 shoe {f['rate_within_1']:.4f}, "
              f"within 5 {f['rate_within_5']:.4f}; single shoes failing {f['single_shoe_rate']:.4f}")
    print(f"{out['ms_per_judged_shoe']} ms per judged shoe (shuffle included), load average {out['load_average']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
