"""A device whose events a test makes, synchronously, as a driver's read callback hands them on."""

from __future__ import annotations

from drivers.base import Device
from drivers.events import DeviceEvent


class Emitter(Device):
    """No port, no link: :meth:`emit` is a frame just decoded."""

    device = "emitter"

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def emit(self, event: DeviceEvent) -> None:
        self._emit(event)
