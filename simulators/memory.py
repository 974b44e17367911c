"""The ``sim:`` backend: a simulated device reached in-process, without a pty.

python-can's ``virtual`` bus, for serial devices: a simulator created with
``link="sim:NAME"`` registers itself under NAME, and a driver configured with
``port="sim:NAME"`` connects to it through an in-memory transport. The bytes,
codec, link, faults (corruption, pulled cable, silence) are exactly those of
the pty path; only the kernel is left out, so many tables run cheaply in one
loop. Delivery goes through ``loop.call_soon``, preserving order and never
re-entering the sender.

The names are one table for every in-process simulator: a serial one's
:class:`MemoryPort`, or a :class:`simulators.console.SimConsole` created with
``link="sim:NAME"`` (its own transport: the USB one, on its pyusb backend).
Anything with :meth:`Endpoint.accept` can be :func:`register`-ed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from drivers.errors import PortBusy, PortNotFound
from drivers.transport import log_once, register_transport

PREFIX = "sim:"


class Endpoint(Protocol):
    """What a ``sim:NAME`` reaches: takes a driver's protocol and gives it a connected transport."""

    async def accept(self, protocol: asyncio.Protocol) -> asyncio.Transport:
        """Connect ``protocol`` (PortBusy, PortNotFound... if it cannot be)."""
        ...


_PORTS: dict[str, Endpoint] = {}


def register(name: str, endpoint: Endpoint) -> None:
    """Reach ``endpoint`` as ``sim:NAME``; OSError if another simulator holds the name."""
    current = _PORTS.get(name)
    if current is not None and current is not endpoint:
        raise OSError(f"a simulator is already registered as {PREFIX}{name}")
    _PORTS[name] = endpoint


def unregister(name: str, endpoint: Endpoint) -> None:
    """Free ``sim:NAME`` if ``endpoint`` holds it."""
    if _PORTS.get(name) is endpoint:
        del _PORTS[name]


class MemoryTransport(asyncio.Transport):
    """The driver's end: writes go to the simulator, ``close`` detaches."""

    def __init__(self, port: MemoryPort, protocol: asyncio.Protocol) -> None:
        super().__init__()
        self._port = port
        self._protocol = protocol
        self._closing = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._closing:
            self._port._from_driver(bytes(data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._port._detach(self)
        asyncio.get_running_loop().call_soon(self._protocol.connection_lost, None)

    def _deliver(self, data: bytes) -> None:
        if not self._closing:
            try:
                self._protocol.data_received(data)
            except Exception as e:  # as the tty transport does: the driver reconnects, the cause is logged once
                log_once(f"{self._port.port}: the protocol failed on received bytes", e)
                self._port._detach(self)
                self._lose(e)

    def _lose(self, exc: Exception | None = None) -> None:
        if not self._closing:
            self._closing = True
            self._protocol.connection_lost(exc or ConnectionResetError("simulated cable pulled"))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._port.port if name == "port" else default


class MemoryPort:
    """The simulator's end; same surface as :class:`simulators.pty.PtyPort`."""

    def __init__(self, on_data: Callable[[bytes], None], *, link: str) -> None:
        self._on_data = on_data
        self.name = link[len(PREFIX) :] if link.startswith(PREFIX) else link
        self.link = link
        self.path: str | None = None
        self._transport: MemoryTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def port(self) -> str:
        """What a driver opens: ``sim:NAME``."""
        return PREFIX + self.name

    @property
    def is_open(self) -> bool:
        """Whether the cable is plugged in."""
        return self.path is not None

    def open(self) -> str:
        """Register under the name (plug the cable in)."""
        loop = asyncio.get_running_loop()
        register(self.name, self)
        self._loop = loop
        self.path = self.port
        return self.path

    def close(self, *, unlink: bool = True) -> None:
        """Unregister and drop the connected driver (a pulled cable)."""
        unregister(self.name, self)
        self.path = None
        transport, self._transport = self._transport, None
        if transport is not None:
            transport._lose()

    def write(self, data: bytes) -> None:
        """Bytes to the driver, delivered on the next loop iteration."""
        transport = self._transport
        if transport is not None and data and self._loop is not None:
            self._loop.call_soon(transport._deliver, data)

    def _from_driver(self, data: bytes) -> None:
        if self._loop is not None and self.path is not None:
            self._loop.call_soon(self._on_data, data)

    async def accept(self, protocol: asyncio.Protocol) -> asyncio.Transport:
        """A driver connects (PortBusy if one is already)."""
        return self._attach(protocol)

    def _attach(self, protocol: asyncio.Protocol) -> MemoryTransport:
        if self._transport is not None:
            raise PortBusy(self.port, "another driver is connected to this simulator")
        transport = MemoryTransport(self, protocol)
        self._transport = transport
        protocol.connection_made(transport)
        return transport

    def _detach(self, transport: MemoryTransport) -> None:
        if self._transport is transport:
            self._transport = None


async def connect(port: str, protocol: asyncio.Protocol) -> asyncio.Transport:
    """Connect ``protocol`` to the simulator registered as ``port`` (``sim:NAME``)."""
    name = port[len(PREFIX) :]
    sim = _PORTS.get(name)
    if sim is None:
        raise PortNotFound(port, "no simulator registered under that name")
    return await sim.accept(protocol)


async def open_transport(port: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
    """The ``sim:`` transport of every driver (:data:`drivers.transport.TRANSPORTS`): no baud rate in memory."""
    return await connect(port, protocol)


# the simulators register their transport from their own side (as python-can's virtual bus is one more
# interface): the drivers import nothing of them (pyproject's entry point ``tablectl.transports`` names this
# module, for a driver asked for a ``sim:`` port before any simulator was imported)
register_transport(PREFIX.rstrip(":"), open_transport)
