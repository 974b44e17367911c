"""Card-reading dealing shoe: message types and the driver.

The shoe reports each card as it leaves (face up: its value; face down: only
that a hole card left, held under the peek reader), the cut card, misreads,
shoe removal, and answers peek requests with blackjack yes/no, never the card.

Card reads across a crash (DESIGN, "Device protocols"): the shoe numbers every
read ``(load, read)`` and keeps the recent ones; a link-level ACK does not make
a card safe, the table's journal commit does. So at every link start the driver
asks for the reads after the last one the table journaled (:attr:`ShoeDriver.resume_after`,
set by the service from its journal), holds every read until the shoe says the
replay is done, then hands them on in the shoe's numbering order (the replayed
reads arrive after the frames the shoe had queued before the crash, but come
before them), each once: a read at or before the last one handed on is a repeat
and dropped. Presence changes are numbered reads too, so they keep their place.
Each REPLAY carries a tag the driver picks anew and the shoe's REPLAY_END echoes
it: only the answer to the last REPLAY ends the replay. The shoe's queue outlives
a table process, so an answer to the REPLAY of a process that died before it
arrived can reach the next one first; taken as its own, it would hand on reads
before the replayed ones they follow, and drop those as repeats: lost.
Reads the shoe no longer holds become one :class:`ReadsUnaccounted` event
naming how many.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import struct
from collections.abc import Iterable
from typing import ClassVar, Final

from cardnotation import CARDS, RANKS
from drivers.base import Opener, SerialDriver
from drivers.config import ShoeConfig
from drivers.errors import DeviceTimeout, LinkLost
from drivers.events import (
    CardRead,
    CutCard,
    DealingState,
    DeviceEvent,
    HoleCardDealt,
    HoleCardRevealed,
    Misread,
    PeekResult,
    ReadsUnaccounted,
    ShoePresence,
    ShoeRead,
    ShoeReadEvent,
)
from drivers.link import LinkTiming

log = logging.getLogger(__name__)

ROLE: Final = ord("S")

# device -> host
CARD: Final = 0x10  # rank, suit (ASCII)
HOLE_DEALT: Final = 0x11  # (empty)
HOLE_REVEALED: Final = 0x12  # rank, suit (ASCII)
CUT: Final = 0x13  # (empty)
MISREAD: Final = 0x14  # reason code
PEEK_RESULT: Final = 0x15  # request id, 0 no / 1 blackjack / 2 no hole card held
PRESENCE: Final = 0x16  # 0 removed / 1 inserted
DEALING: Final = 0x17  # 0 locked / 1 enabled
REPLAY_END: Final = 0x18  # load u16, read u16 (the shoe's last read), missing u16 (0xFFFF: cannot tell), tag u32
# host -> device
PEEK_REQUEST: Final = 0x20  # request id, up-card rank (ASCII)
ENABLE: Final = 0x21
LOCK: Final = 0x22
RESET: Final = 0x23
REVEAL_HOLE: Final = 0x24
REPLAY: Final = 0x25  # load u16, read u16: send every read after this one (0, 0: none journaled yet), tag u32

#: the shoe's numbered reports ("reads"): their payload starts with the number, load u16 and read u16 (BE);
#: the others (PEEK_RESULT, DEALING, REPLAY_END) answer a request of the host, which asks again if need be
READ_TYPES: Final = frozenset({CARD, HOLE_DEALT, HOLE_REVEALED, CUT, MISREAD, PRESENCE})
READ_NUMBER: Final = struct.Struct(">HH")
#: REPLAY: the read to start after and the host's tag for this request, echoed by its REPLAY_END
REPLAY_ASK: Final = struct.Struct(">HHI")
REPLAY_ANSWER: Final = struct.Struct(">HHHI")
#: ``missing`` in REPLAY_END when the shoe cannot tell (the load asked for is not one it remembers)
MISSING_UNKNOWN: Final = 0xFFFF


def read_after(a: ShoeRead, b: ShoeRead) -> bool:
    """Whether read ``a`` comes after read ``b`` (loads count modulo 2**16: a later load within half
    the range is later)."""
    loads_on = (a[0] - b[0]) & 0xFFFF
    return a[1] > b[1] if loads_on == 0 else loads_on < 0x8000

MISREAD_REASONS: Final[dict[int, str]] = {1: "unreadable", 2: "double card", 3: "foreign card back"}


def card_bytes(card: str) -> bytes:
    """Wire form of a card: two ASCII bytes."""
    return card.encode("ascii")


def parse_card_bytes(payload: bytes) -> str | None:
    """The card in ``payload``, or ``None`` if the bytes are not a card."""
    text = payload.decode("ascii", "replace")
    return text if text in CARDS else None


class ShoeDriver(SerialDriver):
    """Driver of the card-reading shoe. Events: card, hole_dealt, hole_revealed, cut_card,
    misread, peek, shoe, dealing (+ health, link_up)."""

    device: ClassVar[str] = "shoe"
    role: ClassVar[int] = ROLE

    def __init__(
        self, config: ShoeConfig, *, timing: LinkTiming | None = None, opener: Opener | None = None
    ) -> None:
        super().__init__(config, timing=timing, opener=opener)
        self._peek_ids = itertools.count(1)
        self._peeks: dict[int, asyncio.Future[bool | None]] = {}
        #: the last read handed on (the service sets it from its journal before opening): the replay
        #: asked at each link start begins after it, and a read at or before it is a repeat
        self.resume_after: ShoeRead | None = None
        #: reads held from a link start until the shoe's REPLAY_END
        self._held: list[ShoeReadEvent] = []
        self._replaying = False
        #: the tag of the last REPLAY sent: only the REPLAY_END that echoes it ends the replay
        self._replay_tag: int | None = None
        #: reads dropped as repeats (already handed on)
        self.repeats = 0

    async def request_peek(self, up_rank: str) -> bool | None:
        """Ask the peek reader whether the hole card makes blackjack with an up card of ``up_rank``.

        Returns ``True``/``False``, or ``None`` when the shoe holds no hole card.
        Raises :class:`LinkLost` / :class:`DeviceTimeout`.
        """
        if up_rank not in RANKS:
            raise ValueError(f"up_rank must be one of {RANKS}, got {up_rank!r}")
        req = next(self._peek_ids) & 0xFF
        fut: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()
        self._peeks[req] = fut
        try:
            await self._command(PEEK_REQUEST, bytes((req,)) + up_rank.encode("ascii"))
            return await asyncio.wait_for(fut, self.config.request_timeout_s)
        except TimeoutError:
            raise DeviceTimeout(f"shoe: no peek answer in {self.config.request_timeout_s:g} s") from None
        finally:
            self._peeks.pop(req, None)

    async def enable_dealing(self) -> None:
        """Unlock the shoe's gate."""
        await self._command(ENABLE)

    async def lock_dealing(self) -> None:
        """Lock the gate: no card can be drawn (e.g. while the round is halted)."""
        await self._command(LOCK)

    async def reveal_hole(self) -> None:
        """Ask the peek reader to report the hole card (when the dealer turns it)."""
        await self._command(REVEAL_HOLE)

    async def reset(self) -> None:
        """Reset the shoe's reader (after a misread was handled)."""
        await self._command(RESET)

    # -- reads, in order and once ---------------------------------------------------------------

    def _on_link_up(self) -> None:
        """Ask for the reads after the last one handed on; hold every read until the answer is complete.

        The tag is new at each link start (random: a new table process must not reuse the tag of one
        that died while the shoe still had its answer queued), so an earlier REPLAY's answer is told apart.
        """
        self._replaying = True
        load, read = self.resume_after if self.resume_after is not None else (0, 0)
        tag = secrets.randbits(32)
        while tag == self._replay_tag:
            tag = secrets.randbits(32)
        self._replay_tag = tag
        self.link.send(REPLAY, REPLAY_ASK.pack(load, read, tag), asyncio.get_running_loop().time())

    def _read(self, event: ShoeReadEvent) -> Iterable[DeviceEvent]:
        if self._replaying:
            self._held.append(event)
            return ()
        return self._in_order(event)

    def _in_order(self, event: ShoeReadEvent) -> Iterable[DeviceEvent]:
        """The read, unless it is at or before the last one handed on (a repeat)."""
        assert event.read is not None
        if self.resume_after is not None and not read_after(event.read, self.resume_after):
            self.repeats += 1
            return ()
        self.resume_after = event.read
        return (event,)

    def _replay_done(self, payload: bytes) -> Iterable[DeviceEvent]:
        """REPLAY_END: the held reads in the shoe's order, each once, after any that are lost.

        A REPLAY_END that does not echo the tag of the last REPLAY answers an earlier one (this
        process's before a link restart, or one of a table process that died before the answer came)
        and is ignored: the reads asked for last may still be on their way behind it.
        """
        load, read, missing, tag = REPLAY_ANSWER.unpack(payload[:REPLAY_ANSWER.size])
        if not self._replaying or tag != self._replay_tag:
            log.info("shoe: REPLAY_END of an earlier REPLAY ignored (tag %08x, waiting for %s)", tag,
                     "none" if not self._replaying or self._replay_tag is None else f"{self._replay_tag:08x}")
            return ()
        asked, held = self.resume_after, self._held
        self._replaying, self._held = False, []
        out: list[DeviceEvent] = []
        if asked is not None and (missing == MISSING_UNKNOWN or read_after(asked, (load, read))):
            # the shoe does not know the read asked for (reset, or another shoe): start again from its count
            log.warning("shoe: cannot replay the reads after %s (the shoe is at %s)", asked, (load, read))
            out.append(ReadsUnaccounted(None, asked))
            self.resume_after = asked = None
        elif missing:
            out.append(ReadsUnaccounted(missing, asked))
        if asked is not None:
            base = asked

            def shoe_order(event: ShoeReadEvent) -> tuple[int, int]:
                load_, read_ = event.read or base
                return (load_ - base[0]) & 0xFFFF, read_

            held.sort(key=shoe_order)  # the replayed reads may arrive after newer ones queued before the crash
        for event in held:
            out.extend(self._in_order(event))
        if self.resume_after is None:
            self.resume_after = (load, read)  # nothing to compare with yet: the shoe's count is the start
        return out

    def _decode(self, mtype: int, payload: bytes) -> Iterable[DeviceEvent]:
        if mtype in READ_TYPES:
            number = READ_NUMBER.unpack(payload[:READ_NUMBER.size])
            return self._read(self._decode_read(mtype, payload[READ_NUMBER.size:], number))
        if mtype == REPLAY_END:
            return self._replay_done(payload)
        if mtype == PEEK_RESULT:
            req, result = payload[0], payload[1]
            answer = None if result == 2 else bool(result)
            fut = self._peeks.get(req)
            if fut is not None and not fut.done():
                fut.set_result(answer)
            return (PeekResult(req, answer),)
        if mtype == DEALING:
            return (DealingState(bool(payload[0])),)
        raise ValueError(f"unknown shoe message type 0x{mtype:02X}")

    @staticmethod
    def _decode_read(mtype: int, content: bytes, read: ShoeRead) -> ShoeReadEvent:
        if mtype in (CARD, HOLE_REVEALED):
            card = parse_card_bytes(content)
            if card is None:
                return Misread(f"invalid card code {content.hex()}", read=read)
            return CardRead(card, read=read) if mtype == CARD else HoleCardRevealed(card, read=read)
        if mtype == HOLE_DEALT:
            return HoleCardDealt(read=read)
        if mtype == CUT:
            return CutCard(read=read)
        if mtype == PRESENCE:
            return ShoePresence(bool(content[0]), read=read)
        code = content[0]
        return Misread(MISREAD_REASONS.get(code, f"code {code}"), read=read)

    def _lost(self, reason: str) -> None:
        for fut in self._peeks.values():
            if not fut.done():
                fut.set_exception(LinkLost(f"shoe: link lost during peek ({reason})"))
        super()._lost(reason)
