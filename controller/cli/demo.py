"""``tablectl demo``: a whole simulated pit on one machine (DESIGN.md, "Command line")."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

from controller.analytics.live import abandon_theory_work
from controller.cli import check_broker_url
from controller.errors import UsageError
from controller.profiles import ProfileError, load_rules

#: the most tables one demo runs
MAX_TABLES = 500


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("demo", help="a whole simulated pit on one machine")
    p.add_argument("--profile", default="house-h17", metavar="NAME|PATH", help="house rules (default house-h17)")
    p.add_argument("--tables", type=int, default=1, metavar="K", help="tables t01..tK (default 1)")
    p.add_argument("--rounds", type=int, default=None, metavar="N",
                   help="rounds per table, counted across restarts (default: until Ctrl-C)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="seed of shoes, bets and decisions (default 1)")
    p.add_argument("--speed", choices=("realtime", "fast", "max"), default="fast",
                   help="realtime: the pace of real dealers and players (pauses of about a second between "
                        "acts, a round every 15 to 20 s, a shuffle takes 3 s), to watch on the dashboard; "
                        "fast (the default): the same rounds with pauses of a few hundredths of a second, "
                        "about a round a second; max: no pauses at all, as fast as the machine plays "
                        "(for tests and load). The speed changes the pace only: the same --seed settles "
                        "the same rounds at every speed")
    p.add_argument("--broker", metavar="URL", help="an MQTT broker (default: start the embedded one on 127.0.0.1)")
    p.add_argument("--cluster", type=int, default=0, metavar="N",
                   help="run the pit on a NATS cluster of N nodes (3) started in <state-dir>/cluster instead of the "
                        "embedded broker (docs/floor.md); needs the floor extra")
    p.add_argument("--cluster-dir", type=Path, default=None, metavar="DIR",
                   help="with --cluster: the cluster configured in DIR and run by someone else (tablectl soak "
                        "--cluster, which kills and restarts its nodes); the demo neither starts nor stops it, "
                        "and runs no recorder (its runner does: tablectl soak --recorder)")
    p.add_argument("--first-table", type=int, default=1, metavar="N",
                   help="the tables are tN onwards (default 1: t01...): several demos sharing one floor")
    p.add_argument("--port", type=int, default=None, metavar="N",
                   help="the embedded broker's MQTT port (default: a free port); not with --broker")
    p.add_argument("--ws-port", type=int, default=None, metavar="N",
                   help="the embedded broker's WebSockets port (default: a free port); not with --broker")
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
    p.add_argument("--chaos-seed", type=int, default=None, metavar="S",
                   help="inject device faults drawn from S (cables pulled, noisy lines, jams): what tablectl soak runs")
    p.add_argument("--journal-sync", choices=("FULL", "NORMAL"), type=str.upper, default="FULL",
                   help="FULL (default) fsyncs every journal commit and survives a power cut; NORMAL survives "
                        "a killed process, not a power cut, and plays faster: for soaks and benches only")
    p.add_argument("--shuffler", default="good", metavar="KIND",
                   help="the simulated shuffling machine: good (the default), weak (a broken one-pass machine: "
                        "the discards cut once and riffled together once; the shuffle-quality alarm comes within "
                        "3 shoes) or clumpy (cards stick in clumps of 2-3, a milder fault)")
    p.add_argument("--counter-spot", type=int, default=None, metavar="N",
                   help="seat a card counter at spot N of every table: Hi-Lo, 1 to 12 table minimums on the true "
                        "count, the Illustrious 18; tablectl report flags the spot (docs/analytics.md)")
    p.add_argument("--carded", type=int, default=5, metavar="N",
                   help="seat N carded players (0 to 5) at every table, with a player card in their spot's reader: "
                        "rated play (docs/ratings.md); most play basic strategy, some never double, stand on 12-16 "
                        "against high cards or take insurance (default 5)")
    p.add_argument("--adopt-journal", action="store_true",
                   help="resume journals no witness vouches for (no anchor, no broker state): with --operator "
                        "and --reason, journaled (docs/journal.md)")
    p.add_argument("--operator", metavar="NAME", help="who adopts the journals (a pit user name)")
    p.add_argument("--reason", metavar="TEXT", help="why the journals are adopted")
    p.set_defaults(func=run)


def _raise_open_files_limit() -> None:
    """A pit of hundreds of simulated tables holds thousands of descriptors: take the hard limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))


def run(args: argparse.Namespace) -> int:
    from controller.cli.run import adoption
    from controller.floor.embedded_broker import BrokerStartError
    from controller.journal import JournalError
    from controller.selfcheck.gate import check_at_start
    from controller.service.logs import configure_logging
    from controller.sim.demo import DemoOptions, run_demo
    from controller.sim.demo_resume import DemoOptionsDiffer

    check_at_start()  # the certified program, before any device opens (DESIGN "Program authentication")
    args.new_journal = False
    adopt = adoption(args)
    if not 1 <= args.tables <= MAX_TABLES:
        raise UsageError(f"--tables {args.tables}: between 1 and {MAX_TABLES}")
    if args.rounds is not None and args.rounds < 0:
        raise UsageError(f"--rounds {args.rounds}: zero or more")
    if not args.prefix or any(c in args.prefix for c in "+#") or args.prefix.startswith("/"):
        raise UsageError(f"--prefix {args.prefix!r}: a topic prefix without wildcards or a leading '/'")
    if not 0.05 <= args.tick_every <= 3600:
        raise UsageError(f"--tick-every {args.tick_every:g}: between 0.05 and 3600 seconds")
    check_broker_url(args.broker)
    from simulators.shuffler import SHUFFLERS

    if args.shuffler not in SHUFFLERS:
        raise UsageError(f"--shuffler {args.shuffler!r}: one of {', '.join(SHUFFLERS)}")
    if args.counter_spot is not None and args.counter_spot < 1:
        raise UsageError(f"--counter-spot {args.counter_spot}: a spot number, 1 or more")
    if args.cluster and not 1 <= args.cluster <= 9:
        raise UsageError(f"--cluster {args.cluster}: nodes of the cluster, 1 to 9 (3 survives a node lost)")
    if args.cluster and (args.broker is not None or args.port is not None or args.ws_port is not None):
        raise UsageError("--cluster: the pit runs on the cluster it starts; not with --broker, --port or --ws-port")
    if not 1 <= args.first_table <= 999:
        raise UsageError(f"--first-table {args.first_table}: between 1 and 999")
    if args.cluster_dir is not None and not args.cluster:
        raise UsageError("--cluster-dir: only with --cluster N")
    if args.cluster_dir is not None and not (args.cluster_dir / "cluster.toml").is_file():
        raise UsageError(f"--cluster-dir {args.cluster_dir}: no cluster.toml (tablectl broker-config --engine nats)")
    if not 0 <= args.carded <= 5:
        raise UsageError(f"--carded {args.carded}: 0 to 5 carded players")
    if args.broker is not None:
        given = [f"--{name.replace('_', '-')}" for name in ("port", "ws_port") if getattr(args, name) is not None]
        if given:
            raise UsageError(f"{' and '.join(given)}: the embedded broker's ports, not used with --broker")
    for name in ("port", "ws_port"):
        port = getattr(args, name)
        if port is not None and not 1 <= port <= 65535:
            raise UsageError(f"--{name.replace('_', '-')} {port}: a TCP port, 1 to 65535")
    if args.port is not None and args.port == args.ws_port:
        raise UsageError(f"--port and --ws-port {args.port}: the MQTT and WebSockets listeners need two ports")
    try:
        rules = load_rules(args.profile)
    except ProfileError as e:
        raise UsageError(str(e)) from None
    if args.counter_spot is not None and args.counter_spot > rules.spots:
        raise UsageError(f"--counter-spot {args.counter_spot}: {rules.name} has spots 1 to {rules.spots}")
    if args.state_dir is not None and args.state_dir.exists() and not args.state_dir.is_dir():
        raise UsageError(f"--state-dir {args.state_dir}: not a directory")
    opts = DemoOptions(
        rules=rules, tables=args.tables, rounds=args.rounds, seed=args.seed, speed=args.speed, broker=args.broker,
        state_dir=args.state_dir, prefix=args.prefix, dashboard=not args.no_dashboard,
        dashboard_port=args.dashboard_port, quiet=args.quiet, tick_every=args.tick_every,
        broker_port=args.port, broker_ws_port=args.ws_port, chaos_seed=args.chaos_seed,
        journal_sync=args.journal_sync, shuffler=args.shuffler, counter_spot=args.counter_spot, adopt=adopt,
        cluster=args.cluster, cluster_dir=args.cluster_dir, carded=args.carded,
        first_table=args.first_table,
    )
    configure_logging(args.log_level, fmt=args.log_format)
    _raise_open_files_limit()
    try:
        return asyncio.run(run_demo(opts))
    except JournalError as e:  # a --state-dir another demo is using, a journal no witness vouches for
        raise UsageError(str(e)) from None
    except BrokerStartError as e:  # --port / --ws-port taken
        raise UsageError(str(e)) from None
    except DemoOptionsDiffer as e:  # a resume with another --seed or --shuffler than the state dir's
        raise UsageError(str(e)) from None
    except ValueError as e:  # --cluster: a state dir whose cluster was written for other tables (ClusterError)
        from controller.floor.cluster import ClusterError

        if isinstance(e, ClusterError):
            raise UsageError(str(e)) from None
        raise
    except RuntimeError as e:  # --cluster: nats-server missing or a node that would not start
        from controller.floor.cluster import NatsNotInstalled
        from controller.floor.stream import StreamError

        if isinstance(e, NatsNotInstalled | StreamError) or str(e).startswith("nats-server"):
            print(f"tablectl demo: {str(e).splitlines()[0]}", file=sys.stderr)
            return 1
        raise
    finally:
        abandon_theory_work()  # the interpreter's exit joins the theory worker: leave it nothing to finish
