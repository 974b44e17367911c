"""Device kinds by name, and building a driver from a kind and a port string.

Used by ``tablectl monitor`` and the table service's config. Every driver opens its port by the
transport the port names (:data:`drivers.transport.TRANSPORTS`). Serial kinds take a tty path or a
registered ``SCHEME:...`` (``sim:NAME``). The console takes ``VID:PID`` in hex (``usb:VID:PID``,
real USB through libusb), any other registered ``SCHEME:...`` (``sim:NAME``: a simulated console
registered under NAME), or ``sim``: a simulated console of its own (the config's ``backend = "sim"``,
:class:`simulators.console.SimConsole` imported lazily so production never loads the simulators).
"""

from __future__ import annotations

from typing import Any, Final

from drivers.base import Device
from drivers.cardreader import CardReaderDriver
from drivers.chips import ChipsDriver
from drivers.config import CardReaderConfig, ChipsConfig, ConsoleConfig, ShoeConfig, ShufflerConfig
from drivers.console import ConsoleDriver
from drivers.shoe import ShoeDriver
from drivers.shuffler import ShufflerDriver
from drivers.transport import registered
from drivers.usb import parse_usb_id

__all__ = ["DEVICE_KINDS", "open_device", "parse_usb_id"]

DEVICE_KINDS: Final = ("shoe", "shuffler", "chips", "console", "cards")


def open_device(kind: str, port: str, **settings: Any) -> Device:
    """A driver (not yet opened) for ``kind`` on ``port``; ValueError for a bad kind or port."""
    if kind == "shoe":
        return ShoeDriver(ShoeConfig(port=port, **settings))
    if kind == "shuffler":
        return ShufflerDriver(ShufflerConfig(port=port, **settings))
    if kind == "chips":
        return ChipsDriver(ChipsConfig(port=port, **settings))
    if kind == "cards":  # the player-card readers (on the chip bus's port, or a bus of their own)
        return CardReaderDriver(CardReaderConfig(port=port, **settings))
    if kind == "console":
        if port == "sim":
            return ConsoleDriver(ConsoleConfig(backend="sim", **settings))
        try:
            vid, pid = parse_usb_id(port)  # a USB id first: a hex VID may look like a scheme (dead:beef)
        except ValueError:
            if not registered(port):
                raise
            return ConsoleDriver(ConsoleConfig(**settings), port=port)
        return ConsoleDriver(ConsoleConfig(vid=vid, pid=pid, **settings))
    raise ValueError(f"unknown device kind {kind!r} (one of {', '.join(DEVICE_KINDS)})")
