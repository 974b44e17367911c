"""Measure each shipped profile's spread on the real engine and record it for ``win_z`` (docs/analytics.md).

    nice -n 19 python benchmarks/spread_figures.py [--rounds 100000] [--seed 2026] [--spots 7] [--profile NAME]
                                                   [--check]

For each profile: ``--rounds`` rounds of ``--spots`` basic-strategy spots (fewer when the profile seats fewer) on
one worker (:func:`controller.bench.spread.measure`: the bench's seeded streams, so the same figures every time),
then the variance of one hand's net per unit of initial wager and the covariance of two hands' nets in the same
round per unit of wager product, each with its standard error. Written to ``controller/analytics/spreads.json``
(keyed by the rules' digest: a profile changed since is measured again at first use, as any table's overrides
are); ``--check`` prints and writes nothing back. About 7 s of CPU per profile at 100,000 rounds.
"""

from __future__ import annotations

import argparse
import json
import time

from controller.analytics.hold import RECORDED, SPREAD_SPOTS
from controller.bench.spread import measure
from controller.game.rules import rules_digest
from controller.profiles import available_profiles, load_rules


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--spots", type=int, default=SPREAD_SPOTS)
    ap.add_argument("--profile", action="append", help="only this profile (repeatable); default: every shipped one")
    ap.add_argument("--check", action="store_true", help="print only; leave the recorded figures as they are")
    args = ap.parse_args()
    recorded = json.loads(RECORDED.read_text(encoding="utf-8")) if RECORDED.exists() else {"profiles": {}}
    for name in args.profile or available_profiles():
        rules = load_rules(name)
        spots = min(args.spots, rules.spots)
        start = time.process_time()
        m = measure(rules, args.rounds, seed=args.seed, spots=spots)
        cpu = time.process_time() - start
        figures = {"digest": rules_digest(rules), "rounds": m.rounds, "spots": spots, "seed": args.seed,
                   "mean": round(m.mean, 6), "variance": round(m.variance, 6), "variance_se": round(m.variance_se, 6),
                   "covariance": round(m.covariance, 6), "covariance_se": round(m.covariance_se, 6),
                   "correlation": round(m.covariance / m.variance, 4)}
        print(f"{name:<24} sigma {m.variance ** 0.5:.4f}  variance {m.variance:.4f} +- {m.variance_se:.4f}  "
              f"covariance {m.covariance:.4f} +- {m.covariance_se:.4f} ({100 * m.covariance_se / m.covariance:.1f} %)"
              f"  correlation {figures['correlation']:.3f}  ({m.rounds} rounds x {spots} spots, {cpu:.1f} s CPU)",
              flush=True)
        recorded["profiles"][name] = figures
    if not args.check:
        recorded["profiles"] = dict(sorted(recorded["profiles"].items()))
        RECORDED.write_text(json.dumps(recorded, indent=1) + "\n", encoding="utf-8")
        print(f"written to {RECORDED}")


if __name__ == "__main__":
    main()
