"""``tablectl broker-config --engine nats``: the floor's cluster configuration (controller.floor.nats_config).

Node ``k`` (from 1) listens on each base port plus ``k - 1``: MQTT ``--port`` (1883; 8883 with ``--tls``), MQTT
over WebSockets ``--ws-port`` (9001; 9443 with ``--tls``), routes ``--cluster-port`` (6222), NATS clients
``--client-port`` (4222). With ``--tls`` every listener and route speaks TLS with the pit's own CA; without it, a
``--bind`` other than loopback only with ``--allow-plaintext`` (warned).
"""

from __future__ import annotations

import argparse
import sys

from controller.errors import UsageError


def _names(values: list[str]) -> list[str]:
    return [n.strip() for arg in values for n in str(arg).split(",") if n.strip()]


def run_nats(args: argparse.Namespace) -> int:
    """Write DIR for ``--engine nats``; print where and how to start it."""
    from controller.floor.nats_config import NatsConfigError, check_bind, consecutive_ports, write_nats_cluster

    if args.supervisor:
        raise UsageError("--supervisor is gone: name each person with the role they hold, --pit, "
                         "--surveillance or --technician (DESIGN.md, 'Operators and roles')")
    tables = [t.strip() for t in str(args.tables).split(",") if t.strip()]
    people = {role: _names(getattr(args, role)) for role in ("pit", "surveillance", "technician")}
    try:
        mqtt_base = args.port or (8883 if args.tls else 1883)  # as for Mosquitto: the usual TLS ports with --tls
        ws_base = args.ws_port or (9443 if args.tls else 9001)
        ports = consecutive_ports(args.nodes, mqtt=mqtt_base, ws=ws_base,
                                  cluster=args.cluster_port, client=args.client_port)
        files = write_nats_cluster(args.dir, tables, prefix=args.prefix, people=people, nodes=args.nodes,
                                   ports=ports, bind=args.bind, force=args.force, tls=args.tls,
                                   screens=args.screens, allow_plaintext=args.allow_plaintext)
        warning = check_bind(args.bind, tls=args.tls, allow_plaintext=args.allow_plaintext)
    except NatsConfigError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"--dir {args.dir}: cannot write: {e.strerror or e}") from None
    if warning is not None:
        print(f"tablectl broker-config: {warning}", file=sys.stderr)
    print(f"NATS cluster of {len(files.configs)} node(s) for {len(tables)} table(s) in {files.dir}")
    print(f"  start it:    tablectl cluster --dir {files.dir}   (one machine; see {files.readme})")
    print(f"  MQTT:        {','.join(files.mqtt_urls)} (tables: [mqtt] brokers = [...])")
    print(f"  WebSockets:  {','.join(files.ws_urls)} (dashboards)")
    print(f"  passwords:   {files.credentials} (mode 0600; each user needs only its own)")
    if files.ca is not None:
        print(f"  clients verify the nodes with {files.ca} (every listener and route speaks TLS)")
    return 0
