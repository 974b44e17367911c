"""Simulated RS-485 chip-sensor bus: answers polls with the wager at each address.

In-process API for simulated players: ``set_wager(spot, cents)``, ``clear()``,
``fault(spot, code)``. Every sensor of spots 1..7 (bet and insurance line) is
present unless listed in ``absent``. ``readers`` puts player-card readers on the same bus
(:class:`simulators.cardreader.CardReaders`, at ``0x40 | spot``); without it those addresses answer
ABSENT, as a bus with no reader does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import ClassVar

from drivers import chips as proto
from drivers.link import LinkTiming
from drivers.playercard import reader_spot
from simulators.cardreader import CardReaders
from simulators.device import SimDevice

#: Chip denominations (cents) used to turn a wager into a plausible chip count.
DENOMINATIONS = (100_000, 50_000, 10_000, 2_500, 500, 100, 50, 25)


def chip_count(cents: int) -> int:
    """Fewest chips making ``cents`` (at least one per 25 cents left over)."""
    n = 0
    for d in DENOMINATIONS:
        k, cents = divmod(cents, d)
        n += k
    return n + (1 if cents else 0)


class SimChips(SimDevice):
    """The chip sensors of one table."""

    role: ClassVar[int] = proto.ROLE
    name: ClassVar[str] = "chips"

    def __init__(
        self,
        *,
        absent: Iterable[int] = (),
        link: str | None = None,
        corrupt: float = 0.0,
        drop: float = 0.0,
        fault_seed: int | None = None,
        timing: LinkTiming | None = None,
        readers: CardReaders | None = None,
    ) -> None:
        super().__init__(link=link, corrupt=corrupt, drop=drop, fault_seed=fault_seed, timing=timing)
        self.readers = readers
        self.readings: dict[int, tuple[int, int]] = {}
        self.faults: dict[int, int] = {}
        self.absent = set(absent)
        self.polls = 0
        #: polls received per bus address (what a bus analyser would count)
        self.polls_by_address: Counter[int] = Counter()

    def set_wager(self, spot: int, cents: int, *, line: str = "bet", chips: int | None = None) -> None:
        """Chips worth ``cents`` now lie on ``spot`` (``line`` "bet" or "insurance")."""
        if cents < 0:
            raise ValueError("a wager cannot be negative")
        self.readings[proto.address(spot, line)] = (cents, chip_count(cents) if chips is None else chips)

    def clear(self, spot: int | None = None) -> None:
        """Take the chips off one spot (both lines) or off the whole table."""
        if spot is None:
            self.readings.clear()
        else:
            for line in ("bet", "insurance"):
                self.readings.pop(proto.address(spot, line), None)

    def fault(self, spot: int, code: int = 1, *, line: str = "bet") -> None:
        """The sensor at ``spot`` reports fault ``code`` until :meth:`clear_fault`."""
        self.faults[proto.address(spot, line)] = code

    def clear_fault(self, spot: int, *, line: str = "bet") -> None:
        """The sensor works again."""
        self.faults.pop(proto.address(spot, line), None)

    def _on_message(self, mtype: int, payload: bytes) -> None:
        if mtype != proto.POLL or not payload:
            return
        addr = payload[0]
        self.polls += 1
        self.polls_by_address[addr] += 1
        if self.readers is not None and reader_spot(addr) is not None:
            answer = self.readers.answer(addr)
            if answer is not None:  # a silent (lost) reader leaves the poll unanswered
                self._send(*answer)
            return
        if addr in self.faults:
            self._send(proto.FAULT, bytes((addr, self.faults[addr])))
        elif addr & 0x7F in self.absent or not 1 <= addr & 0x7F <= 7:
            self._send(proto.ABSENT, bytes((addr,)))
        else:
            cents, chips = self.readings.get(addr, (0, 0))
            self._send(proto.WAGER, proto.WAGER_FMT.pack(addr, cents, chips))
