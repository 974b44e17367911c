"""Typed device events: frozen, slotted, each with a JSON form.

Every event has a class-level ``type`` (the ``"type"`` key of its JSON) and
``to_json()`` returning a dict of plain JSON values, e.g. a card read is
``{"type": "card", "card": "TD"}``. Drivers emit these; they carry bytes'
meaning, never blackjack rules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from cardnotation import RANKS


class Health(StrEnum):
    """What the service publishes per device (``state.devices``)."""

    CONNECTING = "connecting"  # port open, waiting for the device's HELLO
    OK = "ok"
    DEGRADED = "degraded"  # link up but retransmitting / seeing bad frames often
    LOST = "lost"  # cable pulled or device silent; reconnecting with backoff
    FAULT = "fault"  # device incompatible (protocol version, wrong kind of device)
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class DeviceEvent:
    """Base of all events; ``device`` names the driver that produced it."""

    type: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        """Plain-JSON form, ``type`` first."""
        out: dict[str, Any] = {"type": self.type}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


# -- every device ----------------------------------------------------------
@dataclass(frozen=True, slots=True)
class HealthChanged(DeviceEvent):
    """The device's health changed (``reason`` says why, for the technician)."""

    type: ClassVar[str] = "health"
    device: str
    health: Health
    reason: str = ""


@dataclass(frozen=True, slots=True)
class LinkStarted(DeviceEvent):
    """HELLO exchanged: protocol version and session of the device."""

    type: ClassVar[str] = "link_up"
    device: str
    version: int
    session: int


# -- shoe ------------------------------------------------------------------
#: ``(load, read)``: the shoe's number of a read (``read`` counts from 1 since the shoe was loaded, ``load``
#: counts the loads), by which the table asks for the reads it missed (docs/protocols.md)
ShoeRead = tuple[int, int]


@dataclass(frozen=True, slots=True)
class ShoeReadEvent(DeviceEvent):
    """A report of the shoe the table must not lose (a card, the hole card dealt or turned, the cut card,
    a misread, the shoe lifted or put back), with the shoe's number for it (``None`` from a shoe that
    does not number its reports)."""

    read: ShoeRead | None = field(default=None, kw_only=True)


@dataclass(frozen=True, slots=True)
class CardRead(ShoeReadEvent):
    """A card left the shoe face up."""

    type: ClassVar[str] = "card"
    card: str


@dataclass(frozen=True, slots=True)
class HoleCardDealt(ShoeReadEvent):
    """A card left the shoe face down; the peek reader holds it, its value is not sent."""

    type: ClassVar[str] = "hole_dealt"


@dataclass(frozen=True, slots=True)
class HoleCardRevealed(ShoeReadEvent):
    """The face-down card was turned; now its value is public."""

    type: ClassVar[str] = "hole_revealed"
    card: str


@dataclass(frozen=True, slots=True)
class CutCard(ShoeReadEvent):
    """The cut card came out of the shoe."""

    type: ClassVar[str] = "cut_card"


@dataclass(frozen=True, slots=True)
class Misread(ShoeReadEvent):
    """A card left the shoe but could not be read (``reason``: blurred, double, unknown)."""

    type: ClassVar[str] = "misread"
    reason: str


@dataclass(frozen=True, slots=True)
class ReadsUnaccounted(DeviceEvent):
    """At link start the shoe could not send every read after the last one the table journaled.

    ``count``: how many reads it no longer holds (``None``: it cannot tell, e.g. a shoe reset or
    replaced since, whose numbering restarted). ``after``: the table's last read, as it asked."""

    type: ClassVar[str] = "reads_unaccounted"
    count: int | None
    after: ShoeRead | None


@dataclass(frozen=True, slots=True)
class PeekResult(DeviceEvent):
    """Answer of the peek reader: ``blackjack`` true/false, ``None`` if no hole card is held."""

    type: ClassVar[str] = "peek"
    request_id: int
    blackjack: bool | None


@dataclass(frozen=True, slots=True)
class ShoePresence(ShoeReadEvent):
    """The shoe body was removed from or put back into its base."""

    type: ClassVar[str] = "shoe"
    inserted: bool


@dataclass(frozen=True, slots=True)
class DealingState(DeviceEvent):
    """Dealing enabled or locked (the shoe's gate), reported after each command."""

    type: ClassVar[str] = "dealing"
    enabled: bool


# -- shuffler ----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ShuffleStarted(DeviceEvent):
    """The shuffler began shuffling ``deck_set`` ("A" or "B")."""

    type: ClassVar[str] = "shuffle_started"
    deck_set: str


@dataclass(frozen=True, slots=True)
class ShuffleComplete(DeviceEvent):
    """Shuffle done; ``composition`` counts each rank in order A..K."""

    type: ClassVar[str] = "shuffle_complete"
    deck_set: str
    count: int
    composition: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        """Composition as a rank -> count object."""
        return {
            "type": self.type,
            "deck_set": self.deck_set,
            "count": self.count,
            "composition": dict(zip(RANKS, self.composition, strict=True)),
        }


@dataclass(frozen=True, slots=True)
class DeckSetReady(DeviceEvent):
    """``deck_set`` is shuffled, verified and ready to be loaded in the shoe."""

    type: ClassVar[str] = "deck_set_ready"
    deck_set: str


@dataclass(frozen=True, slots=True)
class CountMismatch(DeviceEvent):
    """The shuffler counted ``counted`` cards (or a wrong composition) where ``expected`` were due."""

    type: ClassVar[str] = "count_mismatch"
    deck_set: str
    expected: int
    counted: int


@dataclass(frozen=True, slots=True)
class Jam(DeviceEvent):
    """Cards jammed in the shuffler; ``cleared`` is true when it is fixed."""

    type: ClassVar[str] = "jam"
    deck_set: str
    cleared: bool = False


@dataclass(frozen=True, slots=True)
class DoorChanged(DeviceEvent):
    """The shuffler's door opened or closed."""

    type: ClassVar[str] = "door"
    open: bool


# -- chip sensors --------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Wager(DeviceEvent):
    """Chips on a spot changed. ``line`` is "bet" or "insurance"; money in integer cents."""

    type: ClassVar[str] = "wager"
    spot: int
    line: str
    cents: int
    chips: int


@dataclass(frozen=True, slots=True)
class SensorFault(DeviceEvent):
    """A chip sensor reports a fault (``code`` documented in docs/protocols.md)."""

    type: ClassVar[str] = "sensor_fault"
    spot: int
    line: str
    code: int


# -- console -------------------------------------------------------------------
class Button(StrEnum):
    """Console buttons, in HID bit order (docs/protocols.md)."""

    NO_MORE_BETS = "no_more_bets"
    STAND_NEXT = "stand_next"
    DOUBLE = "double"
    SPLIT = "split"
    SURRENDER = "surrender"
    INSURANCE_CLOSED = "insurance_closed"
    NEW_DECKS = "new_decks"
    ALARM_ACK = "alarm_ack"


@dataclass(frozen=True, slots=True)
class ButtonPressed(DeviceEvent):
    """A console button went down."""

    type: ClassVar[str] = "button_pressed"
    button: Button


@dataclass(frozen=True, slots=True)
class ButtonReleased(DeviceEvent):
    """A console button came up."""

    type: ClassVar[str] = "button_released"
    button: Button


@dataclass(frozen=True, slots=True)
class SpotSelected(DeviceEvent):
    """A per-spot select key (1..7) went down (``pressed``) or up."""

    type: ClassVar[str] = "spot_select"
    spot: int
    pressed: bool


@dataclass(frozen=True, slots=True)
class BadgeRead(DeviceEvent):
    """A badge was swiped at the console's badge reader: ``badge`` is its id as read (1 to 64 of
    ``a-z 0-9 . _ -``; docs/protocols.md, "Badge reader")."""

    type: ClassVar[str] = "badge"
    badge: str


@dataclass(frozen=True, slots=True)
class BadgeSignOut(DeviceEvent):
    """The badge reader's sign-out key was pressed: the dealer on duty leaves the table."""

    type: ClassVar[str] = "badge_sign_out"


@dataclass(frozen=True, slots=True)
class BadgeUnreadable(DeviceEvent):
    """A badge swiped could not be read whole or is not a badge id (``reason`` says why): swipe again."""

    type: ClassVar[str] = "badge_unreadable"
    reason: str
