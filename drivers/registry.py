"""Device kinds by name, and building a driver from a kind and a port string.

Used by ``tablectl monitor`` and the table service's config. Serial kinds take
a tty path. The console takes ``VID:PID`` in hex (real USB through libusb) or
``sim`` (the in-process :class:`simulators.console.SimConsole`, imported lazily
so production never loads the simulators).
"""

from __future__ import annotations

import re
from typing import Any, Final

from drivers.base import Device
from drivers.chips import ChipsDriver
from drivers.config import ChipsConfig, ConsoleConfig, ShoeConfig, ShufflerConfig
from drivers.console import ConsoleDriver
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver

DEVICE_KINDS: Final = ("shoe", "shuffler", "chips", "console")

_USB_ID = re.compile(r"^(?:usb:)?([0-9a-fA-F]{1,4}):([0-9a-fA-F]{1,4})$")


def parse_usb_id(port: str) -> tuple[int, int]:
    """``"1d50:6190"`` -> ``(0x1D50, 0x6190)``; ValueError if it is not a USB id."""
    m = _USB_ID.match(port.strip())
    if m is None:
        raise ValueError(f"{port!r} is not a USB id like 1d50:6190")
    return int(m.group(1), 16), int(m.group(2), 16)


def open_device(kind: str, port: str, *, sim_backend: Any = None, **settings: Any) -> Device:
    """A driver (not yet opened) for ``kind`` on ``port``; ValueError for a bad kind or port."""
    if kind == "shoe":
        return ShoeDriver(ShoeConfig(port=port, **settings))
    if kind == "shuffler":
        return ShufflerDriver(ShufflerConfig(port=port, **settings))
    if kind == "chips":
        return ChipsDriver(ChipsConfig(port=port, **settings))
    if kind == "console":
        if port == "sim":
            if sim_backend is None:
                from simulators.console import SimConsole

                sim_backend = SimConsole().backend
            return ConsoleDriver(ConsoleConfig(backend="sim", **settings), backend=sim_backend)
        vid, pid = parse_usb_id(port)
        return ConsoleDriver(ConsoleConfig(vid=vid, pid=pid, **settings))
    raise ValueError(f"unknown device kind {kind!r} (one of {', '.join(DEVICE_KINDS)})")
