"""Chip sensors on an RS-485 bus: message types and the polling driver.

One sensor per betting spot (address 1..7) and one under the insurance line in
front of each spot (address 0x80 | spot). The driver polls every configured
address in turn and emits a :class:`Wager` when a reading changes, so the
service sees each change once; :attr:`ChipsDriver.wagers` is the latest
reading of every sensor. With ``card_readers`` it polls the player-card reader of
each spot on the same bus too (address ``0x40 | spot``, :mod:`drivers.playercard`)
and emits its card_in / card_out / card_unreadable / reader_lost / reader_back.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterable
from typing import ClassVar, Final

from drivers import playercard
from drivers.base import Opener, SerialDriver
from drivers.config import ChipsConfig
from drivers.events import DeviceEvent, SensorFault, Wager
from drivers.link import LinkTiming
from drivers.playercard import ReaderLevels, reader_spot

ROLE: Final = ord("C")
INSURANCE_BIT: Final = 0x80

# host -> device
POLL: Final = 0x50  # address
# device -> host
WAGER: Final = 0x51  # address, cents u32, chips u16
FAULT: Final = 0x52  # address, code
ABSENT: Final = 0x53  # address (no sensor answers there)

#: what a card reader answers a poll with (ABSENT: no reader there)
_READER_ANSWERS: Final = frozenset((playercard.CARD_IN, playercard.NO_CARD, playercard.UNREADABLE, ABSENT))

#: how often a lost (silent) card reader is polled again, in seconds
LOST_READER_RETRY_S: Final = 1.0

WAGER_FMT: Final = struct.Struct(">BIH")
FAULT_CODES: Final[dict[int, str]] = {1: "sensor dirty", 2: "stack too high", 3: "unreadable chip"}


def address(spot: int, line: str = "bet") -> int:
    """Bus address of the sensor of ``spot`` (``line`` "bet" or "insurance")."""
    return spot | (INSURANCE_BIT if line == "insurance" else 0)


def spot_line(addr: int) -> tuple[int, str]:
    """Inverse of :func:`address`."""
    return addr & 0x7F, "insurance" if addr & INSURANCE_BIT else "bet"


class ChipsDriver(SerialDriver):
    """Driver of the chip-sensor bus. Events: wager, sensor_fault (+ health, link_up)."""

    device: ClassVar[str] = "chips"
    role: ClassVar[int] = ROLE

    def __init__(
        self, config: ChipsConfig, *, timing: LinkTiming | None = None, opener: Opener | None = None
    ) -> None:
        super().__init__(config, timing=timing, opener=opener)
        self.chips_config = config
        #: the player-card readers polled on this bus (None: none)
        self.readers: ReaderLevels | None = ReaderLevels(config.spots) if config.card_readers else None
        addrs = list(self._bus_addresses())
        if self.readers is not None:
            addrs += self.readers.addresses
        self.addresses: tuple[int, ...] = tuple(addrs)
        #: (spot, line) -> (cents, chips) as last read.
        self.wagers: dict[tuple[int, str], tuple[int, int]] = {}
        self._faults: dict[int, int] = {}
        self._answer: asyncio.Future[None] | None = None
        self._polled = -1
        self._poller: asyncio.Task[None] | None = None
        self._retry_reader: dict[int, float] = {}  # lost reader's spot -> when to poll it again
        self.cycles = 0

    def _bus_addresses(self) -> Iterable[int]:
        """The chip sensors polled (the spots' bet lines, then their insurance lines)."""
        config = self.chips_config
        yield from (address(s) for s in config.spots)
        if config.insurance:
            yield from (address(s, "insurance") for s in config.spots)

    @property
    def cards(self) -> dict[int, str]:
        """The card number in each spot's reader now (spots with none absent; empty without readers)."""
        return dict(self.readers.cards) if self.readers is not None else {}

    def wager(self, spot: int, line: str = "bet") -> int:
        """Latest wager in cents at ``spot`` (0 when nothing was read)."""
        return self.wagers.get((spot, line), (0, 0))[0]

    async def poll_once(self) -> None:
        """Poll every address once (the background poller does this continuously)."""
        timeout = self.config.request_timeout_s
        loop = asyncio.get_running_loop()
        for addr in self.addresses:
            spot = reader_spot(addr) if self.readers is not None else None
            if spot is not None and self.readers is not None and spot in self.readers.lost:
                if loop.time() < self._retry_reader.get(spot, 0.0):
                    continue  # a silent reader is tried once a second, not at every cycle: the chips come first
                self._retry_reader[spot] = loop.time() + LOST_READER_RETRY_S
            fut: asyncio.Future[None] = loop.create_future()
            self._answer, self._polled = fut, addr
            await self._command(POLL, bytes((addr,)))
            try:
                await asyncio.wait_for(fut, timeout if spot is None else self.chips_config.reader_timeout_s)
            except TimeoutError:
                if spot is not None and self.readers is not None and self.ready:  # a silent reader, not the link
                    for event in self.readers.missed(spot):
                        self._emit(event)
                continue
        self.cycles += 1

    def _on_link_up(self) -> None:
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll_forever())

    async def _poll_forever(self) -> None:
        while not self._closing:
            try:
                await self.poll_once()
            except Exception:  # link lost mid-cycle: wait for it, then go on
                await asyncio.sleep(self.chips_config.reconnect_min_s)
                continue
            await asyncio.sleep(self.chips_config.poll_interval_s)

    async def close(self) -> None:
        """Stop polling, then close the port."""
        self._closing = True
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        await super().close()

    def _answered(self, addr: int) -> None:
        fut = self._answer
        if fut is not None and not fut.done() and addr == self._polled:
            fut.set_result(None)

    def _decode(self, mtype: int, payload: bytes) -> Iterable[DeviceEvent]:
        readers = self.readers
        if readers is not None and payload and reader_spot(payload[0]) is not None and mtype in _READER_ANSWERS:
            self._answered(payload[0])
            return readers.answered(mtype, payload)
        if mtype == WAGER:
            addr, cents, chips = WAGER_FMT.unpack(payload)
            self._answered(addr)
            spot, line = spot_line(addr)
            self._faults.pop(addr, None)
            if self.wagers.get((spot, line)) == (cents, chips):
                return ()
            self.wagers[(spot, line)] = (cents, chips)
            return (Wager(spot, line, cents, chips),)
        if mtype == FAULT:
            addr, code = payload[0], payload[1]
            self._answered(addr)
            if self._faults.get(addr) == code:
                return ()
            self._faults[addr] = code
            spot, line = spot_line(addr)
            return (SensorFault(spot, line, code),)
        if mtype == ABSENT:
            self._answered(payload[0])
            return ()
        raise ValueError(f"unknown chips message type 0x{mtype:02X}")
