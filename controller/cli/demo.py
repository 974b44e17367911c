"""``tablectl demo``: a whole simulated pit on one machine (DESIGN.md, "Command line")."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from controller.cli import UsageError
from controller.profiles import ProfileError, load_rules


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("demo", help="a whole simulated pit on one machine")
    p.add_argument("--profile", default="house-h17", metavar="NAME|PATH", help="house rules (default house-h17)")
    p.add_argument("--tables", type=int, default=1, metavar="K", help="tables t01..tK (default 1)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="rounds per table, counted across restarts (default: until Ctrl-C)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="seed of shoes, bets and decisions (default 1)")
    p.add_argument("--speed", choices=("realtime", "fast", "max"), default="fast")
    p.add_argument("--broker", metavar="URL", help="an MQTT broker (default: start the embedded one on 127.0.0.1)")
    p.add_argument("--state-dir", type=Path, metavar="DIR", help="journals (default: a fresh temporary directory)")
    p.add_argument("--prefix", default="tables", metavar="P", help="MQTT topic prefix (default tables)")
    p.add_argument("--no-dashboard", action="store_true", help="do not serve the pit dashboard")
    p.add_argument("--dashboard-port", type=int, default=0, metavar="PORT", help="dashboard port (default: free)")
    p.add_argument("--quiet", action="store_true", help="no line per round")
    p.add_argument("--tick-every", type=float, default=30.0, metavar="SECONDS",
                   help="how often the clock is passed to each table (deck-change warnings; default 30)")
    p.add_argument("--log-level", choices=("DEBUG", "INFO", "WARNING", "ERROR"), type=str.upper, default="WARNING",
                   help="service logs on stderr (default WARNING)")
    p.add_argument("--log-format", choices=("text", "json"), default="text", help="log lines (default text)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from controller.demo import DemoOptions, run_demo
    from controller.journal import JournalError
    from controller.logs import configure_logging
    from controller.publisher import parse_broker_url

    if not 1 <= args.tables <= 99:
        raise UsageError(f"--tables {args.tables}: between 1 and 99")
    if args.rounds is not None and args.rounds < 0:
        raise UsageError(f"--rounds {args.rounds}: zero or more")
    if not args.prefix or any(c in args.prefix for c in "+#") or args.prefix.startswith("/"):
        raise UsageError(f"--prefix {args.prefix!r}: a topic prefix without wildcards or a leading '/'")
    if not 0.05 <= args.tick_every <= 3600:
        raise UsageError(f"--tick-every {args.tick_every:g}: between 0.05 and 3600 seconds")
    if args.broker is not None:
        try:
            parse_broker_url(args.broker)
        except ValueError as e:
            raise UsageError(f"--broker {args.broker!r}: {e}") from None
    try:
        rules = load_rules(args.profile)
    except ProfileError as e:
        raise UsageError(str(e)) from None
    if args.state_dir is not None and args.state_dir.exists() and not args.state_dir.is_dir():
        raise UsageError(f"--state-dir {args.state_dir}: not a directory")
    opts = DemoOptions(
        rules=rules, tables=args.tables, rounds=args.rounds, seed=args.seed, speed=args.speed, broker=args.broker,
        state_dir=args.state_dir, prefix=args.prefix, dashboard=not args.no_dashboard,
        dashboard_port=args.dashboard_port, quiet=args.quiet, tick_every=args.tick_every,
    )
    configure_logging(args.log_level, fmt=args.log_format)
    try:
        return asyncio.run(run_demo(opts))
    except JournalError as e:  # a --state-dir another demo or service is using
        raise UsageError(str(e)) from None
