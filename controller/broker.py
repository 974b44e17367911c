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
import socket
from typing import Any

__all__ = ["BrokerStartError", "EmbeddedBroker", "free_port"]

HOST = "127.0.0.1"


class BrokerStartError(RuntimeError):
    """The embedded broker could not start (port in use, ...)."""


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class EmbeddedBroker:
    """amqtt on loopback with a TCP and a WebSockets listener; start/stop inside the running loop."""

    def __init__(self, *, port: int | None = None, ws_port: int | None = None, host: str = HOST) -> None:
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.ws_port = ws_port if ws_port is not None else free_port(host)
        while self.ws_port == self.port:
            self.ws_port = free_port(host)
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
        from amqtt.broker import Broker  # imported lazily: only the demo pays for it

        # amqtt logs every packet and connection at INFO/DEBUG; keep the demo's console readable.
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        broker = Broker(self.config())
        try:
            await broker.start()
        except Exception as exc:
            cause = exc.__cause__ or exc
            raise BrokerStartError(
                f"embedded MQTT broker cannot listen on {self.host}:{self.port}/{self.ws_port}: {cause}"
            ) from exc
        self._broker = broker

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
