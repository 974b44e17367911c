"""Simulated dealer console: a pyusb backend (``usb.backend.IBackend``), reachable by name as ``sim:NAME``.

``usb.core.find(idVendor=..., backend=SimConsole().backend)`` finds it, and the
driver's real pyusb calls (set_configuration, claim, interrupt read/write) run
against it. Created with ``link="sim:NAME"`` and opened (``open()`` or
``async with``), it is registered under NAME in :mod:`simulators.memory`, like
a serial simulator: a driver on port ``sim:NAME`` reaches it through the ``sim``
transport of :data:`drivers.transport.TRANSPORTS`, which hands it the driver's
protocol; it connects it with the USB transport (:mod:`drivers.usb`) on its own
pyusb backend, so the same pyusb calls run. In-process API: ``press``/
``release``/``tap`` a button or a spot key, ``swipe(badge)`` a badge at the badge
reader and ``sign_out()`` its sign-out key, ``unplug()``/``plug()``, ``drop_next``
(that many next reports lost on the way: fault injection), and ``lights`` (the last
output report). Each change of what is held produces one 8-byte input report (layout in
:mod:`drivers.console`), a badge its run of badge reports (:mod:`drivers.badge`).
"""

from __future__ import annotations

import array
import asyncio
import errno
import itertools
import queue
import threading
from types import SimpleNamespace
from typing import Any, Self

import usb.backend
import usb.core

from drivers.badge import badge_reports, check_badge, sign_out_report
from drivers.console import (
    BUTTONS,
    EP_IN,
    EP_OUT,
    REPORT_SIZE,
    decode_lights,
    encode_input,
    register_console,
)
from drivers.events import Button
from drivers.usb import open_usb, usb_port
from simulators.memory import PREFIX, register, unregister

_DEVICE, _CONFIG, _INTERFACE, _ENDPOINT = 1, 2, 4, 5
_FRESH = itertools.count(1)


def _desc(fields: dict[str, Any]) -> SimpleNamespace:
    """A descriptor: pyusb reads its fields as attributes."""
    return SimpleNamespace(extra_descriptors=[], **fields)


class _DevId:
    """What ``enumerate_devices`` yields for the one simulated console."""


class ConsoleBackend(usb.backend.IBackend):  # type: ignore[misc]
    """The pyusb backend side of :class:`SimConsole`."""

    def __init__(self, console: SimConsole) -> None:
        self._console = console
        self._dev = _DevId()

    def enumerate_devices(self) -> Any:
        if self._console.plugged:
            yield self._dev

    def get_device_descriptor(self, dev: Any) -> SimpleNamespace:
        c = self._console
        return _desc(
            {
                "bLength": 18, "bDescriptorType": _DEVICE, "bcdUSB": 0x0200, "bDeviceClass": 0,
                "bDeviceSubClass": 0, "bDeviceProtocol": 0, "bMaxPacketSize0": 8, "idVendor": c.vid,
                "idProduct": c.pid, "bcdDevice": 0x0100, "iManufacturer": 0, "iProduct": 0,
                "iSerialNumber": 0, "bNumConfigurations": 1, "address": 7, "bus": 1, "port_number": 1,
                "port_numbers": (1,),
                "speed": 2,
            }
        )

    def get_configuration_descriptor(self, dev: Any, config: int) -> SimpleNamespace:
        if config != 0:
            raise IndexError("configuration index out of range")
        return _desc(
            {
                "bLength": 9, "bDescriptorType": _CONFIG, "wTotalLength": 41, "bNumInterfaces": 1,
                "bConfigurationValue": 1, "iConfiguration": 0, "bmAttributes": 0x80, "bMaxPower": 50,
            }
        )

    def get_interface_descriptor(self, dev: Any, intf: int, alt: int, config: int) -> SimpleNamespace:
        if intf != 0 or alt != 0 or config != 0:
            raise IndexError("interface or alternate setting out of range")
        return _desc(
            {
                "bLength": 9, "bDescriptorType": _INTERFACE, "bInterfaceNumber": 0, "bAlternateSetting": 0,
                "bNumEndpoints": 2, "bInterfaceClass": 3, "bInterfaceSubClass": 0, "bInterfaceProtocol": 0,
                "iInterface": 0,
            }
        )

    def get_endpoint_descriptor(self, dev: Any, ep: int, intf: int, alt: int, config: int) -> SimpleNamespace:
        if ep not in (0, 1) or intf != 0 or alt != 0 or config != 0:
            raise IndexError("endpoint out of range")
        return _desc(
            {
                "bLength": 7, "bDescriptorType": _ENDPOINT, "bEndpointAddress": EP_IN if ep == 0 else EP_OUT,
                "bmAttributes": 0x03, "wMaxPacketSize": REPORT_SIZE, "bInterval": 1, "bRefresh": 0,
                "bSynchAddress": 0,
            }
        )

    def _check(self) -> None:
        if not self._console.plugged:
            raise usb.core.USBError("No such device (it may have been disconnected)", -4, errno.ENODEV)

    def open_device(self, dev: Any) -> object:
        self._check()
        self._console.opened += 1
        return object()

    def close_device(self, dev_handle: Any) -> None:
        pass

    def set_configuration(self, dev_handle: Any, config_value: int) -> None:
        self._check()

    def get_configuration(self, dev_handle: Any) -> int:
        self._check()
        return 1

    def set_interface_altsetting(self, dev_handle: Any, intf: int, altsetting: int) -> None:
        self._check()

    def claim_interface(self, dev_handle: Any, intf: int) -> None:
        self._check()
        c = self._console
        with c.lock:
            if c.claimed:
                raise usb.core.USBError("Resource busy", -6, errno.EBUSY)
            c.claimed = True

    def release_interface(self, dev_handle: Any, intf: int) -> None:
        with self._console.lock:
            self._console.claimed = False

    def is_kernel_driver_active(self, dev_handle: Any, intf: int) -> bool:
        return False

    def intr_read(self, dev_handle: Any, ep: int, intf: int, buff: Any, timeout: int) -> int:
        self._check()
        try:
            report = self._console.reports.get(timeout=max(timeout, 1) / 1000.0)
        except queue.Empty:
            raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT) from None
        if report is None:  # unplugged while waiting
            raise usb.core.USBError("No such device (it may have been disconnected)", -4, errno.ENODEV)
        n = min(len(report), len(buff))
        buff[:n] = array.array("B", report[:n])
        return n

    def intr_write(self, dev_handle: Any, ep: int, intf: int, data: Any, timeout: int) -> int:
        self._check()
        if self._console.lights_stalled:  # a console whose firmware does not take reports (fault injection)
            raise usb.core.USBTimeoutError("Operation timed out", -7, errno.ETIMEDOUT)
        self._console.lights_report = bytes(data)
        return len(data)


class SimConsole:
    """A simulated console; with ``link="sim:NAME"`` opened, drivers reach it on port ``sim:NAME``;
    its ``.backend`` also goes to ``usb.core.find`` or ``ConsoleDriver(backend=...)``."""

    def __init__(self, vid: int = 0x1D50, pid: int = 0x6190, *, link: str | None = None) -> None:
        if link is not None and (not link.startswith(PREFIX) or link == PREFIX):
            raise ValueError(f"a console's link is {PREFIX}NAME, got {link!r}")
        self.vid, self.pid = vid, pid
        self.link = link
        self.backend = ConsoleBackend(self)
        self.reports: queue.Queue[bytes | None] = queue.Queue()
        self.lock = threading.Lock()
        self.plugged = True
        self.unplugs = 0  # times the cable was pulled: a press made before the plug came back was lost
        self.claimed = False
        self.opened = 0
        self.lights_report = b""
        self.lights_stalled = False  # fault injection: the device does not take lights reports (a write times out)
        self._buttons = 0
        self._spots = 0
        self._counter = 0
        self.drop_next = 0  # fault injection: the next this many reports are lost (the counter still counts them)

    @classmethod
    def fresh(cls, vid: int = 0x1D50, pid: int = 0x6190) -> SimConsole:
        """A simulated console opened at once under a fresh name ``sim:console-N`` (a bench table's console,
        ``backend = "sim"``, or ``tablectl monitor console --port sim``): it lives as long as the process."""
        console = cls(vid, pid, link=f"{PREFIX}console-{next(_FRESH)}")
        console.open()
        return console

    @property
    def port(self) -> str:
        """What a console driver opens: the link ``sim:NAME``, else ``usb:VID:PID`` (with ``backend=`` only)."""
        return self.link if self.link is not None else usb_port(self.vid, self.pid)

    def open(self) -> str:
        """Register under the link's name (OSError if another simulator holds it); the port to open."""
        if self.link is None:
            raise ValueError("this simulated console has no link (sim:NAME) to be reached by")
        register(self.link[len(PREFIX) :], self)
        return self.link

    def close(self) -> None:
        """Unregister: ``sim:NAME`` is not found any more (a driver already connected keeps its connection)."""
        if self.link is not None:
            unregister(self.link[len(PREFIX) :], self)

    async def __aenter__(self) -> Self:
        self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    async def accept(self, protocol: asyncio.Protocol) -> asyncio.Transport:
        """A driver connects through ``sim:NAME``: the USB transport on this console's pyusb backend."""
        return await open_usb(usb_port(self.vid, self.pid), 0, protocol, backend=self.backend)

    def _report(self) -> None:
        self._counter = (self._counter + 1) & 0xFF
        self._send(encode_input(self._buttons, self._spots, self._counter))

    def _send(self, report: bytes) -> None:
        if self.drop_next > 0:
            self.drop_next -= 1
            return
        self.reports.put(report)

    def swipe(self, badge: str | bytes) -> None:
        """Swipe a badge at the badge reader: a ``str`` must be a badge id (ValueError otherwise); ``bytes`` are
        sent as the reader read them (1 to 255, any value: a damaged or foreign badge, for fault tests)."""
        raw = check_badge(badge).encode("ascii") if isinstance(badge, str) else badge
        with self.lock:  # its reports back to back: no button report between them
            for report in badge_reports(raw, self._counter + 1):
                self._counter = report[3]
                self._send(report)

    def sign_out(self) -> None:
        """Press the badge reader's sign-out key."""
        with self.lock:
            self._counter = (self._counter + 1) & 0xFF
            self._send(sign_out_report(self._counter))

    @staticmethod
    def _bit(key: Button | str | int) -> tuple[bool, int]:
        if isinstance(key, int):
            if not 1 <= key <= 7:
                raise ValueError(f"spot must be 1..7, got {key}")
            return True, 1 << (key - 1)
        return False, 1 << BUTTONS.index(Button(key))

    def press(self, key: Button | str | int) -> None:
        """Hold a button (or, for an int, the select key of that spot)."""
        spot, bit = self._bit(key)
        with self.lock:
            if spot:
                self._spots |= bit
            else:
                self._buttons |= bit
            self._report()

    def release(self, key: Button | str | int) -> None:
        """Let go of a button or spot key."""
        spot, bit = self._bit(key)
        with self.lock:
            if spot:
                self._spots &= ~bit
            else:
                self._buttons &= ~bit
            self._report()

    def tap(self, key: Button | str | int) -> None:
        """Press and release."""
        self.press(key)
        self.release(key)

    def unplug(self) -> None:
        """Pull the USB cable: reads fail with ENODEV, the device disappears."""
        with self.lock:
            self.plugged = False
            self.unplugs += 1
            self.claimed = False
            self._buttons = self._spots = 0
            while not self.reports.empty():
                self.reports.get_nowait()
        self.reports.put(None)

    def plug(self) -> None:
        """Plug it back in."""
        with self.lock:
            while not self.reports.empty():
                self.reports.get_nowait()
            self.plugged = True

    @property
    def lights(self) -> tuple[frozenset[Button], frozenset[int], int] | None:
        """Buttons lit, spots lit, alarm mode, from the last output report (``None`` before any)."""
        return decode_lights(self.lights_report) if self.lights_report else None


def fresh_port(vid: int, pid: int) -> str:
    """A simulated console of its own, opened now (:meth:`SimConsole.fresh`): its port."""
    return SimConsole.fresh(vid, pid).port


# a config's ``backend = "sim"`` makes a simulated console of its own: registered from this side (pyproject's
# entry point ``tablectl.consoles`` names this module for the drivers, which import nothing of the simulators)
register_console("sim", fresh_port)
