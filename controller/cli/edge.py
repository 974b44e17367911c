"""``tablectl edge --profile NAME|PATH [--json]``: the theoretical house edge for basic strategy."""

from __future__ import annotations

import argparse
import json
from typing import Any

from controller.errors import UsageError
from controller.game.rules import Rules
from controller.profiles import ProfileError, load_rules
from controller.strategy.edge import house_edge


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("edge", help="print the theoretical house edge of a profile")
    p.add_argument("--profile", required=True, metavar="NAME|PATH", help="house-rule profile name or TOML path")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run)


def load(profile: str) -> Rules:
    """The profile's rules, or :class:`UsageError` naming what is wrong."""
    try:
        return load_rules(profile)
    except ProfileError as e:
        raise UsageError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    rules = load(args.profile)
    rep = house_edge(rules)
    if args.json:
        print(
            json.dumps(
                {
                    "profile": rules.name,
                    "house_edge": round(rep.house_edge, 7),
                    "house_edge_optimal": round(rep.house_edge_optimal, 7),
                    "player_blackjack": round(rep.player_blackjack, 7),
                    "dealer_blackjack": round(rep.dealer_blackjack, 7),
                    "insurance_ev": round(rep.insurance_ev, 7),
                    "method": rep.method,
                }
            )
        )
        return 0
    print(f"profile            {rules.name}")
    print(f"house edge         {rep.house_edge * 100:.3f}% of the initial wager (basic strategy)")
    print(f"  best first play  {rep.house_edge_optimal * 100:.3f}% (composition-dependent first decision)")
    print(f"player blackjack   {rep.player_blackjack * 100:.3f}% of rounds")
    print(f"insurance          {rep.insurance_ev * 100:+.2f}% per unit insured (never taken)")
    print(f"method             {rep.method}")
    return 0
