"""The async device interface every driver shares, and the serial-device machinery.

Shape (the same for every device)::

    async with ShoeDriver(ShoeConfig(port="/dev/ttyUSB0")) as shoe:
        async for event in shoe.events():
            ...
        await shoe.request_peek("A")
        shoe.health

:class:`SerialDriver` owns the port and a :class:`drivers.link.Link`; a device
subclass only decodes its messages (``_decode``) and adds command methods. The
port is opened in ``__aenter__`` (raising :class:`PortNotFound` /
:class:`PortBusy` at once); afterwards a pulled cable or a silent device makes
the health ``lost`` and the driver reopens the port with backoff, forever,
until closed. Messages queued while the link is down are sent when it is back.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import struct
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import ClassVar, Self

from drivers.backoff import Backoff
from drivers.config import SerialConfig
from drivers.errors import DeviceError, LinkLost, VersionMismatch
from drivers.events import DeviceEvent, Health, HealthChanged, LinkStarted
from drivers.link import ROLE_HOST, Link, LinkDown, LinkFault, LinkTiming, LinkUp, Message
from drivers.timer import rearm
from drivers.transport import open_serial

log = logging.getLogger(__name__)

#: Opens a port and connects a protocol to it (the default is :func:`drivers.transport.open_serial`).
Opener = Callable[[str, int, asyncio.Protocol], Awaitable[asyncio.Transport]]

#: Bad segments + retransmits per second at which the link counts as degraded.
DEGRADED_ERRORS_PER_S = 5


class _Protocol(asyncio.Protocol):
    def __init__(self, driver: SerialDriver) -> None:
        self._driver = driver
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._driver._on_bytes(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._driver._on_lost(self, exc)


class Device(ABC):
    """What every device offers: open/close, an event stream and a health state."""

    device: ClassVar[str] = "device"

    def __init__(self) -> None:
        self._queue: asyncio.Queue[DeviceEvent | None] = asyncio.Queue()
        self._listener: Callable[[DeviceEvent], None] | None = None
        self._health = Health.CLOSED
        self._health_reason = ""

    @property
    def health(self) -> Health:
        """Current health, for the service to publish."""
        return self._health

    @property
    def health_reason(self) -> str:
        """Why the health is what it is (empty when ok)."""
        return self._health_reason

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @abstractmethod
    async def open(self) -> None:
        """Open the device; raises :class:`DeviceError` subclasses if the port is unusable."""

    @abstractmethod
    async def close(self) -> None:
        """Stop, release the port, end :meth:`events`."""

    async def events(self) -> AsyncIterator[DeviceEvent]:
        """Every event in order, until the device is closed."""
        while True:
            event = await self._queue.get()
            if event is None:
                return
            yield event

    def listen(self, listener: Callable[[DeviceEvent], None] | None) -> None:
        """Hand every event to ``listener`` as it is decoded instead of queueing it for :meth:`events`
        (``None``: back to the queue). Events already queued go to the listener first, in order.

        For :class:`drivers.group.DeviceGroup`: a card reaches the service one loop turn sooner
        than through a task reading :meth:`events`. The listener runs inside the driver's read
        callback, after the frame's ACK is written: it must never raise, and the time it takes (the
        table service journals the input there) is the callback's.
        """
        self._listener = listener
        if listener is not None:
            while not self._queue.empty():
                queued = self._queue.get_nowait()
                if queued is not None:
                    listener(queued)

    def _emit(self, event: DeviceEvent) -> None:
        if self._listener is not None:
            self._listener(event)
        else:
            self._queue.put_nowait(event)

    def _set_health(self, health: Health, reason: str = "") -> None:
        if health == self._health and reason == self._health_reason:
            return
        if health == self._health and health != Health.LOST:
            return
        self._health = health
        self._health_reason = reason
        self._emit(HealthChanged(self.device, health, reason))


class SerialDriver(Device):
    """A device on the shared serial framing; subclasses implement :meth:`_decode`."""

    role: ClassVar[int] = 0

    def __init__(
        self, config: SerialConfig, *, timing: LinkTiming | None = None, opener: Opener | None = None
    ) -> None:
        super().__init__()
        self.config = config
        self._timing = timing or LinkTiming()
        self._opener: Opener = opener or open_serial
        self._link: Link | None = None
        self._proto: _Protocol | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ready = asyncio.Event()
        self._closing = False
        self._reconnect_task: asyncio.Task[None] | None = None
        self._opened_at = 0.0
        self._sample_at = 0.0
        self._sample_errors = 0
        self.version: int | None = None
        self.fault: str | None = None

    # -- public ---------------------------------------------------------------
    @property
    def link(self) -> Link:
        """The link state machine (stats for the monitor)."""
        if self._link is None:
            raise DeviceError(f"{self.device} driver is not open")
        return self._link

    async def open(self) -> None:
        """Open the port and start the link; raises PortNotFound / PortBusy / DeviceError."""
        loop = asyncio.get_running_loop()
        self._closing = False
        self._link = Link(
            role=ROLE_HOST,
            initiator=True,
            session=secrets.randbits(32),
            now=loop.time(),
            peer_role=self.role,
            timing=self._timing,
        )
        await self._connect()

    async def close(self) -> None:
        """Close the port and end the event stream."""
        self._closing = True
        if self._reconnect_task is not None:
            self._reconnect_task.cancel()
            await asyncio.gather(self._reconnect_task, return_exceptions=True)
            self._reconnect_task = None
        self._cancel_timer()
        self._drop_transport()
        self._ready.clear()
        self._set_health(Health.CLOSED)
        self._queue.put_nowait(None)

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until the link is up; :class:`LinkLost` after ``timeout`` seconds."""
        if self.fault is not None:
            raise VersionMismatch(self.fault)
        try:
            await asyncio.wait_for(self._ready.wait(), timeout)
        except TimeoutError:
            raise LinkLost(f"{self.device} on {self.config.port}: link not up after {timeout:g} s") from None

    @property
    def ready(self) -> bool:
        """Whether the link is up right now."""
        return self._ready.is_set()

    # -- for subclasses -------------------------------------------------------------
    @abstractmethod
    def _decode(self, mtype: int, payload: bytes) -> Iterable[DeviceEvent]:
        """Turn one delivered message into events (may also resolve pending requests)."""

    def _on_link_up(self) -> None:
        """Hook: the link just came up (e.g. start polling)."""

    async def _command(self, mtype: int, payload: bytes = b"") -> None:
        """Queue a command once the link is up (waits up to ``request_timeout_s``)."""
        await self.wait_ready(self.config.request_timeout_s)
        link = self.link
        link.send(mtype, payload, asyncio.get_running_loop().time())
        self._flush()

    # -- machinery ----------------------------------------------------------------
    async def _connect(self) -> None:
        proto = _Protocol(self)
        await self._opener(self.config.port, self.config.baud, proto)
        if self._closing:
            if proto.transport is not None:
                proto.transport.close()
            return
        self._proto = proto
        now = asyncio.get_running_loop().time()
        self._opened_at = now
        self.link.restart(now)
        if self.fault is None:
            if self._health == Health.LOST:  # still lost until the device answers
                self._set_health(Health.LOST, f"{self.config.port} reopened, waiting for the device")
            else:
                self._set_health(Health.CONNECTING, f"{self.config.port} open, waiting for the device")
        self._flush()

    def _drop_transport(self) -> None:
        proto, self._proto = self._proto, None
        if proto is not None and proto.transport is not None:
            proto.transport.close()

    def _on_bytes(self, proto: _Protocol, data: bytes) -> None:
        if proto is not self._proto or self._link is None:
            return
        self._link.receive_data(data, asyncio.get_running_loop().time())
        self._flush()

    def _on_lost(self, proto: _Protocol, exc: Exception | None) -> None:
        if proto is not self._proto or self._closing:
            return
        self._proto = None
        self._lost(f"port closed: {exc}" if exc else "port closed")

    def _lost(self, reason: str) -> None:
        self._ready.clear()
        self._drop_transport()
        if self.fault is None:
            self._set_health(Health.LOST, reason)
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff(self.config.reconnect_min_s, self.config.reconnect_max_s)
        while not self._closing:
            await asyncio.sleep(backoff.next())
            try:
                await self._connect()
                if self._proto is not None:
                    return
            except DeviceError as e:
                if self.fault is None:
                    self._set_health(Health.LOST, f"reconnecting: {e}")

    def _flush(self) -> None:
        link = self._link
        if link is None:
            return
        self._write_out(link)  # the ACKs of the frames just read, before their events are taken (a slow input)
        while (ev := link.next_event()) is not None:
            if isinstance(ev, Message):
                try:
                    for event in self._decode(ev.mtype, ev.payload):
                        self._emit(event)
                except (ValueError, IndexError, struct.error) as e:
                    log.warning("%s: bad payload for type 0x%02X: %s", self.device, ev.mtype, e)
            elif isinstance(ev, LinkUp):
                self.version = ev.version
                self.fault = None
                self._ready.set()
                self._emit(LinkStarted(self.device, ev.version, ev.session))
                self._set_health(Health.OK)
                self._on_link_up()
            elif isinstance(ev, LinkDown):
                self._lost(ev.reason)
            elif isinstance(ev, LinkFault):
                self.fault = ev.reason
                self._set_health(Health.FAULT, ev.reason)
        self._write_out(link)
        self._schedule(link)

    def _write_out(self, link: Link) -> None:
        """Write what the link has to send (ACKs, NAKs, commands, heartbeats), if the port is open."""
        out = link.data_to_send()
        if out and self._proto is not None and self._proto.transport is not None:
            self._proto.transport.write(out)

    def _schedule(self, link: Link) -> None:
        if self._closing or self._proto is None:
            return
        self._timer = rearm(self._timer, link.next_deadline(), self._on_timer)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _on_timer(self) -> None:
        self._timer = None
        link = self._link
        if link is None or self._proto is None:
            return
        now = asyncio.get_running_loop().time()
        link.poll(now)
        self._sample_health(now)
        self._flush()
        if self._proto is not None and not link.up and now - self._opened_at > self._timing.dead_after:
            # No HELLO answer on this port: reopen it (the link may point to a new tty).
            self._lost(f"no answer from the device for {self._timing.dead_after:g} s")

    def _sample_health(self, now: float) -> None:
        link = self._link
        if link is None or not link.up or now - self._sample_at < 1.0:
            return
        errors = link.stats.retransmits + link.stats.bad_segments
        rate = (errors - self._sample_errors) / (now - self._sample_at)
        self._sample_at, self._sample_errors = now, errors
        if rate >= DEGRADED_ERRORS_PER_S:
            self._set_health(Health.DEGRADED, f"{rate:.0f} retransmits/bad frames per second")
        elif self._health == Health.DEGRADED:
            self._set_health(Health.OK)
