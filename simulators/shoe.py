"""Simulated card-reading shoe: a seeded (or stacked) shoe with a cut card.

In-process API for a simulated dealer: ``deal()`` pulls the next card (face
up: the card goes on the wire; ``face_down=True``: only "a hole card left",
the card stays under the peek reader), ``reveal_hole()``, ``peek(up_rank)``.
The host's PEEK_REQUEST is answered yes/no from the held hole card; the card
itself never crosses the wire before it is revealed.

``auto(n)`` deals ``n`` cards as fast as the link accepts them, reshuffling at
the cut card. The order comes from ``seed`` alone (faults have their own
generator), so a faulty run can be compared card by card with a clean one.

Every read (a card face up or down, the hole card turned, the cut card, a
misread, the shoe lifted or put back) is numbered ``(load, read)``: ``load`` counts the shoes loaded, ``read``
the reads since. The shoe keeps the last ``keep_reads`` of them and, asked with
REPLAY, sends those after the host's last one again, then REPLAY_END with how
many it no longer holds and the REPLAY's tag (docs/protocols.md). ``on_read``
sees each read as it is made (the bench's record of what the shoe dealt).
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple

from cardnotation import RANKS, parse_card, shoe_of
from drivers import shoe as proto
from drivers.link import LinkTiming
from simulators.device import SimDevice


class ShoeEmpty(RuntimeError):
    """The simulated dealer pulled a card from an empty shoe."""


class DealingLocked(RuntimeError):
    """The host locked the shoe's gate; no card can be pulled."""


def shuffled_shoe(rng: random.Random, decks: int) -> list[str]:
    """A shoe of ``decks`` decks shuffled with ``rng``."""
    cards = shoe_of(decks)
    rng.shuffle(cards)
    return cards


#: what the peek reader tells apart (its firmware's one piece of blackjack: an ace and a ten-value card)
_PEEK_CLASS: dict[str, str] = {r: "ace" if r == "A" else "ten" if r in "TJQK" else "other" for r in RANKS}


class KeptRead(NamedTuple):
    """One read as the shoe sent it (kept for a replay)."""

    load: int
    read: int
    mtype: int
    content: bytes


#: loads whose read counts the shoe remembers (to say how many reads of an older load it lost)
LOADS_REMEMBERED = 8


class SimShoe(SimDevice):
    """The shoe. ``penetration`` places the cut card (fraction of the shoe before it)."""

    role: ClassVar[int] = proto.ROLE
    name: ClassVar[str] = "shoe"

    def __init__(
        self,
        *,
        decks: int = 6,
        seed: int | None = None,
        penetration: float = 0.75,
        stacked: Sequence[str] | None = None,
        link: str | None = None,
        corrupt: float = 0.0,
        drop: float = 0.0,
        fault_seed: int | None = None,
        timing: LinkTiming | None = None,
        keep_reads: int = 512,
        on_read: Callable[[KeptRead], None] | None = None,
    ) -> None:
        super().__init__(link=link, corrupt=corrupt, drop=drop, fault_seed=fault_seed, timing=timing)
        if not 0.0 < penetration <= 1.0:
            raise ValueError(f"penetration must be in (0, 1], got {penetration}")
        if keep_reads < 0:
            raise ValueError(f"keep_reads must be 0 or more, got {keep_reads}")
        #: the current load's number (1, 2, ... wrapping after 65535 to 1) and its reads so far
        self.load = 0
        self.read = 0
        #: reads per load, for the last few loads (the current one last)
        self.load_reads: dict[int, int] = {}
        self.kept: deque[KeptRead] = deque(maxlen=keep_reads)
        self.on_read = on_read
        self.replays_answered = 0
        self.decks = decks
        self.penetration = penetration
        self._rng = random.Random(seed)
        self.cards: list[str] = []
        self.position = 0
        self.cut_at = 0
        self.cut_card_out = False
        self.hole: str | None = None
        self.enabled = True
        self.inserted = True
        self.dealt_total = 0
        self.peeks_answered = 0
        if stacked is not None:
            self.stack(stacked)
        else:
            self.reshuffle()

    # -- the shoe ------------------------------------------------------------
    def _new_load(self) -> None:
        self.load = self.load % 0xFFFF + 1
        self.read = 0
        self.load_reads[self.load] = 0
        while len(self.load_reads) > LOADS_REMEMBERED:
            del self.load_reads[next(iter(self.load_reads))]

    def restore_numbering(self, load: int, read: int, *, loaded_since: bool) -> None:
        """Number on from read ``(load, read)`` (a simulated shoe rebuilt where a table's journal says;
        ``loaded_since``: a new shoe was loaded after that read): as if this shoe had never stopped."""
        self.load, self.read = load, read
        self.load_reads = {load: read}
        self.kept.clear()
        if loaded_since:
            self._new_load()

    def _send_read(self, mtype: int, content: bytes = b"") -> None:
        """Number a read, keep it for a replay, send it."""
        self.read += 1
        self.load_reads[self.load] = self.read
        kept = KeptRead(self.load, self.read, mtype, content)
        self.kept.append(kept)
        if self.on_read is not None:
            self.on_read(kept)
        self._send(mtype, proto.READ_NUMBER.pack(self.load, self.read) + content)

    def _replay(self, load: int, after: int, tag: int) -> None:
        """REPLAY: every kept read after ``(load, after)``, then REPLAY_END with how many are gone and ``tag``
        (the host's, echoed: it tells its answer from the answer to an earlier REPLAY still in the queue)."""
        self.replays_answered += 1
        missing = 0
        if (load, after) != (0, 0):
            if load not in self.load_reads or after > self.load_reads[load]:
                missing = proto.MISSING_UNKNOWN
            else:
                loads = list(self.load_reads)
                wanted = self.load_reads[load] - after + sum(self.load_reads[x] for x in loads[loads.index(load) + 1:])
                again = [k for k in self.kept if proto.read_after((k.load, k.read), (load, after))]
                for k in again:
                    self._send(k.mtype, proto.READ_NUMBER.pack(k.load, k.read) + k.content)
                missing = min(wanted - len(again), proto.MISSING_UNKNOWN - 1)
        self._send(proto.REPLAY_END, proto.REPLAY_ANSWER.pack(self.load, self.read, missing, tag))

    def reshuffle(self) -> None:
        """Load a freshly shuffled shoe (next order from the seed) and place the cut card."""
        self._new_load()
        self.cards = shuffled_shoe(self._rng, self.decks)
        self.position = 0
        self.cut_at = int(len(self.cards) * self.penetration)
        self.cut_card_out = False

    def stack(self, cards: Sequence[str], cut_at: int | None = None) -> None:
        """Load exactly ``cards`` in this order (a test's stacked shoe)."""
        self._new_load()
        self.cards = [parse_card(c) for c in cards]
        self.position = 0
        self.cut_at = len(self.cards) if cut_at is None else cut_at
        self.cut_card_out = False

    @property
    def remaining(self) -> int:
        """Cards left before the shoe is empty."""
        return len(self.cards) - self.position

    def _next_card(self) -> str:
        if not self.enabled:
            raise DealingLocked("the shoe is locked by the controller")
        if self.position >= len(self.cards):
            raise ShoeEmpty(f"shoe empty after {self.position} cards")
        if self.position >= self.cut_at and not self.cut_card_out:
            self.cut_card_out = True
            self._send_read(proto.CUT)
        card = self.cards[self.position]
        self.position += 1
        self.dealt_total += 1
        return card

    def deal(self, *, face_down: bool = False) -> str:
        """The simulated dealer pulls the next card; returns it (the wire gets it only face up)."""
        card = self._next_card()
        if face_down:
            self.hole = card
            self._send_read(proto.HOLE_DEALT)
        else:
            self._send_read(proto.CARD, proto.card_bytes(card))
        return card

    def reveal_hole(self) -> str | None:
        """The dealer turns the hole card: its value goes on the wire."""
        card, self.hole = self.hole, None
        if card is not None:
            self._send_read(proto.HOLE_REVEALED, proto.card_bytes(card))
        return card

    def peek(self, up_rank: str) -> bool | None:
        """Would the held hole card make blackjack with ``up_rank``? ``None``: no hole card."""
        if self.hole is None:
            return None
        return {_PEEK_CLASS[up_rank], _PEEK_CLASS[self.hole[0]]} == {"ace", "ten"}

    def remove(self) -> None:
        """Lift the shoe body off its base."""
        self.inserted = False
        self._send_read(proto.PRESENCE, b"\x00")

    def insert(self) -> None:
        """Put the shoe body back."""
        self.inserted = True
        self._send_read(proto.PRESENCE, b"\x01")

    # -- faults --------------------------------------------------------------
    def misread(self, reason: int = 1) -> str:
        """The next card leaves the shoe unread (reported as a misread); returns it."""
        card = self._next_card()
        self._send_read(proto.MISREAD, bytes((reason,)))
        return card

    def foreign_card(self, card: str = "AS") -> None:
        """A card not from this shoe's order passes the reader (an integrity case)."""
        self._send_read(proto.CARD, proto.card_bytes(parse_card(card)))

    # -- auto dealing --------------------------------------------------------------
    async def auto(self, n: int, *, every: float = 0.0) -> list[str]:
        """Deal ``n`` cards as fast as the link takes them (at most one each ``every`` seconds),
        reshuffling at the cut card; while the host keeps the shoe locked, wait (a dealer cannot pull
        a card through a locked gate)."""
        dealt: list[str] = []
        for _ in range(n):
            if every > 0:
                await asyncio.sleep(every)
            await self.wait_space()
            while not self.enabled:
                await asyncio.sleep(0.01)
            if self.cut_card_out or self.remaining == 0:
                self.reshuffle()
            dealt.append(self.deal())
        return dealt

    async def drain(self, timeout: float | None = None) -> None:
        """Wait until every message was acknowledged by the host."""
        async def _wait() -> None:
            while self.link.pending:
                self._space.clear()
                await self._space.wait()
                if self.link.pending == 0:
                    return
                await asyncio.sleep(0.001)

        await asyncio.wait_for(_wait(), timeout)

    # -- host commands ----------------------------------------------------------
    def _on_message(self, mtype: int, payload: bytes) -> None:
        if mtype == proto.PEEK_REQUEST and len(payload) >= 2:
            up = chr(payload[1])
            answer = self.peek(up) if up in _PEEK_CLASS else None
            self.peeks_answered += 1
            code = 2 if answer is None else int(answer)
            self._send(proto.PEEK_RESULT, bytes((payload[0], code)))
        elif mtype == proto.ENABLE:
            self.enabled = True
            self._send(proto.DEALING, b"\x01")
        elif mtype == proto.LOCK:
            self.enabled = False
            self._send(proto.DEALING, b"\x00")
        elif mtype == proto.REVEAL_HOLE:
            self.reveal_hole()
        elif mtype == proto.REPLAY and len(payload) >= proto.REPLAY_ASK.size:
            self._replay(*proto.REPLAY_ASK.unpack(payload[:proto.REPLAY_ASK.size]))
        elif mtype == proto.RESET:
            self._send(proto.DEALING, b"\x01" if self.enabled else b"\x00")
