"""``tablectl cluster --dir DIR``: run the floor's NATS nodes on this machine until Ctrl-C or SIGTERM.

``DIR`` is what ``tablectl broker-config --engine nats --nodes 3 --dir DIR ...`` wrote. The command starts
every node (:class:`controller.floor.cluster.NatsCluster`), waits until each serves MQTT, makes the
``TABLES`` stream of every table's events (:mod:`controller.floor.stream`), prints the addresses, and on
Ctrl-C or SIGTERM stops them all cleanly (exit 0). A node that exits on its own is reported on stderr;
the others go on (two of three keep the floor up). Nodes that listen without TLS on an address other than
loopback start only with ``--allow-plaintext``, warned at every start. For tests and the demo: a floor runs one
node per machine (docs/floor.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType
from typing import Any

from controller.cli import one_line_errors
from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "cluster",
        help="run the floor's NATS cluster (written by broker-config --engine nats) on this machine",
        description="Start every node of DIR, wait until each serves MQTT, stop them on Ctrl-C or SIGTERM.",
    )
    one_line_errors(p, "cluster")  # bad input: one line, exit 2
    p.add_argument("--dir", required=True, metavar="DIR", help="the cluster's configuration directory")
    p.add_argument("--allow-plaintext", action="store_true",
                   help="start nodes that listen without TLS on an address other than loopback (warned)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="seconds to wait for the nodes to serve MQTT (default 60)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from controller.floor.cluster import ClusterError, NatsCluster, NatsNotInstalled
    from controller.floor.nats_config import NatsConfigError, check_bind
    from controller.floor.stream import StreamError

    try:
        cluster = NatsCluster(args.dir)
    except ClusterError as exc:
        raise UsageError(str(exc)) from None
    except NatsNotInstalled as exc:
        print(f"tablectl cluster: {exc}", file=sys.stderr)
        return 1
    try:
        warning = check_bind(cluster.bind, tls=cluster.ca is not None, allow_plaintext=args.allow_plaintext)
    except NatsConfigError as exc:
        raise UsageError(f"{cluster.dir}: {exc}") from None
    if warning is not None:
        print(f"tablectl cluster: {warning}", file=sys.stderr, flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            cluster.start(timeout=args.timeout)
            info = asyncio.run(cluster.ensure_stream())
        except (RuntimeError, StreamError) as exc:
            print(f"tablectl cluster: {str(exc).splitlines()[0]}", file=sys.stderr)
            return 1
        print(f"cluster of {len(cluster.nodes)} node(s) from {cluster.dir} serves MQTT", flush=True)
        config = info.get("config", {})
        print(f"  stream {config.get('name')}: {', '.join(config.get('subjects', []))}, "
              f"{config.get('num_replicas')} replica(s)", flush=True)
        print(f"  MQTT:       {','.join(cluster.mqtt_urls)}", flush=True)
        print(f"  WebSockets: {','.join(cluster.ws_urls)}", flush=True)
        print("  Ctrl-C stops every node", flush=True)
        reported: set[str] = set()
        while not stop.wait(0.5):
            for name in cluster.revive_auth():
                print(f"tablectl cluster: the auth service beside node {name} exited; started again (see "
                      f"{cluster.dir / name / 'auth.log'})", file=sys.stderr, flush=True)
            for name in cluster.exited():
                if name not in reported:
                    reported.add(name)
                    print(f"tablectl cluster: node {name} exited: see {cluster.dir / name / 'nats.log'}",
                          file=sys.stderr, flush=True)
            if len(reported) == len(cluster.nodes):
                return 1
        return 0
    finally:
        cluster.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
