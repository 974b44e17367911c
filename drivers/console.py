"""Dealer console on USB HID, read with pyusb: report layout and the driver.

Input report (device -> host, interrupt IN endpoint 0x81, 8 bytes)::

    byte 0  report id 0x01
    byte 1  buttons held, bit 0..7 = no_more_bets, stand_next, double, split,
            surrender, insurance_closed, new_decks, alarm_ack
    byte 2  spot select keys held, bit 0..6 = spot 1..7
    byte 3  report counter (mod 256; a gap means reports were lost)
    byte 4-7  zero

Badge reports (device -> host, report id 0x03, the same counter): a badge swiped at the console's
badge reader, four characters a report, and its sign-out key (layout and reassembly: :mod:`drivers.badge`).

Output report (host -> device, interrupt OUT endpoint 0x01, 8 bytes)::

    byte 0  report id 0x02
    byte 1  button lights (same bit order as the buttons)
    byte 2  spot lights (bit 0..6 = spot 1..7)
    byte 3  alarm light: 0 off, 1 on, 2 blinking
    byte 4-7  zero

The console sends a report whenever what is held changes; the driver turns the
difference to the previous report into press/release events, bit order first.

The driver is a protocol over whatever transport its port names, chosen like every driver's
from :data:`drivers.transport.TRANSPORTS`: ``usb:VID:PID`` the device through libusb
(:mod:`drivers.usb`: pyusb, blocking, so reads and writes run in worker threads with a short
timeout), any other registered ``SCHEME:...`` that transport (the simulators register ``sim:NAME``,
a simulated console under NAME). A transport hands over one report per
``data_received`` and takes one per ``write``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import ClassVar, Final

from drivers.backoff import Backoff
from drivers.badge import REPORT_BADGE, BadgeAssembler
from drivers.base import Device, Opener
from drivers.config import ConsoleConfig
from drivers.errors import DeviceError
from drivers.events import Button, ButtonPressed, ButtonReleased, DeviceEvent, Health, SpotSelected
from drivers.plugins import Registry
from drivers.transport import TRANSPORTS, registered, scheme_of, transport_for
from drivers.usb import EP_IN, EP_OUT, REPORT_SIZE, SCHEME, open_usb, parse_usb_id, usb_id, usb_port

log = logging.getLogger(__name__)

REPORT_IN: Final = 0x01
REPORT_OUT: Final = 0x02
BUTTONS: Final[tuple[Button, ...]] = tuple(Button)
ALARM_OFF, ALARM_ON, ALARM_BLINK = 0, 1, 2
#: how long closing waits for the transport to send what was written and let go
CLOSE_WAIT_S: Final = 2.0
__all__ = [
    "ALARM_BLINK",
    "ALARM_OFF",
    "ALARM_ON",
    "BUTTONS",
    "EP_IN",
    "EP_OUT",
    "REPORT_IN",
    "REPORT_OUT",
    "REPORT_SIZE",
    "ConsoleDriver",
    "console_port",
    "decode_input",
    "decode_lights",
    "diff_reports",
    "encode_input",
    "encode_lights",
    "register_console",
]


def encode_input(buttons: int, spots: int, counter: int) -> bytes:
    """An input report (used by the simulator)."""
    return bytes((REPORT_IN, buttons & 0xFF, spots & 0x7F, counter & 0xFF, 0, 0, 0, 0))


def decode_input(report: bytes) -> tuple[int, int, int]:
    """``(buttons, spots, counter)`` of an input report; ValueError if it is not one."""
    if len(report) < 4 or report[0] != REPORT_IN:
        raise ValueError(f"not a console input report: {bytes(report).hex()}")
    return report[1], report[2] & 0x7F, report[3]


def encode_lights(buttons: Iterable[Button] = (), spots: Iterable[int] = (), alarm: int = ALARM_OFF) -> bytes:
    """An output report lighting ``buttons`` and ``spots``."""
    b = 0
    for button in buttons:
        b |= 1 << BUTTONS.index(button)
    s = 0
    for spot in spots:
        if not 1 <= spot <= 7:
            raise ValueError(f"spot must be 1..7, got {spot}")
        s |= 1 << (spot - 1)
    return bytes((REPORT_OUT, b, s, alarm, 0, 0, 0, 0))


def decode_lights(report: bytes) -> tuple[frozenset[Button], frozenset[int], int]:
    """Inverse of :func:`encode_lights`."""
    if len(report) < 4 or report[0] != REPORT_OUT:
        raise ValueError(f"not a console output report: {bytes(report).hex()}")
    buttons = frozenset(b for i, b in enumerate(BUTTONS) if report[1] >> i & 1)
    spots = frozenset(i + 1 for i in range(7) if report[2] >> i & 1)
    return buttons, spots, report[3]


def diff_reports(old: tuple[int, int], new: tuple[int, int]) -> list[DeviceEvent]:
    """Press/release events turning held state ``old`` into ``new`` (buttons, spots)."""
    out: list[DeviceEvent] = []
    changed = old[0] ^ new[0]
    for i, button in enumerate(BUTTONS):
        if changed >> i & 1:
            out.append(ButtonPressed(button) if new[0] >> i & 1 else ButtonReleased(button))
    changed = old[1] ^ new[1]
    for i in range(7):
        if changed >> i & 1:
            out.append(SpotSelected(i + 1, bool(new[1] >> i & 1)))
    return out


#: A console of its own, by the config's ``backend``: makes one (given VID and PID) and returns its port. The
#: simulators register ``sim`` (a simulated console under a fresh ``sim:`` name, for a bench table without a
#: console) when imported, and name themselves under the entry points of :data:`CONSOLE_PLUGINS`.
ConsoleMaker = Callable[[int, int], str]
CONSOLE_PLUGINS = "tablectl.consoles"
CONSOLE_MAKERS: Registry[ConsoleMaker] = Registry("console backend", CONSOLE_PLUGINS)


def register_console(backend: str, maker: ConsoleMaker) -> None:
    """A config's ``backend = BACKEND`` opens a console ``maker`` makes (its port)."""
    CONSOLE_MAKERS.register(backend, maker)


def console_port(config: ConsoleConfig) -> str:
    """The port a console configured so is opened on, by transport name (:data:`drivers.transport.TRANSPORTS`).

    A ``backend`` a package registered a console maker under (:func:`register_console`; ``"sim"``: a simulated
    console of its own): the port of the console it makes now; a ``backend`` naming a registered transport: that
    transport's ``SCHEME:VID:PID``; ``"libusb"`` (or any other name, as always): ``usb:VID:PID``.
    """
    backend = config.backend
    maker = CONSOLE_MAKERS.get(backend) if backend == "libusb" else CONSOLE_MAKERS.find(backend)
    if maker is not None:
        return maker(config.vid, config.pid)
    scheme = config.backend if config.backend != SCHEME and registered(f"{config.backend}:") else SCHEME
    return f"{scheme}:{usb_id(config.vid, config.pid)}"


class _ConsoleProtocol(asyncio.Protocol):
    """One connection: reports to the driver, and waiting for a written report to reach the device."""

    def __init__(self, driver: ConsoleDriver, timeout_ms: int) -> None:
        self._driver = driver
        #: how long one USB read or write may wait (read by :func:`drivers.usb.open_usb`)
        self.usb_timeout_ms = timeout_ms
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self._lost_exc: Exception | None = None
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._paused = False
        self._not_taken: Exception | None = None  # the last report sent was dropped, not taken
        self._drain_waiters: list[asyncio.Future[None]] = []

    # -- asyncio.Protocol -----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._driver._on_report(self, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._lost_exc = exc
        self._wake()
        if not self._closed.done():
            self._closed.set_result(None)
        self._driver._on_lost(self, exc)

    def write_not_taken(self, exc: Exception) -> None:
        """The transport dropped a report the device did not take in time (drivers/usb.py)."""
        self._not_taken = exc

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    # -- for the driver -------------------------------------------------------------------------
    async def send(self, report: bytes) -> None:
        """Write one report and wait until the transport has handed it to the device.

        ConnectionError if the connection is (or goes) down first.
        """
        transport = self.transport
        if transport is None or self.lost or transport.is_closing():
            raise ConnectionResetError("not connected")
        self._not_taken = None
        transport.write(report)
        while self._paused and not self.lost:
            waiter = asyncio.get_running_loop().create_future()
            self._drain_waiters.append(waiter)
            await waiter
        if self.lost:
            raise ConnectionResetError(str(self._lost_exc) if self._lost_exc is not None else "connection closed")
        if self._not_taken is not None:
            raise TimeoutError(f"the device did not take the report: {self._not_taken}")

    async def close(self) -> None:
        """Close the transport and wait (a bounded time) until it has let go."""
        if self.transport is not None and not self.lost:
            self.transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._closed), CLOSE_WAIT_S)

    def _wake(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class ConsoleDriver(Device):
    """Driver of the dealer console. Events: button_pressed, button_released, spot_select, and from its badge
    reader badge, badge_sign_out, badge_unreadable (+ health).

    ``port`` names the transport, like a serial driver's: ``usb:VID:PID`` (the default, from the
    config's ids), ``sim:NAME`` (a simulated console registered under NAME), or any registered
    ``SCHEME:...``; without it the config says (:func:`console_port`). ``backend`` is a pyusb
    backend for the ``usb:`` transport instead of libusb, e.g. ``SimConsole().backend`` (see
    :mod:`simulators.console`). A port no transport is registered for is a ValueError.
    """

    device: ClassVar[str] = "console"

    def __init__(self, config: ConsoleConfig | None = None, *, port: str | None = None, backend: object = None) -> None:
        super().__init__()
        self.config = config or ConsoleConfig()
        self._opener: Opener | None = None  # None: the port's transport from the registry, at every open
        if backend is not None:
            port = port or usb_port(self.config.vid, self.config.pid)
            if scheme_of(port) != SCHEME:
                raise ValueError(f"backend= is a pyusb backend, for a {SCHEME}: port only, not {port!r}")
            pyusb_backend = backend

            async def open_on_backend(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
                return await open_usb(path, baud, protocol, backend=pyusb_backend)

            self._opener = open_on_backend
        else:
            port = port or console_port(self.config)
            if not registered(port):
                raise ValueError(f"{port!r} is not a console port (usb:VID:PID, sim:NAME or a registered "
                                 f"transport's SCHEME:..., one of {', '.join(sorted(TRANSPORTS))})")
        self._port = port
        self._proto: _ConsoleProtocol | None = None
        self._held = (0, 0)
        self._counter: int | None = None
        self._badge = BadgeAssembler()
        self._reconnect_task: asyncio.Task[None] | None = None
        self._closing = False
        self.lost_reports = 0

    @property
    def port(self) -> str:
        """The port the console is opened on, as its transport's name: ``usb:1d50:6190``, ``sim:NAME``..."""
        return self._port

    async def open(self) -> None:
        """Open the port and claim the console; PortNotFound / PortBusy / PortAccessDenied if impossible."""
        self._closing = False
        await self._connect()
        self._set_health(Health.OK)

    async def close(self) -> None:
        """Stop reading, release the console (lights already set reach it first)."""
        self._closing = True
        task, self._reconnect_task = self._reconnect_task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        proto, self._proto = self._proto, None
        if proto is not None:
            await proto.close()
        self._set_health(Health.CLOSED)
        self._queue.put_nowait(None)

    async def set_lights(
        self, buttons: Iterable[Button] = (), spots: Iterable[int] = (), alarm: int = ALARM_OFF
    ) -> None:
        """Drive the indicator lights (buttons the dealer may press, spot lights, alarm); returns once sent."""
        report = encode_lights(buttons, spots, alarm)
        proto = self._proto
        if proto is None or proto.lost:
            raise DeviceError("console is not connected")
        try:
            await proto.send(report)
        except (ConnectionError, TimeoutError) as e:
            raise DeviceError(f"console {self._shown}: writing lights failed: {e}") from e

    # -- machinery -------------------------------------------------------------
    @property
    def _shown(self) -> str:
        """The port as messages name it: the USB id of a ``usb:`` port (``1d50:6190``), else the port."""
        try:
            return usb_id(*parse_usb_id(self._port)) if scheme_of(self._port) == SCHEME else self._port
        except ValueError:
            return self._port

    async def _connect(self) -> None:
        proto = _ConsoleProtocol(self, self.config.read_timeout_ms)
        opener = self._opener or transport_for(self._port)
        await opener(self._port, 0, proto)
        if self._closing:
            await proto.close()
            return
        if proto.lost:
            raise DeviceError(f"console {self._shown}: the connection closed as it opened")
        self._proto = proto
        self._counter = None

    def _on_report(self, proto: _ConsoleProtocol, report: bytes) -> None:
        if self._closing or (self._proto is not None and proto is not self._proto):
            return
        report = bytes(report)
        badge = len(report) >= 4 and report[0] == REPORT_BADGE
        try:
            buttons, spots, counter = (0, 0, report[3]) if badge else decode_input(report)
        except ValueError as e:
            log.warning("console: %s", e)
            for event in self._badge.interrupted("a report that is not the console's"):
                self._emit(event)
            return
        if self._counter is not None and counter != (self._counter + 1) & 0xFF:
            self.lost_reports += (counter - self._counter - 1) & 0xFF
            log.warning("console: report counter jumped from %d to %d", self._counter, counter)
            for event in self._badge.interrupted("a report was lost"):
                self._emit(event)
        self._counter = counter
        if badge:
            for event in self._badge.feed(report):
                self._emit(event)
            return
        for event in self._badge.interrupted("a button report came between its reports"):
            self._emit(event)
        new = (buttons, spots)
        for event in diff_reports(self._held, new):
            self._emit(event)
        self._held = new

    def _on_lost(self, proto: _ConsoleProtocol, exc: Exception | None) -> None:
        if proto is not self._proto or self._closing:
            return
        self._proto = None
        where = f"USB {self._shown}" if scheme_of(self._port) == SCHEME else self._port
        self._set_health(Health.LOST, f"{where}: {exc if exc is not None else 'disconnected'}")
        for event in self._badge.interrupted("the console was lost"):
            self._emit(event)
        # Buttons held when the cable went are released for the service.
        for event in diff_reports(self._held, (0, 0)):
            self._emit(event)
        self._held = (0, 0)
        if self._reconnect_task is None or self._reconnect_task.done():
            self._reconnect_task = asyncio.get_running_loop().create_task(self._reconnect())

    async def _reconnect(self) -> None:
        backoff = Backoff(self.config.reconnect_min_s, self.config.reconnect_max_s)
        while not self._closing:
            await asyncio.sleep(backoff.next())
            try:
                await self._connect()
            except DeviceError:
                continue
            if self._proto is not None:
                self._set_health(Health.OK)
            return
