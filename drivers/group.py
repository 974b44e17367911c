"""Several devices opened together, their events merged into one stream.

The table service's view of a table's hardware::

    async with DeviceGroup(shoe=ShoeDriver(...), chips=ChipsDriver(...), console=ConsoleDriver(...)) as table:
        async for name, event in table.events():   # ("shoe", CardRead("TD")), ...
            ...
        table.health                               # {"shoe": "ok", "chips": "lost", ...}
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import Self

from drivers.base import Device
from drivers.events import DeviceEvent


class DeviceGroup:
    """Opens every device (closing those already open if one fails) and merges their events.

    Each device hands its events to the group as it decodes them (:meth:`Device.listen`), so the
    merged stream is in the order the bytes arrived, one loop turn from the wire to the reader.
    """

    def __init__(self, **devices: Device) -> None:
        self.devices = devices
        self._queue: asyncio.Queue[tuple[str, DeviceEvent] | None] = asyncio.Queue()

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
        for name, device in self.devices.items():  # straight into the merged queue: one hop, not two
            device.listen(functools.partial(self._arrived, name))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for device in self.devices.values():
            await device.close()  # its last events (health "closed") still arrive
        for device in self.devices.values():
            device.listen(None)
        self._queue.put_nowait(None)

    def _arrived(self, name: str, event: DeviceEvent) -> None:
        self._queue.put_nowait((name, event))

    async def events(self) -> AsyncIterator[tuple[str, DeviceEvent]]:
        """``(device name, event)`` in arrival order, until the group is closed."""
        while (item := await self._queue.get()) is not None:
            yield item
