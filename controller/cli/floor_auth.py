"""``tablectl floor-auth --dir DIR [--node NAME]``: the floor's auth callout service, beside a node.

Every node of the floor hands each MQTT connection to this service (:mod:`controller.floor.auth_service`):
it checks the password and refuses a client id reserved for another user (a table's, the recorder's). Run
one beside each node (a systemd unit on each of the three machines, docs/floor.md); ``tablectl cluster``
starts them itself. Runs until Ctrl-C or SIGTERM (exit 0); a ``DIR/auth`` missing or unusable exits 2 in one
line. Each refusal is logged (a warning naming the user, the client id and the rule).
"""

from __future__ import annotations

import argparse
from typing import Any

from controller.cli import one_line_errors
from controller.errors import UsageError


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "floor-auth",
        help="the floor's auth callout: checks each MQTT connection's password and client id",
        description="Answer the NATS nodes' authorization requests (DIR/auth, written by broker-config "
                    "--engine nats) until Ctrl-C or SIGTERM.",
    )
    one_line_errors(p, "floor-auth")
    p.add_argument("--dir", required=True, metavar="DIR", help="the cluster's configuration directory")
    p.add_argument("--node", metavar="NAME", help="the node beside which it runs: connected to it first")
    p.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from controller.floor.auth_service import AuthServiceError, ServiceConfig, serve
    from controller.service.logs import configure_logging

    try:
        ServiceConfig.load(args.dir)
    except AuthServiceError as exc:
        raise UsageError(str(exc)) from None
    configure_logging(args.log_level, fmt="text")
    try:
        asyncio.run(serve(args.dir, args.node))
    except AuthServiceError as exc:
        raise UsageError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    return 0
