"""Several devices opened together, their events merged into one stream.

The table service's view of a table's hardware::

    async with DeviceGroup(shoe=ShoeDriver(...), chips=ChipsDriver(...), console=ConsoleDriver(...)) as table:
        async for name, event in table.events():   # ("shoe", CardRead("TD")), ...
            ...
        table.health                               # {"shoe": "ok", "chips": "lost", ...}
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Self

from drivers.base import Device
from drivers.events import DeviceEvent


class DeviceGroup:
    """Opens every device (closing those already open if one fails) and merges their events."""

    def __init__(self, **devices: Device) -> None:
        self.devices = devices
        self._queue: asyncio.Queue[tuple[str, DeviceEvent] | None] = asyncio.Queue()
        self._pumps: list[asyncio.Task[None]] = []

    def __getitem__(self, name: str) -> Device:
        return self.devices[name]

    @property
    def health(self) -> dict[str, str]:
        """Health of every device by name, as the ``state.devices`` snapshot wants it."""
        return {name: dev.health.value for name, dev in self.devices.items()}

    async def __aenter__(self) -> Self:
        opened: list[Device] = []
        try:
            for device in self.devices.values():
                await device.open()
                opened.append(device)
        except BaseException:
            for device in opened:
                await device.close()
            raise
        loop = asyncio.get_running_loop()
        self._pumps = [loop.create_task(self._pump(name, dev)) for name, dev in self.devices.items()]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for device in self.devices.values():
            await device.close()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        self._queue.put_nowait(None)

    async def _pump(self, name: str, device: Device) -> None:
        async for event in device.events():
            self._queue.put_nowait((name, event))

    async def events(self) -> AsyncIterator[tuple[str, DeviceEvent]]:
        """``(device name, event)`` in arrival order, until the group is closed."""
        while (item := await self._queue.get()) is not None:
            yield item
