"""Simulated shuffler with two deck sets; can be loaded with a wrong deck, jam, open its door.

On START it reports SHUFFLE_STARTED, waits ``shuffle_time`` seconds, counts the
set and reports SHUFFLE_COMPLETE with the per-rank composition, then
DECK_SET_READY when it matches ``decks`` full decks or COUNT_MISMATCH when not.

``shuffler`` picks the machine (:data:`SHUFFLERS`): ``good`` shuffles uniformly; ``weak`` is a broken
one-pass machine (:func:`one_pass`: the deck set cut once and riffled together once, so most of its
previous order survives); ``clumpy`` shuffles uniformly but lets cards stick in clumps of 2 or 3
(:func:`clumpy`), a milder fault. The same functions make the demo's shoes (``tablectl demo --shuffler``)
and the shoes of ``benchmarks/shuffle_quality.py``.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar, Final

from cardnotation import RANKS, parse_card, shoe_of
from drivers import shuffler as proto
from drivers.link import LinkTiming
from simulators.device import SimDevice

#: the simulated machines: a good one, a broken one-pass machine, one whose cards stick in clumps
SHUFFLERS: Final = ("good", "weak", "clumpy")
#: ``clumpy``: the chance that a card starts a clump (of 2 or 3 cards, equally likely) with those after it
CLUMP_RATE: Final = 0.1


def one_pass(cards: Sequence[str], rng: random.Random) -> list[str]:
    """One pass of a broken machine: cut once (binomially, as a dealer cuts) and riffled together once
    (each card dropped from a packet with probability proportional to its size: Gilbert-Shannon-Reeds)."""
    n = len(cards)
    cut = sum(1 for _ in range(n) if rng.random() < 0.5)
    left, right = list(cards[:cut]), list(cards[cut:])
    out: list[str] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if rng.random() * (len(left) - i + len(right) - j) < len(left) - i:
            out.append(left[i])
            i += 1
        else:
            out.append(right[j])
            j += 1
    return out


def clumpy(cards: Sequence[str], rng: random.Random, rate: float = CLUMP_RATE) -> list[str]:
    """A uniform shuffle of clumps: each card starts, with probability ``rate``, a clump of 2 or 3 cards
    that stay together in their order (cards that stick: a milder fault than :func:`one_pass`)."""
    clumps: list[Sequence[str]] = []
    i = 0
    while i < len(cards):
        size = rng.choice((2, 3)) if rng.random() < rate else 1
        clumps.append(cards[i:i + size])
        i += size
    rng.shuffle(clumps)
    return [card for clump in clumps for card in clump]


def shuffle_with(shuffler: str, cards: Sequence[str], rng: random.Random) -> list[str]:
    """``cards`` shuffled by the machine named ``shuffler`` (one of :data:`SHUFFLERS`)."""
    if shuffler == "weak":
        return one_pass(cards, rng)
    if shuffler == "clumpy":
        return clumpy(cards, rng)
    if shuffler != "good":
        raise ValueError(f"shuffler must be one of {', '.join(SHUFFLERS)}, not {shuffler!r}")
    out = list(cards)
    rng.shuffle(out)
    return out


class SimShuffler(SimDevice):
    """The shuffler. ``jam_next`` makes the next shuffle jam until the host clears it."""

    role: ClassVar[int] = proto.ROLE
    name: ClassVar[str] = "shuffler"

    def __init__(
        self,
        *,
        decks: int = 6,
        seed: int | None = None,
        shuffle_time: float = 0.05,
        link: str | None = None,
        corrupt: float = 0.0,
        drop: float = 0.0,
        fault_seed: int | None = None,
        timing: LinkTiming | None = None,
        shuffler: str = "good",
    ) -> None:
        super().__init__(link=link, corrupt=corrupt, drop=drop, fault_seed=fault_seed, timing=timing)
        if shuffler not in SHUFFLERS:
            raise ValueError(f"shuffler must be one of {', '.join(SHUFFLERS)}, not {shuffler!r}")
        #: which machine this is (:data:`SHUFFLERS`): each shuffle starts from the set's previous order
        self.shuffler = shuffler
        self.decks = decks
        self.shuffle_time = shuffle_time
        self._rng = random.Random(seed)
        self.sets: dict[str, list[str]] = {s: shoe_of(decks) for s in proto.DECK_SETS}
        self.jam_next = False
        self.door_open = False
        self.jammed: str | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.shuffles = 0

    def load(self, deck_set: str, cards: Sequence[str]) -> None:
        """Put these cards in ``deck_set`` (a wrong deck: missing, extra or foreign cards)."""
        self.sets[deck_set] = [parse_card(c) for c in cards]

    def jam(self) -> None:
        """The next shuffle jams."""
        self.jam_next = True

    def clear_jam(self) -> None:
        """A technician frees the jammed cards at the machine: it reports the jam cleared and finishes."""
        if self.jammed is not None:
            self._on_message(proto.CLEAR_JAM, self.jammed.encode("ascii"))

    def open_door(self) -> None:
        """Open the door (a shuffle cannot start while it is open)."""
        self.door_open = True
        self._send(proto.DOOR, b"\x01")

    def close_door(self) -> None:
        """Close the door."""
        self.door_open = False
        self._send(proto.DOOR, b"\x00")

    async def stop(self) -> None:
        """Cancel shuffles in progress, close the pty."""
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await super().stop()

    def _on_message(self, mtype: int, payload: bytes) -> None:
        if mtype == proto.START and len(payload) >= 2:
            deck_set, decks = chr(payload[0]), payload[1]
            if deck_set not in self.sets:
                return
            if self.door_open:
                self._send(proto.DOOR, b"\x01")
                return
            task = asyncio.get_running_loop().create_task(self._shuffle(deck_set, decks))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif mtype == proto.CLEAR_JAM and payload:
            deck_set = chr(payload[0])
            if self.jammed == deck_set:
                self.jammed = None
                self._send(proto.JAM, deck_set.encode() + b"\x01")
                task = asyncio.get_running_loop().create_task(self._shuffle(deck_set, self.decks, resumed=True))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        elif mtype == proto.RESET:
            self.jammed = None

    async def _shuffle(self, deck_set: str, decks: int, *, resumed: bool = False) -> None:
        self.decks = decks
        set_b = deck_set.encode("ascii")
        if not resumed:
            self._send(proto.STARTED, set_b)
        await asyncio.sleep(self.shuffle_time)
        if self.jam_next:
            self.jam_next = False
            self.jammed = deck_set
            self._send(proto.JAM, set_b + b"\x00")
            return
        cards = self.sets[deck_set]
        if self.shuffler == "good":
            self._rng.shuffle(cards)  # in place, as before: a seed gives the orders it always gave
        else:
            cards = self.sets[deck_set] = shuffle_with(self.shuffler, cards, self._rng)
        counts = Counter(c[0] for c in cards)
        composition = [min(counts[r], 255) for r in RANKS]
        count = len(cards)
        self._send(proto.COMPLETE, proto.COMPLETE_FMT.pack(set_b, count, *composition))
        expected = 52 * decks
        if count != expected or any(n != 4 * decks for n in composition):
            self._send(proto.MISMATCH, proto.MISMATCH_FMT.pack(set_b, expected, count))
        else:
            self._send(proto.READY, set_b)
        self.shuffles += 1
