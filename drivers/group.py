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
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Self

from drivers.base import Device
from drivers.events import DeviceEvent


class DeviceGroup:
    """Opens every device (closing those already open if one fails) and merges their events.

    Each device hands its events to the group as it decodes them (:meth:`Device.listen`), so the
    merged stream is in the order the bytes arrived: one loop turn from the wire to a reader of
    :meth:`events`, none to a taker given :meth:`deliver`.
    """

    def __init__(self, **devices: Device) -> None:
        self.devices = devices
        self._queue: asyncio.Queue[tuple[str, DeviceEvent] | None] = asyncio.Queue()
        self._taker: Callable[[str, DeviceEvent], None] | None = None
        self._taking = False
        self._later: deque[tuple[str, DeviceEvent]] = deque()

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
        if self._taker is None:
            self._queue.put_nowait((name, event))
        elif self._taking:  # a device answering inside the taker: handed over once it returns
            self._later.append((name, event))
        else:
            self._hand_over(name, event)

    def _hand_over(self, name: str, event: DeviceEvent) -> None:
        self._taking = True
        try:
            item: tuple[str, DeviceEvent] | None = (name, event)
            while item is not None and (taker := self._taker) is not None:
                taker(*item)
                item = self._later.popleft() if self._later else None
            if item is not None:  # the taker went meanwhile: what it left goes to the queue, in order
                self._queue.put_nowait(item)
        finally:
            self._taking = False
            while self._later:
                self._queue.put_nowait(self._later.popleft())

    def deliver(self, taker: Callable[[str, DeviceEvent], None] | None) -> None:
        """Hand each ``(device name, event)`` to ``taker`` as its driver decodes it, in the driver's own callback
        (after the frame's ACK is written), instead of queueing it for :meth:`events`; ``None``: back to the queue.
        Events queued before go to ``taker`` first, in order.

        For the table service: a card's input is applied in the callback that read its frame, not a loop turn
        later (docs/table-service.md). ``taker`` must not raise (it runs inside a driver); it is never entered
        twice at once: an event that arrives while it runs is handed over, in order, once it returns.
        """
        self._taker = taker
        if taker is None:
            return
        while self._taker is not None and not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:  # closed: the end stays for a reader of events()
                self._queue.put_nowait(None)
                return
            self._arrived(*item)

    async def events(self) -> AsyncIterator[tuple[str, DeviceEvent]]:
        """``(device name, event)`` in arrival order, until the group is closed (none while :meth:`deliver` hands
        them to a taker)."""
        while (item := await self._queue.get()) is not None:
            yield item
