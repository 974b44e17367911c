"""The embedded MQTT broker of ``tablectl demo``: amqtt on 127.0.0.1, TCP and WebSockets.

How it works: :class:`EmbeddedBroker` builds an amqtt ``Broker`` inside the running event loop
(amqtt 0.12.1 needs that, and a listener named ``default``) with two listeners on loopback only:
``default`` (MQTT over TCP) and ``ws`` (MQTT over WebSockets, which mqtt.js in the dashboard
uses). Ports are given or picked free. Anonymous access, no persistence: it is the zero-setup
demo broker. Production and the integration tests use Mosquitto (see ``docs/mqtt.md``).

    async with EmbeddedBroker() as broker:
        print(broker.url, broker.ws_url)

Known amqtt 0.12.1 limits (DESIGN.md): MQTT 3.1.1 only; no last will when a client's keepalive
expires (only when its socket closes); a new client may be sent retained messages of topics other
sessions subscribed to (the publisher filters its command topics for that reason).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import re
import socket
import sys
from typing import Any

__all__ = ["BrokerStartError", "EmbeddedBroker", "free_port"]

HOST = "127.0.0.1"


class _ClientGone(logging.Filter):
    """Drops amqtt's, websockets' and asyncio's records about a client that went away (a browser tab closed).

    A tab that closes is a normal disconnect, yet amqtt 0.12.1 logs it in three ways (seen with Chromium
    on the demo's dashboard): a WebSockets client that closes while a message is on its way to it as an
    "Unhandled exception" warning and a "Task failed" error with the websockets traceback
    (``ConnectionClosedOK: received 1001 (going away)``); the task that was sending it, never awaited, as
    asyncio's "Task exception was never retrieved" with the same traceback when it is collected; and a
    client whose socket closes before its first packet (a tab closed while connecting, a port check) as
    the ERROR "No data from ...: No data to decode MQTT packet fixed header" and a "Failed to initialize
    client session" warning. Those records are recognised by the exception they carry or are logged from
    (a filter runs inside the ``except`` block that logs), following its causes; asyncio's only when that
    exception was raised in the broker's own code (amqtt, websockets), so a task of the table's failing
    the same way still shows, as does any other broker warning or error.
    """

    #: the loggers that report a client's going away as a warning or an error
    LOGGERS = ("amqtt.broker", "amqtt.mqtt.protocol.handler", "amqtt.adapters", "websockets.server", "asyncio")
    #: where a record of the ``asyncio`` logger must have been raised to be the broker's
    BROKER_CODE = ("amqtt", "websockets")

    def __init__(self) -> None:
        super().__init__()
        from amqtt.errors import NoDataError  # the peer closed: a read found no data
        from websockets.exceptions import ConnectionClosed  # amqtt's WebSockets listener depends on it

        self.gone: tuple[type[BaseException], ...] = (ConnectionClosed, ConnectionResetError, BrokenPipeError,
                                                      NoDataError)

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        seen: set[int] = set()
        while exc is not None and id(exc) not in seen:
            if isinstance(exc, self.gone):
                return record.name == "asyncio" and not _raised_in(exc, self.BROKER_CODE)
            seen.add(id(exc))
            exc = exc.__cause__ or exc.__context__
        return True

    @classmethod
    def install(cls) -> None:
        """On each of :attr:`LOGGERS`, once."""
        for name in cls.LOGGERS:
            logger = logging.getLogger(name)
            if not any(isinstance(f, cls) for f in logger.filters):
                logger.addFilter(cls())


def _raised_in(exc: BaseException, packages: tuple[str, ...]) -> bool:
    """Whether a frame of ``exc``'s traceback runs code of one of ``packages`` (top-level names)."""
    tb = exc.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if isinstance(module, str) and module.split(".")[0] in packages:
            return True
        tb = tb.tb_next
    return False


def _startup_failure(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Broker startup failed")


class BrokerStartError(RuntimeError):
    """The embedded broker could not start (port in use, ...)."""


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux: ``ip_local_port_range``; 32768 elsewhere)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def stable_port(host: str = HOST) -> int:
    """A free TCP port below the kernel's ephemeral range, for a broker that stops and starts again on it
    (a soak's outages): no program asking for any free port, and no outgoing connection, can be handed it
    while the broker is down, as happened to a soak at 35,000 rounds ("Address already in use")."""
    low = _ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(max(1024, low // 2), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    return free_port(host)


def _free_port_but(taken: int | None, host: str) -> int:
    port = free_port(host)
    while port == taken:
        port = free_port(host)
    return port


class EmbeddedBroker:
    """amqtt on loopback with a TCP and a WebSockets listener; start/stop inside the running loop."""

    def __init__(self, *, port: int | None = None, ws_port: int | None = None, host: str = HOST) -> None:
        self.host = host
        self.port = port if port is not None else _free_port_but(ws_port, host)
        self.ws_port = ws_port if ws_port is not None else _free_port_but(self.port, host)
        self._broker: Any = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.ws_port}"

    @property
    def running(self) -> bool:
        return self._broker is not None

    def config(self) -> dict[str, Any]:
        return {
            "listeners": {
                "default": {"type": "tcp", "bind": f"{self.host}:{self.port}"},
                "ws": {"type": "ws", "bind": f"{self.host}:{self.ws_port}"},
            },
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True},
            },
        }

    async def start(self) -> None:
        """Open both listeners; raises :class:`BrokerStartError` with the reason."""
        if self._broker is not None:
            return
        try:
            from amqtt.broker import Broker  # imported lazily: only the demo pays for it
        except ImportError:  # a table PC's install has no demo broker (it is the [demo] extra)
            raise BrokerStartError("the embedded demo broker is not installed: pip install "
                                   "'blackjack-table-controller[demo]', or give --broker URL") from None

        # amqtt logs every packet and connection at INFO/DEBUG; keep the demo's console readable.
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        _ClientGone.install()  # a closed browser tab is no broker error
        broker = Broker(self.config())
        amqtt_log = logging.getLogger("amqtt.broker")
        amqtt_log.addFilter(_startup_failure)  # its traceback: the BrokerStartError below says it in a line
        try:
            await broker.start()
        except Exception as exc:
            raise BrokerStartError(self._start_failure(exc.__cause__ or exc)) from exc
        finally:
            amqtt_log.removeFilter(_startup_failure)
        self._broker = broker

    def _start_failure(self, cause: BaseException) -> str:
        """One line: which listener could not open, and why (``address already in use``)."""
        text = str(cause)
        bound = re.search(r"\('[^']*', (\d+)\)", text)  # asyncio names the address it could not bind
        where = f"{self.host}, ports {self.port} (MQTT) and {self.ws_port} (WebSockets)"
        if bound and int(bound.group(1)) in (self.port, self.ws_port):
            port = int(bound.group(1))
            where = f"{self.host}:{port} ({'MQTT' if port == self.port else 'WebSockets'})"
            text = text.rsplit("): ", 1)[-1]
        elif isinstance(cause, OSError) and cause.strerror:
            text = cause.strerror
        return f"embedded MQTT broker cannot listen on {where}: {text}"

    async def stop(self) -> None:
        """Close the listeners and every client connection."""
        broker, self._broker = self._broker, None
        if broker is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(broker.shutdown(), 5.0)

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
