"""The pit dashboard's HTTP server (``tablectl dashboard``, ``tablectl demo``): ``controller/web/`` on 127.0.0.1.

The dashboard is a static page that talks to the broker itself over MQTT WebSockets, so this
server only hands out files: everything in ``controller/web/`` (package data), ``mqtt.min.js``
being the mqtt.js browser bundle vendored in ``web/vendor/``. It also answers
``/config.json`` with the brokers and prefix given here: the page connects only to those brokers (``?broker=``
in the printed URL may pick among them; any other is ignored, with a note on the page), and the
Content-Security-Policy's ``connect-src`` names exactly them, so a link cannot send a login elsewhere.

:func:`serve_dashboard` runs the same server on a background thread, for ``tablectl demo`` and
the browser tests: it returns the URL to open and a ``stop()`` callable.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode, urlsplit

from controller.errors import UsageError

#: the page's files, shipped in the package (a pip-installed ``tablectl dashboard`` needs no npm)
WEB_DIR = Path(__file__).resolve().parents[1] / "web"
#: mqtt.js's browser bundle, vendored: the version ``package.json`` names (``make vendor`` refreshes it)
MQTT_JS = WEB_DIR / "vendor" / "mqtt.min.js"

DEFAULT_PORT = 8090
DEFAULT_BROKER_WS = "ws://127.0.0.1:9001"
DEFAULT_PREFIX = "tables"
HOST = "127.0.0.1"

def content_security_policy(brokers: list[str]) -> str:
    """The page's policy: its own files, and connections to itself and the brokers it was given, nowhere else."""
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self' {' '.join(brokers)}; worker-src 'self' blob:; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'")


class Dashboard(NamedTuple):
    """A running dashboard server: the URL to open and how to stop it."""

    url: str
    stop: Callable[[], None]


def check_broker_ws(url: str) -> str:
    """Return ``url`` if it is a ``ws://`` or ``wss://`` address with a host (or a comma-separated list of
    them: the nodes of a floor's cluster, tried in turn), else raise UsageError."""
    if "," in url:
        for one in url.split(","):
            check_broker_ws(one.strip())
        return url
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname or any(c in url for c in " \t;'\"") \
            or parts.username is not None:  # written into the page's policy as it is; no login in it
        raise UsageError(f"--broker-ws {url!r}: expected a WebSockets URL such as ws://127.0.0.1:9001")
    try:
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise UsageError(f"--broker-ws {url!r}: bad port") from None
    return url


def check_prefix(prefix: str) -> str:
    """Return the topic prefix if it can sit in front of ``/<table>/state``, else raise UsageError."""
    if not prefix or prefix.startswith("/") or prefix.endswith("/") or any(c in prefix for c in "+#\0"):
        raise UsageError(
            f"--prefix {prefix!r}: a topic prefix such as 'tables' (no wildcards, no leading or trailing '/')"
        )
    return prefix


def broker_list(broker_ws: str) -> list[str]:
    """The brokers of ``--broker-ws`` (one, or a cluster's nodes, comma-separated), in order."""
    return [u.strip() for u in broker_ws.split(",") if u.strip()]


def _handler_class(web_dir: Path, mqtt_js: Path, config: bytes, csp: str) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        """Static files from ``web_dir``; ``/mqtt.min.js`` and ``/config.json`` mapped in."""

        extensions_map = {  # noqa: RUF012 - the stdlib declares it as a plain class attribute
            **SimpleHTTPRequestHandler.extensions_map,
            ".js": "text/javascript",
            ".mjs": "text/javascript",
            ".css": "text/css",
            ".html": "text/html; charset=utf-8",
            ".json": "application/json",
        }

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(web_dir), **kwargs)

        def translate_path(self, path: str) -> str:
            if urlsplit(path).path == "/mqtt.min.js":
                return str(mqtt_js)
            return super().translate_path(path)

        def do_GET(self) -> None:
            if urlsplit(self.path).path == "/config.json":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(config)))
                self.end_headers()
                self.wfile.write(config)
                return
            super().do_GET()

        def list_directory(self, path: str | os.PathLike[str]) -> None:
            self.send_error(404, "No directory listings")
            return None

        def end_headers(self) -> None:
            self.send_header("Cache-Control", "no-cache")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Content-Security-Policy", csp)
            super().end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    """The stdlib's threading server, quiet about a client gone: a tab closed while a file was on its way
    fails the socket's write (broken pipe, reset), which ``socketserver`` prints with a traceback on the
    demo's console. Any other error of a request is still printed."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # BrokenPipe, ConnectionReset, ConnectionAborted
            return
        super().handle_error(request, client_address)


def dashboard_url(port: int, broker_ws: str, prefix: str, host: str = HOST) -> str:
    """The address to open: the page with the broker and prefix in its query."""
    return f"http://{host}:{port}/?{urlencode({'broker': broker_ws, 'prefix': prefix})}"


def serve_dashboard(
    port: int = 0,
    broker_ws: str = DEFAULT_BROKER_WS,
    prefix: str = DEFAULT_PREFIX,
    *,
    host: str = HOST,
    web_dir: Path = WEB_DIR,
    mqtt_js: Path = MQTT_JS,
) -> Dashboard:
    """Serve the dashboard on ``host:port`` (0 = a free port) from a daemon thread.

    Raises :class:`UsageError` for a bad broker URL or prefix, :class:`FileNotFoundError` when
    ``web/`` or the mqtt.js bundle is missing (run ``make setup``), :class:`OSError` when the
    port cannot be bound.
    """
    check_broker_ws(broker_ws)
    check_prefix(prefix)
    if not (web_dir / "index.html").is_file():
        raise FileNotFoundError(f"dashboard files not found: {web_dir / 'index.html'}")
    if not mqtt_js.is_file():
        raise FileNotFoundError(f"mqtt.js browser bundle not found: {mqtt_js} (a broken install: reinstall, "
                                "or `make vendor` in a checkout)")
    brokers = broker_list(broker_ws)
    config = json.dumps({"broker": ",".join(brokers), "brokers": brokers, "prefix": prefix}).encode()
    server = _Server((host, port), _handler_class(web_dir, mqtt_js, config, content_security_policy(brokers)))
    server.daemon_threads = True
    thread = threading.Thread(
        target=partial(server.serve_forever, poll_interval=0.2), name="dashboard-http", daemon=True
    )
    thread.start()
    stopped = threading.Lock()

    def stop() -> None:
        if not stopped.acquire(blocking=False):
            return
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return Dashboard(dashboard_url(server.server_address[1], broker_ws, prefix, host), stop)
