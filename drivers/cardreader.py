"""The player-card reader driver: the readers of a table's RS-485 bus, polled on their own.

The protocol, the events and how levels become events: :mod:`drivers.playercard`. This driver is
the chip driver (:class:`drivers.chips.ChipsDriver`, the bus master) with the chip sensors left
out: it polls ``0x40 | spot`` for each configured spot. On the table PC the readers share the chip
bus's port and the chip driver polls them itself (``ChipsConfig(card_readers=True)``); this one is
for a bus of readers only, and for a technician (``tablectl monitor cards --port PATH``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from drivers.base import Opener
from drivers.chips import ChipsDriver
from drivers.config import CardReaderConfig
from drivers.link import LinkTiming


class CardReaderDriver(ChipsDriver):
    """The player-card readers alone: polls ``0x40 | spot`` for each configured spot.

    Events: card_in, card_out, card_unreadable, reader_lost, reader_back (+ health, link_up);
    :attr:`cards` is what each reader holds now (spot -> card number). On the chip bus's port it leaves the chip
    sensors unpolled (the table's own driver is ``ChipsDriver`` with ``card_readers=True``).
    """

    device: ClassVar[str] = "cards"

    def __init__(
        self, config: CardReaderConfig, *, timing: LinkTiming | None = None, opener: Opener | None = None
    ) -> None:
        super().__init__(config, timing=timing, opener=opener)

    def _bus_addresses(self) -> Iterable[int]:
        return ()
