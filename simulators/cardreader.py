"""Simulated player-card readers: what each reader on the chip bus answers to a poll, with faults.

The readers live on the chip bus (:class:`simulators.chips.SimChips` ``readers=``), each at
``0x40 | spot`` as on the table. In-process API for a simulated player and for tests:
``insert(spot, number)``, ``remove(spot)`` (also a card pulled mid-round: the readers know
nothing of rounds), ``insert_unreadable(spot, code)`` (a blank, foreign or reversed card), and
``lose(spot)`` / ``restore(spot)`` (a reader that stops answering, e.g. its cable cut: polls at its
address go unanswered). ``log`` keeps every change with the time it was made, the truth a
rating is checked against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from drivers import chips
from drivers import playercard as proto


@dataclass(frozen=True, slots=True)
class ReaderChange:
    """One thing done to a reader: ``what`` is ``in``, ``out``, ``unreadable``, ``lost`` or ``restored``."""

    at: float
    spot: int
    what: str
    number: str | None = None


class CardReaders:
    """The card readers of one table (spots 1..7 unless ``spots`` says otherwise)."""

    def __init__(self, spots: Iterable[int] = range(1, 8), *, clock: Callable[[], float] = time.time) -> None:
        self.spots = frozenset(spots)
        for spot in self.spots:
            proto.reader_address(spot)
        self._clock = clock
        self.cards: dict[int, str] = {}
        self.unreadable: dict[int, int] = {}
        self.silent: set[int] = set()
        self.log: list[ReaderChange] = []
        self.polls = 0

    def _spot(self, spot: int) -> int:
        if spot not in self.spots:
            raise ValueError(f"no card reader at spot {spot} (readers at {sorted(self.spots)})")
        return spot

    def insert(self, spot: int, number: str) -> None:
        """A player's card, number ``number``, goes into the reader at ``spot`` (replacing any card)."""
        proto.encode_card_in(self._spot(spot), number)  # refuses a number the protocol cannot carry
        self.unreadable.pop(spot, None)
        self.cards[spot] = number
        self.log.append(ReaderChange(self._clock(), spot, "in", number))

    def remove(self, spot: int) -> None:
        """The card at ``spot`` is taken out (nothing happens if there is none)."""
        number = self.cards.pop(self._spot(spot), None)
        if self.unreadable.pop(spot, None) is not None or number is not None:
            self.log.append(ReaderChange(self._clock(), spot, "out", number))

    def insert_unreadable(self, spot: int, code: int = 1) -> None:
        """A card the reader cannot read goes in at ``spot`` (``code``: docs/protocols.md)."""
        if code not in proto.UNREADABLE_REASONS:
            raise ValueError(f"unreadable-card reason {code}: one of {sorted(proto.UNREADABLE_REASONS)}")
        self.cards.pop(self._spot(spot), None)
        self.unreadable[spot] = code
        self.log.append(ReaderChange(self._clock(), spot, "unreadable"))

    def lose(self, spot: int) -> None:
        """The reader at ``spot`` stops answering (its card, if any, stays in)."""
        self.silent.add(self._spot(spot))
        self.log.append(ReaderChange(self._clock(), spot, "lost"))

    def restore(self, spot: int) -> None:
        """The reader at ``spot`` answers again."""
        self.silent.discard(self._spot(spot))
        self.log.append(ReaderChange(self._clock(), spot, "restored"))

    def answer(self, addr: int) -> tuple[int, bytes] | None:
        """The reader's answer to a POLL at ``addr``: (type, payload); None when it stays silent.

        ``addr`` must be a reader address (:func:`drivers.playercard.reader_spot`)."""
        spot = proto.reader_spot(addr)
        if spot is None:
            raise ValueError(f"address 0x{addr:02X} is not a card reader's")
        self.polls += 1
        if spot not in self.spots:
            return chips.ABSENT, bytes((addr,))
        if spot in self.silent:
            return None
        if spot in self.unreadable:
            return proto.UNREADABLE, bytes((addr, self.unreadable[spot]))
        if spot in self.cards:
            return proto.CARD_IN, proto.encode_card_in(spot, self.cards[spot])
        return proto.NO_CARD, bytes((addr,))
