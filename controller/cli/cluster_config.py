"""``tablectl broker-config --engine nats``: the floor's cluster configuration (controller.floor.nats_config).

Node ``k`` (from 1) listens on each base port plus ``k - 1``: MQTT ``--port`` (1883), MQTT over WebSockets
``--ws-port`` (9001), routes ``--cluster-port`` (6222), NATS clients ``--client-port`` (4222).
"""

from __future__ import annotations

import argparse
import sys

from controller.cli import UsageError


def _names(values: list[str]) -> list[str]:
    return [n.strip() for arg in values for n in str(arg).split(",") if n.strip()]


def run_nats(args: argparse.Namespace) -> int:
    """Write DIR for ``--engine nats``; print where and how to start it."""
    from controller.floor.nats_config import NatsConfigError, consecutive_ports, write_nats_cluster

    if args.tls:
        raise UsageError("--tls with --engine nats: not yet; a floor's TLS is set up by hand (docs/floor.md)")
    if args.supervisor:
        raise UsageError("--supervisor: with --engine nats name each person's role: --pit, --surveillance, "
                         "--technician")
    if args.bind not in ("127.0.0.1", "localhost", "::1"):
        print(f"tablectl broker-config: warning: --bind {args.bind} without TLS: passwords and the pit's "
              "traffic cross the network in clear", file=sys.stderr)
    tables = [t.strip() for t in str(args.tables).split(",") if t.strip()]
    people = {role: _names(getattr(args, role)) for role in ("pit", "surveillance", "technician")}
    try:
        ports = consecutive_ports(args.nodes, mqtt=args.port or 1883, ws=args.ws_port or 9001,
                                  cluster=args.cluster_port, client=args.client_port)
        files = write_nats_cluster(args.dir, tables, prefix=args.prefix, people=people, nodes=args.nodes,
                                   ports=ports, bind=args.bind, force=args.force)
    except NatsConfigError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"--dir {args.dir}: cannot write: {e.strerror or e}") from None
    print(f"NATS cluster of {len(files.configs)} node(s) for {len(tables)} table(s) in {files.dir}")
    print(f"  start it:    tablectl cluster --dir {files.dir}   (one machine; see {files.readme})")
    print(f"  MQTT:        {','.join(files.mqtt_urls)} (tables: [mqtt] brokers = [...])")
    print(f"  WebSockets:  {','.join(files.ws_urls)} (dashboards)")
    print(f"  passwords:   {files.credentials} (mode 0600; each user needs only its own)")
    return 0
