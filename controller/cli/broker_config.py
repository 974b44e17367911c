"""``tablectl broker-config``: write a ready Mosquitto configuration for a pit, with its roles.

    tablectl broker-config --dir DIR --tables t01,t02,... [--prefix P] [--port N] [--ws-port N]
                           [--pit NAME ...] [--surveillance NAME ...] [--technician NAME ...]
                           [--screens N] [--tls] [--bind ADDR] [--allow-plaintext]
                           [--user ACCOUNT] [--force]

Writes ``DIR/mosquitto.conf``, ``DIR/acl``, ``DIR/passwd`` and ``DIR/credentials.toml`` (mode
0600, the generated passwords), and with ``--tls`` a CA and the broker's certificate and key
(see :mod:`controller.mqtt.broker_config`). Then ``mosquitto -c DIR/mosquitto.conf`` starts a broker that
enforces the roles. Bad input: exit 2 with one line on stderr. No password is ever printed. A ``--bind`` other
than loopback without ``--tls`` is refused unless ``--allow-plaintext`` (then warned on stderr).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from controller.cli import one_line_errors
from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "broker-config",
        help="write a Mosquitto configuration for a pit (users, passwords, ACL, TLS)",
        description="Write DIR/mosquitto.conf, DIR/acl, DIR/passwd and DIR/credentials.toml (mode 0600): "
                    "tables write only their own topics, the screens read, each person sends its role's "
                    "commands under its own name only (DESIGN.md, 'Operators and roles').",
    )
    one_line_errors(p, "broker-config")  # bad input: one line, exit 2
    p.add_argument("--dir", required=True, metavar="DIR", help="where to write the files (created if missing)")
    p.add_argument("--tables", required=True, metavar="t01,t02,...", help="the table ids (each one's MQTT user)")
    p.add_argument("--prefix", default="tables", help="topic prefix of the tables (default tables)")
    p.add_argument("--port", type=int, default=None, metavar="N",
                   help="MQTT listener (default 1883; 8883 with --tls)")
    p.add_argument("--ws-port", type=int, default=None, metavar="N",
                   help="MQTT over WebSockets listener for the dashboard (default 9001; 9443 with --tls)")
    for option, what in (("--pit", "a pit supervisor (open, close, set_limits, decks_changed; acknowledges "
                                   "procedure and device alarms)"),
                         ("--surveillance", "a surveillance officer (acknowledges integrity and journal alarms, "
                                            "with a reason; reads the ratings)"),
                         ("--technician", "a technician (acknowledges device alarms)")):
        p.add_argument(option, action="append", default=[], metavar="NAME",
                       help=f"the user name of {what}: a-z 0-9 . _ -; repeat or comma-separate for several")
    p.add_argument("--screens", type=int, default=1, metavar="N",
                   help="pit screens, each with a user of its own: dashboard, dashboard-2, ... (default 1)")
    p.add_argument("--supervisor", action="append", default=[], help=argparse.SUPPRESS)
    p.add_argument("--tls", action="store_true",
                   help="make a CA and the broker's certificate; both listeners speak TLS (MQTT over TLS, WSS)")
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="listen address (default 127.0.0.1)")
    p.add_argument("--allow-plaintext", action="store_true",
                   help="allow listeners without TLS on a --bind other than loopback (passwords and the pit's "
                        "traffic in clear; warned)")
    p.add_argument("--user", default="", metavar="ACCOUNT",
                   help="the account Mosquitto runs as when started by root (default: whoever runs this; for "
                        "root, mosquitto, handed the files it reads; never root)")
    p.add_argument("--force", action="store_true", help="overwrite an earlier configuration (new passwords)")
    p.add_argument("--engine", choices=("mosquitto", "nats"), default="mosquitto",
                   help="mosquitto (one broker, the default) or nats (the floor's cluster: docs/floor.md)")
    p.add_argument("--nodes", type=int, default=3, metavar="N", help="--engine nats: nodes of the cluster (3)")
    p.add_argument("--cluster-port", type=int, default=6222, metavar="N",
                   help="--engine nats: node k's route listener is N+k-1 (default 6222)")
    p.add_argument("--client-port", type=int, default=4222, metavar="N",
                   help="--engine nats: node k's NATS client listener is N+k-1 (default 4222)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.engine == "nats":
        from controller.cli.cluster_config import run_nats

        return run_nats(args)
    from controller.mqtt.broker_config import BrokerConfigError, write_broker_config
    from controller.mqtt.plaintext import check_plaintext

    if args.supervisor:
        raise UsageError("--supervisor is gone: name each person with the role they hold, --pit, "
                         "--surveillance or --technician (DESIGN.md, 'Operators and roles')")
    tables = [t.strip() for t in str(args.tables).split(",") if t.strip()]

    def names(option: list[str]) -> list[str]:  # a blank name stays, to be refused by name
        return [n.strip() if n.strip() else n for arg in option for n in str(arg).split(",")]

    try:
        files = write_broker_config(args.dir, tables, prefix=args.prefix, port=args.port, ws_port=args.ws_port,
                                    pit=names(args.pit), surveillance=names(args.surveillance),
                                    technician=names(args.technician), screens=args.screens, tls=args.tls,
                                    bind=args.bind, user=args.user, force=args.force,
                                    allow_plaintext=args.allow_plaintext)
    except BrokerConfigError as e:
        raise UsageError(str(e)) from None
    except OSError as e:
        raise UsageError(f"--dir {args.dir}: cannot write: {e.strerror or e}") from None
    warning = check_plaintext(f"--bind {args.bind}", args.bind, tls=args.tls, allowed=True)
    if warning is not None:
        print(f"tablectl broker-config: {warning}", file=sys.stderr)
    roles = sorted(set(files.people.values()))
    counts = ", ".join(f"{sum(1 for r in files.people.values() if r == role)} {role}" for role in roles)
    print(f"Mosquitto configuration for {len(files.tables)} table(s), {len(files.screens)} screen(s)"
          f"{', ' + counts if counts else ''} in {files.dir}")
    print(f"  start it:    mosquitto -c {files.conf}")
    print(f"  listeners:   {files.mqtt_url} (tables, tools), {files.ws_url} (dashboard)")
    print(f"  passwords:   {files.credentials} (mode 0600; each user needs only its own)")
    if files.ca is not None:
        print(f"  clients verify the broker with {files.ca}")
    return 0
