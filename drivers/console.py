"""Dealer console on USB HID, read with pyusb: report layout and the driver.

Input report (device -> host, interrupt IN endpoint 0x81, 8 bytes)::

    byte 0  report id 0x01
    byte 1  buttons held, bit 0..7 = no_more_bets, stand_next, double, split,
            surrender, insurance_closed, new_decks, alarm_ack
    byte 2  spot select keys held, bit 0..6 = spot 1..7
    byte 3  report counter (mod 256; a gap means reports were lost)
    byte 4-7  zero

Output report (host -> device, interrupt OUT endpoint 0x01, 8 bytes)::

    byte 0  report id 0x02
    byte 1  button lights (same bit order as the buttons)
    byte 2  spot lights (bit 0..6 = spot 1..7)
    byte 3  alarm light: 0 off, 1 on, 2 blinking
    byte 4-7  zero

The console sends a report whenever what is held changes; the driver turns the
difference to the previous report into press/release events, bit order first.
pyusb is blocking, so reads run in a worker thread with a short timeout.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import logging
from collections.abc import Iterable
from typing import Any, ClassVar, Final

import usb.core
import usb.util

from drivers.base import Device
from drivers.config import ConsoleConfig
from drivers.errors import DeviceError, PortAccessDenied, PortBusy, PortNotFound
from drivers.events import Button, ButtonPressed, ButtonReleased, DeviceEvent, Health, SpotSelected

log = logging.getLogger(__name__)

REPORT_SIZE: Final = 8
REPORT_IN: Final = 0x01
REPORT_OUT: Final = 0x02
EP_IN: Final = 0x81
EP_OUT: Final = 0x01
BUTTONS: Final[tuple[Button, ...]] = tuple(Button)
ALARM_OFF, ALARM_ON, ALARM_BLINK = 0, 1, 2


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


class ConsoleDriver(Device):
    """Driver of the dealer console. Events: button_pressed, button_released, spot_select (+ health).

    ``backend`` is a pyusb backend; ``None`` lets pyusb pick libusb. For the
    simulator pass ``SimConsole().backend`` (see :mod:`simulators.console`).
    """

    device: ClassVar[str] = "console"

    def __init__(self, config: ConsoleConfig | None = None, *, backend: Any = None) -> None:
        super().__init__()
        self.config = config or ConsoleConfig()
        self._backend = backend
        self._dev: Any = None
        self._held = (0, 0)
        self._counter: int | None = None
        self._reader: asyncio.Task[None] | None = None
        self._closing = False
        self.lost_reports = 0

    @property
    def port(self) -> str:
        """The USB id as a technician writes it."""
        return f"{self.config.vid:04x}:{self.config.pid:04x}"

    async def open(self) -> None:
        """Find and claim the console; PortNotFound / PortBusy / PortAccessDenied if impossible."""
        self._closing = False
        await asyncio.to_thread(self._attach)
        self._set_health(Health.OK)
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    async def close(self) -> None:
        """Stop reading, release the interface."""
        self._closing = True
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        self._detach()
        self._set_health(Health.CLOSED)
        self._queue.put_nowait(None)

    async def set_lights(
        self, buttons: Iterable[Button] = (), spots: Iterable[int] = (), alarm: int = ALARM_OFF
    ) -> None:
        """Drive the indicator lights (buttons the dealer may press, spot lights, alarm)."""
        report = encode_lights(buttons, spots, alarm)
        dev = self._dev
        if dev is None:
            raise DeviceError("console is not connected")
        try:
            await asyncio.to_thread(dev.write, EP_OUT, report, self.config.read_timeout_ms)
        except usb.core.USBError as e:
            raise DeviceError(f"console {self.port}: writing lights failed: {e}") from e

    # -- machinery -------------------------------------------------------------
    def _attach(self) -> None:
        cfg = self.config
        try:
            dev = usb.core.find(idVendor=cfg.vid, idProduct=cfg.pid, backend=self._backend)
        except usb.core.NoBackendError as e:
            raise PortNotFound(self.port, "no USB backend (libusb) available") from e
        if dev is None:
            raise PortNotFound(f"USB {self.port}", "no such device")
        try:
            try:
                if dev.is_kernel_driver_active(0):
                    dev.detach_kernel_driver(0)
            except (NotImplementedError, usb.core.USBError):
                pass
            dev.set_configuration()
            usb.util.claim_interface(dev, 0)
        except usb.core.USBError as e:
            if e.errno == errno.EBUSY:
                raise PortBusy(f"USB {self.port}", "interface claimed by another process") from e
            if e.errno in (errno.EACCES, errno.EPERM):
                raise PortAccessDenied(f"USB {self.port}", "check the udev rule") from e
            raise DeviceError(f"console {self.port}: {e}") from e
        self._dev = dev
        self._counter = None

    def _detach(self) -> None:
        dev, self._dev = self._dev, None
        if dev is not None:
            with contextlib.suppress(usb.core.USBError):
                usb.util.release_interface(dev, 0)
            usb.util.dispose_resources(dev)

    def _read_one(self) -> bytes | None:
        dev = self._dev
        if dev is None:
            raise usb.core.USBError("console detached", errno=errno.ENODEV)
        buf = array.array("B", bytes(REPORT_SIZE))
        try:
            n = dev.read(EP_IN, buf, self.config.read_timeout_ms)
        except usb.core.USBTimeoutError:
            return None
        return bytes(buf[:n])

    async def _read_loop(self) -> None:
        while not self._closing:
            try:
                report = await asyncio.to_thread(self._read_one)
            except usb.core.USBError as e:
                await self._reconnect(str(e))
                continue
            if report is not None:
                self._on_report(report)

    def _on_report(self, report: bytes) -> None:
        try:
            buttons, spots, counter = decode_input(report)
        except ValueError as e:
            log.warning("console: %s", e)
            return
        if self._counter is not None and counter != (self._counter + 1) & 0xFF:
            self.lost_reports += (counter - self._counter - 1) & 0xFF
            log.warning("console: report counter jumped from %d to %d", self._counter, counter)
        self._counter = counter
        new = (buttons, spots)
        for event in diff_reports(self._held, new):
            self._emit(event)
        self._held = new

    async def _reconnect(self, reason: str) -> None:
        self._detach()
        self._set_health(Health.LOST, f"USB {self.port}: {reason}")
        # Buttons held when the cable went are released for the service.
        for event in diff_reports(self._held, (0, 0)):
            self._emit(event)
        self._held = (0, 0)
        delay = self.config.reconnect_min_s
        while not self._closing:
            await asyncio.sleep(delay)
            try:
                await asyncio.to_thread(self._attach)
            except DeviceError:
                delay = min(delay * 2, self.config.reconnect_max_s)
                continue
            self._set_health(Health.OK)
            return
