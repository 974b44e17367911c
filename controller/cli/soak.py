"""``tablectl soak --tables K --rounds N --seed S``: the seeded chaos soak of a simulated pit (DESIGN.md)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from controller.cli import check_broker_url
from controller.cli.demo import MAX_TABLES
from controller.errors import UsageError
from controller.profiles import ProfileError, load_rules


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "soak", help="a seeded chaos soak of a simulated pit: commands, device faults, broker outages, kill -9",
        description="Plays K simulated tables for N rounds at full speed while a schedule drawn from the seed "
                    "sends supervisor commands, pulls cables, corrupts bytes, jams the shuffler, stops the broker "
                    "and kills the pit with kill -9; checks every invariant after every step. Exit 0 with a "
                    "one-line summary, 1 naming the seed, the step and the invariant that broke.")
    p.add_argument("--tables", type=int, required=True, metavar="K", help="tables t01..tK")
    p.add_argument("--rounds", type=int, required=True, metavar="N", help="rounds each table plays")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="the seed (same seed, same schedule)")
    p.add_argument("--profile", default="house-h17", metavar="NAME|PATH", help="house rules (default house-h17)")
    p.add_argument("--broker", metavar="URL",
                   help="an MQTT broker (default: its own Mosquitto, which must be installed; "
                        "broker outages are scheduled only on a broker of its own that keeps sessions)")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="journals and logs (default: a temporary directory, removed after a clean run)")
    p.add_argument("--step-every", type=float, default=2.0, metavar="SECONDS",
                   help="mean pause between two pit-level steps (default 2)")
    p.add_argument("--bound", type=float, default=60.0, metavar="SECONDS",
                   help="a table that can play settles a round within this after a fault clears (default 60)")
    p.add_argument("--journal-sync", choices=("FULL", "NORMAL"), type=str.upper, default="FULL",
                   help="the pit's journals: FULL (default, as a table PC runs) or NORMAL (survives the soak's "
                        "kill -9, not a power cut; about twice the rounds a second: see docs/soak.md)")
    p.add_argument("--cluster", type=int, default=0, metavar="N",
                   help="run the pit on a NATS cluster of N nodes (3) started in <state-dir>/cluster, and add to the "
                        "schedule a node killed and restarted, and two nodes killed for a while (no quorum: the "
                        "tables play on their journals); not with --broker; needs the floor extra")
    p.add_argument("--recorder", action="store_true",
                   help="run tablectl recorder into <state-dir>/recorder.db, kill -9 it now and then (its own "
                        "schedule: the pit's is unchanged), and check that it holds exactly each table's journal, "
                        "seq for seq, after every step and at the end")
    p.set_defaults(func=run)


def _require_floor() -> None:
    """--cluster needs the floor extra (its modules and nats-server): one line before anything starts."""
    from controller.floor.cluster import NatsNotInstalled, find_nats_server
    from controller.floor.nats_config import NatsConfigError, require_floor_extra

    try:
        require_floor_extra("--cluster")
        find_nats_server()
    except (NatsConfigError, NatsNotInstalled) as exc:
        raise UsageError(f"--cluster: {exc}" if not str(exc).startswith("--cluster") else str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from controller.sim.soak import SoakOptions, run_soak

    if not 1 <= args.tables <= MAX_TABLES:
        raise UsageError(f"--tables {args.tables}: between 1 and {MAX_TABLES}")
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: one or more")
    if not 0.05 <= args.step_every <= 600:
        raise UsageError(f"--step-every {args.step_every:g}: between 0.05 and 600 seconds")
    if not 5 <= args.bound <= 3600:
        raise UsageError(f"--bound {args.bound:g}: between 5 and 3600 seconds")
    check_broker_url(args.broker)
    if args.cluster and args.cluster != 3:
        raise UsageError(f"--cluster {args.cluster}: 3 (the schedule loses one node, then two, of three)")
    if args.cluster and args.broker is not None:
        raise UsageError("--cluster: the pit runs on the cluster the soak starts; not with --broker")
    if args.broker is None and not args.cluster:
        from controller.mqtt.mosquitto import MosquittoNotInstalled, find_mosquitto

        try:
            find_mosquitto()  # the soak's own broker (the demo's embedded one admits only its own demo's tables)
        except MosquittoNotInstalled as e:
            raise UsageError(f"{e}: the soak runs its own Mosquitto; or give --broker URL or --cluster 3") from None
    if args.cluster:
        _require_floor()
    if args.state_dir is not None and args.state_dir.exists() and not args.state_dir.is_dir():
        raise UsageError(f"--state-dir {args.state_dir}: not a directory")
    try:
        rules = load_rules(args.profile)
    except ProfileError as e:
        raise UsageError(str(e)) from None
    opts = SoakOptions(rules=rules, profile=args.profile, tables=args.tables, rounds=args.rounds, seed=args.seed,
                       broker=args.broker, state_dir=args.state_dir, step_s=args.step_every, bound_s=args.bound,
                       journal_sync=args.journal_sync, cluster=args.cluster,
                       recorder=args.recorder)
    try:
        return asyncio.run(run_soak(opts))
    except KeyboardInterrupt:
        return 130
