"""What the engine asks of the world after an event: device commands and public records.

``Effect`` objects are returned by :meth:`controller.game.table.Table.handle`.
Device commands (:class:`RequestPeek`, :class:`StartShuffle`, ...) go to drivers;
:class:`Record` is a public event for the journal's outbox and MQTT ``events``:
already redacted (the hole card never appears in one before it is turned).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Record:
    """A public event: ``type`` plus JSON-ready details (no hole card before it is turned)."""

    type: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RequestPeek:
    """Ask the shoe's peek reader whether the hole card makes a blackjack."""


@dataclass(frozen=True, slots=True)
class RevealHole:
    """Ask the shoe's peek reader for the face-down hole card: the dealer turns it now
    (NY 4620.5(i)(1), or the peeked natural of 4620.5(h)(1))."""


@dataclass(frozen=True, slots=True)
class StartShuffle:
    """Ask the shuffler to shuffle a deck set of ``cards`` cards."""

    cards: int
    reason: str


@dataclass(frozen=True, slots=True)
class DealingLocked:
    """Lock (``locked=True``) or enable the shoe's dealing gate."""

    locked: bool


@dataclass(frozen=True, slots=True)
class AlarmRaised:
    alarm_id: int
    code: str
    message: str
    halts: bool


@dataclass(frozen=True, slots=True)
class AlarmCleared:
    alarm_id: int
    code: str


Effect = Record | RequestPeek | RevealHole | StartShuffle | DealingLocked | AlarmRaised | AlarmCleared
