"""Player-card readers on the chip bus: message types, typed events, and the readers' levels (sans-I/O).

A card reader sits at each betting spot on the table's RS-485 bus, the chip sensors' bus, at its
own address ``0x40 | spot`` (0x41..0x47; the chip sensors are 1..7 and ``0x80 | spot``). The bus
master polls it with the chip bus's own POLL; it answers with what it holds now, a *level* like a
chip reading, never an edge: CARD_IN (the card number as read), NO_CARD or UNREADABLE. So a
reading lost in a crash or a reopened port is simply read again, and :class:`ReaderLevels` turns
the levels into events only when one changes: ``card_in``, ``card_out``, ``card_unreadable``.

A reader that stops answering (three polls in a row unanswered, or ABSENT: nothing fitted at its
address) is ``reader_lost``; its card is *not* taken as removed (the player is probably still
there) and the next answer is ``reader_back``, then a change of card if there was one.

Two ways to read them, one protocol (docs/protocols.md, "Player-card readers"):

* on the chip bus's port, by the chip driver itself: ``ChipsConfig(card_readers=True)`` polls the
  readers of the configured spots after the chip sensors (one port, one driver: the port is
  opened exclusively);
* on a bus of their own, or by a technician on the chip bus's port: :class:`CardReaderDriver`
  (``tablectl monitor cards``), which polls the readers only.

Neither changes the chip bus's protocol version: POLL is the same message, and a bus with no reader
at an address answers ABSENT there as it always did.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from drivers.events import DeviceEvent

#: the readers' addresses: ``READER_BIT | spot``
READER_BIT: Final = 0x40

# device -> host (answers to the chip bus's POLL 0x50 at a reader's address)
CARD_IN: Final = 0x54  # address, card number (ASCII 0-9 A-Z, 1..20 characters)
NO_CARD: Final = 0x55  # address
UNREADABLE: Final = 0x56  # address, reason

UNREADABLE_REASONS: Final[dict[int, str]] = {
    1: "blank or damaged card",
    2: "not a player card of this casino",
    3: "card inserted the wrong way",
}
#: a card number as the reader sends it
CARD_NUMBER: Final = re.compile(r"[0-9A-Z]{1,20}")
#: consecutive unanswered polls after which a reader is lost
LOST_AFTER: Final = 3


def reader_address(spot: int) -> int:
    """Bus address of the card reader at ``spot`` (1..7)."""
    if not 1 <= spot <= 7:
        raise ValueError(f"spot must be 1..7, got {spot}")
    return READER_BIT | spot


def reader_spot(addr: int) -> int | None:
    """The spot of a reader address, or None when ``addr`` is not a reader's."""
    spot = addr & ~READER_BIT
    return spot if addr & 0xC0 == READER_BIT and 1 <= spot <= 7 else None


def encode_card_in(spot: int, number: str) -> bytes:
    """Payload of CARD_IN: the reader's address and the card number; ValueError for a bad number."""
    if not CARD_NUMBER.fullmatch(number):
        raise ValueError(f"card number {number!r}: 1 to 20 of 0-9 A-Z")
    return bytes((reader_address(spot),)) + number.encode("ascii")


def decode_card_number(raw: bytes) -> str:
    """The card number of a CARD_IN payload (after the address); ValueError if it is not one."""
    number = raw.decode("ascii", "replace")
    if not CARD_NUMBER.fullmatch(number):
        raise ValueError(f"card number {number!r} is not 1 to 20 of 0-9 A-Z")
    return number


# -- events -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PlayerCardInserted(DeviceEvent):
    """A player's card is in the reader at ``spot``; ``player`` is the number as read."""

    type: ClassVar[str] = "card_in"
    spot: int
    player: str


@dataclass(frozen=True, slots=True)
class PlayerCardRemoved(DeviceEvent):
    """The card ``player`` left the reader at ``spot`` (or another card took its place)."""

    type: ClassVar[str] = "card_out"
    spot: int
    player: str


@dataclass(frozen=True, slots=True)
class PlayerCardUnreadable(DeviceEvent):
    """A card is in the reader at ``spot`` but could not be read (``code``: docs/protocols.md)."""

    type: ClassVar[str] = "card_unreadable"
    spot: int
    code: int
    reason: str


@dataclass(frozen=True, slots=True)
class CardReaderLost(DeviceEvent):
    """The reader at ``spot`` stopped answering; its card, if any, is taken as still in."""

    type: ClassVar[str] = "reader_lost"
    spot: int
    reason: str


@dataclass(frozen=True, slots=True)
class CardReaderBack(DeviceEvent):
    """The reader at ``spot`` answers again."""

    type: ClassVar[str] = "reader_back"
    spot: int


PlayerCardEvent = PlayerCardInserted | PlayerCardRemoved | PlayerCardUnreadable | CardReaderLost | CardReaderBack

_EMPTY: Final = ""
_UNREADABLE: Final = "?"


class ReaderLevels:
    """What each reader held when last polled, and the events a new answer makes (sans-I/O).

    ``cards`` maps a spot to the card number in its reader now (spots with no card are absent).
    """

    __slots__ = ("_heard", "_level", "_lost", "_missed", "cards", "spots")

    def __init__(self, spots: Sequence[int]) -> None:
        self.spots = tuple(spots)
        for spot in self.spots:
            reader_address(spot)
        self.cards: dict[int, str] = {}
        self._heard: set[int] = set()  # spots whose reader has answered since this start
        self._level: dict[int, str] = {}  # spot -> card number, _EMPTY or _UNREADABLE
        self._missed: dict[int, int] = {}
        self._lost: set[int] = set()

    @property
    def addresses(self) -> tuple[int, ...]:
        """The reader addresses to poll, in spot order."""
        return tuple(reader_address(s) for s in self.spots)

    @property
    def heard(self) -> frozenset[int]:
        """Spots whose reader has answered since start: for those, ``cards`` says what they hold (a level, so a
        card pulled while nobody polled shows as its absence here, with no event)."""
        return frozenset(self._heard)

    @property
    def lost(self) -> frozenset[int]:
        """Spots whose reader does not answer."""
        return frozenset(self._lost)

    def answered(self, mtype: int, payload: bytes) -> list[DeviceEvent]:
        """A reader's answer (CARD_IN, NO_CARD, UNREADABLE; ABSENT at a reader address) -> events.

        ValueError for a payload that is not one (the driver logs it; the level stays as it was)."""
        spot = reader_spot(payload[0])
        if spot is None:
            raise ValueError(f"address 0x{payload[0]:02X} is not a card reader's")
        if mtype == CARD_IN:
            level = decode_card_number(payload[1:])
        elif mtype == NO_CARD:
            level = _EMPTY
        elif mtype == UNREADABLE:
            code = payload[1]
            if code not in UNREADABLE_REASONS:
                raise ValueError(f"unknown unreadable-card reason {code}")
            level = _UNREADABLE
        else:  # ABSENT: nothing answers at that address
            return self._lose(spot, "no reader fitted at its address")
        out: list[DeviceEvent] = []
        self._missed[spot] = 0
        self._heard.add(spot)
        if spot in self._lost:
            self._lost.discard(spot)
            out.append(CardReaderBack(spot))
        before = self._level.get(spot, _EMPTY)
        if level == before and level != _UNREADABLE:
            return out
        if before not in (_EMPTY, _UNREADABLE):
            out.append(PlayerCardRemoved(spot, before))
            self.cards.pop(spot, None)
        self._level[spot] = level
        if level == _UNREADABLE:
            if before != _UNREADABLE:
                out.append(PlayerCardUnreadable(spot, payload[1], UNREADABLE_REASONS[payload[1]]))
        elif level != _EMPTY:
            self.cards[spot] = level
            out.append(PlayerCardInserted(spot, level))
        return out

    def missed(self, spot: int) -> list[DeviceEvent]:
        """A poll of ``spot``'s reader got no answer in time (the link being up)."""
        self._missed[spot] = self._missed.get(spot, 0) + 1
        if self._missed[spot] < LOST_AFTER:
            return []
        return self._lose(spot, f"no answer to {self._missed[spot]} polls")

    def _lose(self, spot: int, reason: str) -> list[DeviceEvent]:
        if spot in self._lost:
            return []
        self._lost.add(spot)
        return [CardReaderLost(spot, reason)]
