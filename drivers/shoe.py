"""Card-reading dealing shoe: message types and the driver.

The shoe reports each card as it leaves (face up: its value; face down: only
that a hole card left, held under the peek reader), the cut card, misreads,
shoe removal, and answers peek requests with blackjack yes/no, never the card.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable
from typing import ClassVar, Final

from controller.game.cards import RANKS, VALUE
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
    ShoePresence,
)
from drivers.link import LinkTiming

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
# host -> device
PEEK_REQUEST: Final = 0x20  # request id, up-card rank (ASCII)
ENABLE: Final = 0x21
LOCK: Final = 0x22
RESET: Final = 0x23
REVEAL_HOLE: Final = 0x24

MISREAD_REASONS: Final[dict[int, str]] = {1: "unreadable", 2: "double card", 3: "foreign card back"}


def card_bytes(card: str) -> bytes:
    """Wire form of a card: two ASCII bytes."""
    return card.encode("ascii")


def parse_card_bytes(payload: bytes) -> str | None:
    """The card in ``payload``, or ``None`` if the bytes are not a card."""
    text = payload.decode("ascii", "replace")
    return text if text in VALUE else None


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

    def _decode(self, mtype: int, payload: bytes) -> Iterable[DeviceEvent]:
        if mtype in (CARD, HOLE_REVEALED):
            card = parse_card_bytes(payload)
            if card is None:
                return (Misread(f"invalid card code {payload.hex()}"),)
            return (CardRead(card) if mtype == CARD else HoleCardRevealed(card),)
        if mtype == HOLE_DEALT:
            return (HoleCardDealt(),)
        if mtype == CUT:
            return (CutCard(),)
        if mtype == MISREAD:
            code = payload[0]
            return (Misread(MISREAD_REASONS.get(code, f"code {code}")),)
        if mtype == PEEK_RESULT:
            req, result = payload[0], payload[1]
            answer = None if result == 2 else bool(result)
            fut = self._peeks.get(req)
            if fut is not None and not fut.done():
                fut.set_result(answer)
            return (PeekResult(req, answer),)
        if mtype == PRESENCE:
            return (ShoePresence(bool(payload[0])),)
        if mtype == DEALING:
            return (DealingState(bool(payload[0])),)
        raise ValueError(f"unknown shoe message type 0x{mtype:02X}")

    def _lost(self, reason: str) -> None:
        for fut in self._peeks.values():
            if not fut.done():
                fut.set_exception(LinkLost(f"shoe: link lost during peek ({reason})"))
        super()._lost(reason)
