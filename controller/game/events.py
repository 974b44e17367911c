"""Input events of the round engine: what happened at the table, in physical order.

Small frozen, slotted classes (the h11 model). Each knows its wire name
(``TYPE``) so the journal can store it as JSON and rebuild it exactly
(:func:`to_json` / :func:`from_json`). Money is integer cents; time is seconds
since the epoch (UTC), always passed in: the core never reads a clock.

Hits have no event of their own: at a real table a hit is the card leaving the
shoe while a hand is active, so :class:`CardDrawn` is the hit.
"""

from __future__ import annotations

import types
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

Action = Literal["stand", "double", "split", "surrender", "insurance", "even_money", "no_insurance"]
ACTIONS: tuple[str, ...] = ("stand", "double", "split", "surrender", "insurance", "even_money", "no_insurance")


@dataclass(frozen=True, slots=True)
class TableOpened:
    """The pit opens the table; ``totals`` start from zero. ``now``: epoch seconds."""

    TYPE: ClassVar[str] = "table_opened"
    now: float
    deck_set: str = "A"
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class TableClosed:
    TYPE: ClassVar[str] = "table_closed"
    now: float
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class BetPlaced:
    """The chips on ``spot`` now total ``amount`` cents (0 = removed). ``player`` identifies who owns it."""

    TYPE: ClassVar[str] = "bet"
    spot: int
    amount: int
    player: str | None = None


@dataclass(frozen=True, slots=True)
class NoMoreBets:
    TYPE: ClassVar[str] = "no_more_bets"


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """A card left the shoe (rank and suit read by the shoe)."""

    TYPE: ClassVar[str] = "card"
    card: str


@dataclass(frozen=True, slots=True)
class HoleCardDealt:
    """The dealer's hole card left the shoe face down, its value withheld by the shoe.

    A shoe that keeps the hole card to its peek reader sends this instead of
    :class:`CardDrawn`; the value arrives with :class:`DealerReveal` when it is turned.
    """

    TYPE: ClassVar[str] = "hole_card_dealt"


@dataclass(frozen=True, slots=True)
class CutCardReached:
    TYPE: ClassVar[str] = "cut_card"


@dataclass(frozen=True, slots=True)
class ShoeEmpty:
    """No card left to complete the round: the NJ 19:47-2.15(f) irregularity starts."""

    TYPE: ClassVar[str] = "shoe_empty"


@dataclass(frozen=True, slots=True)
class PeekResult:
    """The shoe's peek reader: does the hole card make a dealer blackjack (never the card)."""

    TYPE: ClassVar[str] = "peek"
    blackjack: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """A player decision the dealer keys in on the console, for ``spot``'s active hand."""

    TYPE: ClassVar[str] = "decision"
    spot: int
    action: Action
    amount: int | None = None


@dataclass(frozen=True, slots=True)
class InsuranceClosed:
    TYPE: ClassVar[str] = "insurance_closed"


@dataclass(frozen=True, slots=True)
class DealerReveal:
    """The dealer turns the hole card. ``card`` is required when the hole card was dealt face down
    unread (:class:`HoleCardDealt`); a hole card the shoe read is turned by the engine itself."""

    TYPE: ClassVar[str] = "dealer_reveal"
    card: str | None = None


@dataclass(frozen=True, slots=True)
class ShuffleStarted:
    """The shuffler took the deck set and started shuffling."""

    TYPE: ClassVar[str] = "shuffle_started"


@dataclass(frozen=True, slots=True)
class ShuffleDone:
    """The shuffler finished: ``count`` cards verified; ``composition`` per rank if reported."""

    TYPE: ClassVar[str] = "shuffle_done"
    count: int
    composition: dict[str, int] | None = None
    deck_set: str | None = None


@dataclass(frozen=True, slots=True)
class DecksChanged:
    """New decks opened at ``now``: the deck-change clock starts again. ``operator``: who said so
    (a pit command); None when the dealer's console button did."""

    TYPE: ClassVar[str] = "decks_changed"
    now: float
    deck_set: str = "A"
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """The clock, passed in: deck-change warnings and overdue halts are computed from it."""

    TYPE: ClassVar[str] = "tick"
    now: float


@dataclass(frozen=True, slots=True)
class DeviceFault:
    TYPE: ClassVar[str] = "device_fault"
    device: str
    reason: str


@dataclass(frozen=True, slots=True)
class DeviceRestored:
    TYPE: ClassVar[str] = "device_restored"
    device: str


@dataclass(frozen=True, slots=True)
class Irregularity:
    """Something at the table the procedure does not allow, reported by the shell: a device input
    the engine refused (chips moved after no more bets, a button out of turn), a card the shoe
    could not read. It changes no wager; it raises an alarm the pit sees and acknowledges."""

    TYPE: ClassVar[str] = "irregularity"
    source: str
    detail: str
    halts: bool = False
    #: the alarm's code where a contract names one (``shuffle_quality``); else ``irregularity:<source>``
    code: str | None = None


@dataclass(frozen=True, slots=True)
class AlarmAcknowledged:
    """An alarm acknowledged: by ``operator`` (a pit command, with its ``reason``), or by the
    dealer's console button (both None). An integrity alarm needs both (see the engine)."""

    TYPE: ClassVar[str] = "alarm_ack"
    alarm_id: int
    operator: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class LimitsSet:
    """The pit changes the table limits (only between rounds)."""

    TYPE: ClassVar[str] = "set_limits"
    min_bet: int
    max_bet: int
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class RulesChanged:
    """The rules the table plays under from now on: its profile with the table's overrides, all of it
    (``rules`` as :func:`controller.game.rules.rules_to_json` writes them), so a journal replays every
    round under the rules it was played under (DESIGN: the profile is bound to the journal). The first
    input of a journal binds it; a change is taken only between shoes (see the engine)."""

    TYPE: ClassVar[str] = "rules_changed"
    rules: dict[str, Any]
    operator: str | None = None


@dataclass(frozen=True, slots=True)
class DealerAssigned:
    """The dealer on duty changes (DESIGN, "The dealer on duty"): ``dealer`` signs in (None: signs out). ``by``
    is ``"badge"`` (the console's badge reader) or the pit user who assigned the dealer. Between rounds it takes
    effect at once; during a round it is held until the round settles (see :mod:`controller.game.dealer_duty`)."""

    TYPE: ClassVar[str] = "dealer_assigned"
    dealer: str | None
    by: str


@dataclass(frozen=True, slots=True)
class DealerRequired:
    """The table's ``require_dealer`` setting, journaled when it differs from the engine's: with it, betting does
    not open without a dealer on duty."""

    TYPE: ClassVar[str] = "dealer_required"
    required: bool


Event = (
    TableOpened
    | TableClosed
    | BetPlaced
    | NoMoreBets
    | CardDrawn
    | HoleCardDealt
    | CutCardReached
    | ShoeEmpty
    | PeekResult
    | Decision
    | InsuranceClosed
    | DealerReveal
    | ShuffleStarted
    | ShuffleDone
    | DecksChanged
    | Tick
    | DeviceFault
    | DeviceRestored
    | Irregularity
    | AlarmAcknowledged
    | LimitsSet
    | RulesChanged
    | DealerAssigned
    | DealerRequired
)

EVENT_TYPES: dict[str, type[Any]] = {
    cls.TYPE: cls
    for cls in (
        TableOpened,
        TableClosed,
        BetPlaced,
        NoMoreBets,
        CardDrawn,
        HoleCardDealt,
        CutCardReached,
        ShoeEmpty,
        PeekResult,
        Decision,
        InsuranceClosed,
        DealerReveal,
        ShuffleStarted,
        ShuffleDone,
        DecksChanged,
        Tick,
        DeviceFault,
        DeviceRestored,
        Irregularity,
        AlarmAcknowledged,
        LimitsSet,
        RulesChanged,
        DealerAssigned,
        DealerRequired,
    )
}


#: An ``alarm_ack`` journaled before acknowledgements named their operator reads back with these.
LEGACY_OPERATOR = "unrecorded"
LEGACY_REASON = "acknowledged before operators were journaled"


class EventFormatError(ValueError):
    """A journaled or received event that does not decode."""


def to_json(event: Event) -> dict[str, Any]:
    """The event as a JSON-ready dict with its ``type``: what ``dataclasses.asdict`` gives, its fields read as they
    are when every one is a plain value (a card's input is journaled this way: 0.4 us against 3 in a loop, and
    several times that run cold on a card's path, issue #40); deep-copied by ``asdict`` when one holds a dict."""
    cls = type(event)
    try:
        names = _PLAIN_FIELDS[cls]
    except KeyError:
        names = _PLAIN_FIELDS[cls] = _plain_fields(cls)
    data = asdict(event) if names is None else {name: getattr(event, name) for name in names}
    data["type"] = event.TYPE
    return data


#: by event class: its field names when every field is a plain value, None when one holds a container
_PLAIN_FIELDS: dict[type[Any], tuple[str, ...] | None] = {}
_PLAIN_VALUES = (str, int, float, bool, type(None))


def _plain_fields(cls: type[Any]) -> tuple[str, ...] | None:
    hints = _field_types(cls)
    names = tuple(f.name for f in fields(cls))
    return names if all(_plain(hints[name]) for name in names) else None


def _plain(hint: Any) -> bool:
    """Whether a field's annotation admits plain values only (a string, a number, a bool, None, a literal)."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return all(_plain(arg) for arg in get_args(hint))
    return origin is Literal or hint in _PLAIN_VALUES


def from_json(data: dict[str, Any]) -> Event:
    """Rebuild an event from :func:`to_json` output."""
    try:
        cls = EVENT_TYPES[data["type"]]
    except (KeyError, TypeError):
        raise EventFormatError(f"unknown event type in {data!r}") from None
    names = {f.name for f in fields(cls)}
    kwargs = {k: v for k, v in data.items() if k != "type"}
    if cls is AlarmAcknowledged and "operator" not in kwargs:
        # Journaled before operators were recorded (every row since carries the key, null or not):
        # the engine of that time took it, so the replay must too.
        kwargs["operator"], kwargs["reason"] = LEGACY_OPERATOR, LEGACY_REASON
    if not set(kwargs) <= names:
        raise EventFormatError(f"{data['type']}: unexpected fields {sorted(set(kwargs) - names)}")
    hints = _field_types(cls)
    for name, value in kwargs.items():
        if not _is_a(value, hints[name]):
            raise EventFormatError(f"{data['type']}: {name} {value!r} is not {_spelled(hints[name])}")
        if hints[name] is float and type(value) is int:
            kwargs[name] = float(value)  # JSON writes 0.0 as 0
    try:
        event: Event = cls(**kwargs)
    except TypeError as e:
        raise EventFormatError(f"{data['type']}: {e}") from None
    return event


#: each event class's field annotations, resolved once (the module's annotations are strings)
_FIELD_TYPES: dict[type[Any], dict[str, Any]] = {}


def _field_types(cls: type[Any]) -> dict[str, Any]:
    hints = _FIELD_TYPES.get(cls)
    if hints is None:
        hints = _FIELD_TYPES[cls] = get_type_hints(cls)
    return hints


def _is_a(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's annotation (the engine's types: a bool is not a number)."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return any(_is_a(value, arg) for arg in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if hint is type(None):
        return value is None
    if hint is float:
        return type(value) in (int, float)
    if hint is int or hint is str or hint is bool:
        return type(value) is hint
    if origin is dict or hint is dict:
        keys, values = get_args(hint) or (Any, Any)
        return isinstance(value, dict) and all(_is_a(k, keys) and _is_a(v, values) for k, v in value.items())
    return hint is Any


def _spelled(hint: Any) -> str:
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        return " or ".join(_spelled(arg) for arg in get_args(hint))
    if origin is Literal:
        return "one of " + ", ".join(map(str, get_args(hint)))
    if hint is type(None):
        return "null"
    names = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", dict: "an object"}
    return names.get(origin or hint, str(hint))
