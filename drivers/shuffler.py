"""Automated shuffler with two deck sets ("A", "B"): message types and the driver.

One set is shuffled while the other is dealt (NJ 19:47-2.2(e)); the shuffler
counts every card and reports the per-rank composition it verified.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import ClassVar, Final

from drivers.base import Opener, SerialDriver
from drivers.config import ShufflerConfig
from drivers.events import (
    CountMismatch,
    DeckSetReady,
    DeviceEvent,
    DoorChanged,
    Jam,
    ShuffleComplete,
    ShuffleStarted,
)
from drivers.link import LinkTiming

ROLE: Final = ord("F")
DECK_SETS: Final = ("A", "B")

# device -> host
STARTED: Final = 0x30  # set
COMPLETE: Final = 0x31  # set, count u16, 13 x u8 (A..K)
READY: Final = 0x32  # set
MISMATCH: Final = 0x33  # set, expected u16, counted u16
JAM: Final = 0x34  # set, cleared 0/1
DOOR: Final = 0x35  # 0 closed / 1 open
# host -> device
START: Final = 0x40  # set, decks
CLEAR_JAM: Final = 0x41  # set
RESET: Final = 0x42

COMPLETE_FMT: Final = struct.Struct(">cH13B")
MISMATCH_FMT: Final = struct.Struct(">cHH")


def _set_id(b: bytes) -> str:
    s = b.decode("ascii", "replace")
    if s not in DECK_SETS:
        raise ValueError(f"unknown deck set {b!r}")
    return s


class ShufflerDriver(SerialDriver):
    """Driver of the shuffler. Events: shuffle_started, shuffle_complete, deck_set_ready,
    count_mismatch, jam, door (+ health, link_up)."""

    device: ClassVar[str] = "shuffler"
    role: ClassVar[int] = ROLE

    def __init__(
        self, config: ShufflerConfig, *, timing: LinkTiming | None = None, opener: Opener | None = None
    ) -> None:
        super().__init__(config, timing=timing, opener=opener)
        self.decks = config.decks

    async def start_shuffle(self, deck_set: str, decks: int | None = None) -> None:
        """Shuffle ``deck_set``, verifying ``decks`` decks (default: the configured number)."""
        if deck_set not in DECK_SETS:
            raise ValueError(f"deck_set must be one of {DECK_SETS}, got {deck_set!r}")
        await self._command(START, deck_set.encode("ascii") + bytes((decks or self.decks,)))

    async def clear_jam(self, deck_set: str) -> None:
        """Tell the shuffler the jam was cleared; it resumes the shuffle."""
        await self._command(CLEAR_JAM, deck_set.encode("ascii"))

    async def reset(self) -> None:
        """Abort and reset the shuffler."""
        await self._command(RESET)

    def _decode(self, mtype: int, payload: bytes) -> Iterable[DeviceEvent]:
        if mtype == STARTED:
            return (ShuffleStarted(_set_id(payload[:1])),)
        if mtype == COMPLETE:
            set_b, count, *ranks = COMPLETE_FMT.unpack(payload)
            return (ShuffleComplete(_set_id(set_b), count, tuple(ranks)),)
        if mtype == READY:
            return (DeckSetReady(_set_id(payload[:1])),)
        if mtype == MISMATCH:
            set_b, expected, counted = MISMATCH_FMT.unpack(payload)
            return (CountMismatch(_set_id(set_b), expected, counted),)
        if mtype == JAM:
            return (Jam(_set_id(payload[:1]), bool(payload[1])),)
        if mtype == DOOR:
            return (DoorChanged(bool(payload[0])),)
        raise ValueError(f"unknown shuffler message type 0x{mtype:02X}")
