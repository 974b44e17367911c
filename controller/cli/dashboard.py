"""``tablectl dashboard``: serve the pit dashboard on 127.0.0.1 until Ctrl-C (the server:
:mod:`controller.dashboard.server`)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from controller.dashboard.server import DEFAULT_BROKER_WS, DEFAULT_PORT, DEFAULT_PREFIX, HOST, serve_dashboard
from controller.errors import UsageError


def register(sub: Any) -> None:
    """Add ``tablectl dashboard`` to the CLI."""
    p = sub.add_parser(
        "dashboard",
        help="serve the pit dashboard on 127.0.0.1",
        description="Serve the pit dashboard (a static page that subscribes to the broker over MQTT WebSockets).",
    )
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"HTTP port on 127.0.0.1 (default {DEFAULT_PORT}; 0: a free one)"
    )
    p.add_argument(
        "--broker-ws",
        default=DEFAULT_BROKER_WS,
        metavar="URL",
        help=f"the broker's WebSockets listener (default {DEFAULT_BROKER_WS}); a cluster: URL,URL,URL",
    )
    p.add_argument("--prefix", default=DEFAULT_PREFIX, help=f"topic prefix of the tables (default {DEFAULT_PREFIX})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM; 0 on a clean stop, 1 when the server cannot start."""
    port: int = args.port
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: expected 0 to 65535")
    done = threading.Event()
    # Ctrl-C and SIGTERM both mean "stop cleanly", from the first moment (not only once serving).
    previous = {sig: signal.signal(sig, lambda _sig, _frame: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            dash = serve_dashboard(port, args.broker_ws, args.prefix)
        except FileNotFoundError as e:
            print(f"tablectl dashboard: {e}", file=sys.stderr)
            return 1
        except OSError as e:
            print(f"tablectl dashboard: cannot listen on {HOST}:{port}: {e.strerror or e}", file=sys.stderr)
            return 1
        try:
            print(f"Pit dashboard: {dash.url}", flush=True)
            print(f"(broker {args.broker_ws}, prefix {args.prefix}; Ctrl-C to stop)", file=sys.stderr, flush=True)
            while not done.wait(0.5):
                pass
        finally:
            dash.stop()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
