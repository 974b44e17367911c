"""``tablectl strategy --profile NAME|PATH [--json]``: the basic strategy chart the bench plays."""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.cli.edge import load
from controller.strategy.chart import LEGEND, UP_CARDS, basic_strategy, up_label


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("strategy", help="print the basic strategy chart of a profile")
    p.add_argument("--profile", required=True, metavar="NAME|PATH", help="house-rule profile name or TOML path")
    p.add_argument("--json", action="store_true", help="the chart as one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rules = load(args.profile)
    chart = basic_strategy(rules).chart()
    columns = [up_label(u) for u in UP_CARDS]
    if args.json:
        print(json.dumps({"profile": rules.name, "columns": columns, **chart, "legend": LEGEND}))
        return 0
    titles = {"hard": "Hard totals", "soft": "Soft totals", "pairs": "Pairs", "surrender": "Surrender"}
    print(f"Basic strategy for {rules.name}")
    for section, rows in chart.items():
        if not rows:
            continue
        print()
        print(f"{titles[section]:<9} " + " ".join(f"{c:>3}" for c in columns))
        for name, codes in rows.items():
            print(f"{name:<9} " + " ".join(f"{c:>3}" for c in codes))
    print()
    print("  ".join(f"{k} {v}" for k, v in LEGEND.items()))
    return 0
