"""Device kinds by name, and building a driver from a kind and a port string.

Used by ``tablectl monitor`` and the table service's config. One table, :data:`DEVICES` (a
:class:`drivers.plugins.Registry`, as the transports and the console makers are): each kind names the maker of
its driver. Every driver opens its port by the transport the port names (:data:`drivers.transport.TRANSPORTS`).
Serial kinds take a tty path or a registered ``SCHEME:...`` (``sim:NAME``). The console takes ``VID:PID`` in hex
(``usb:VID:PID``, real USB through libusb), any other registered ``SCHEME:...`` (``sim:NAME``: a simulated
console registered under NAME), or ``sim``: a simulated console of its own (the config's ``backend = "sim"``,
:class:`simulators.console.SimConsole` imported lazily so production never loads the simulators).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from drivers.base import Device
from drivers.cardreader import CardReaderDriver
from drivers.chips import ChipsDriver
from drivers.config import CardReaderConfig, ChipsConfig, ConsoleConfig, ShoeConfig, ShufflerConfig
from drivers.console import ConsoleDriver
from drivers.plugins import Registry
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver
from drivers.transport import registered
from drivers.usb import parse_usb_id

__all__ = ["DEVICES", "DEVICE_KINDS", "DeviceMaker", "open_device", "parse_usb_id"]

#: a driver (not yet opened) on a port, with the kind's settings; ValueError for a bad port or setting
DeviceMaker = Callable[..., Device]


def _console(port: str, **settings: Any) -> Device:
    if port == "sim":
        return ConsoleDriver(ConsoleConfig(backend="sim", **settings))
    try:
        vid, pid = parse_usb_id(port)  # a USB id first: a hex VID may look like a scheme (dead:beef)
    except ValueError:
        if not registered(port):
            raise
        return ConsoleDriver(ConsoleConfig(**settings), port=port)
    return ConsoleDriver(ConsoleConfig(vid=vid, pid=pid, **settings))


#: every device kind and the maker of its driver, in the order they are listed
DEVICES: Final[Registry[DeviceMaker]] = Registry("device kind", None, [
    ("shoe", lambda port, **settings: ShoeDriver(ShoeConfig(port=port, **settings))),
    ("shuffler", lambda port, **settings: ShufflerDriver(ShufflerConfig(port=port, **settings))),
    ("chips", lambda port, **settings: ChipsDriver(ChipsConfig(port=port, **settings))),
    ("console", _console),
    # the player-card readers (on the chip bus's port, or a bus of their own)
    ("cards", lambda port, **settings: CardReaderDriver(CardReaderConfig(port=port, **settings))),
])
DEVICE_KINDS: Final = tuple(DEVICES)


def open_device(kind: str, port: str, **settings: Any) -> Device:
    """A driver (not yet opened) for ``kind`` on ``port``; ValueError for a bad kind or port."""
    maker = DEVICES.find(kind)
    if maker is None:
        raise ValueError(DEVICES.unknown(kind))
    return maker(port, **settings)
