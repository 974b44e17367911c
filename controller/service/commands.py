"""Commands a person sends on ``<prefix>/<table_id>/cmd/<role>/<user>/<verb>``, validated, and their results.

How it works: :func:`check_sender` looks at who the topic says sent the command before anything
else: a user name outside ``a-z 0-9 . _ -`` (a blank one, upper case, a look-alike letter) is
refused, then a role that may not send the verb (:mod:`controller.contract.roles`, the table's own
check whatever the broker let through). :func:`parse_command` turns the verb and the raw MQTT
payload into one of the command models below, or a :class:`CommandResult` refusal naming the field
and the reason; it never raises on bad input (duplicate keys, absurd nesting, a float where money
goes: one line each). A valid command becomes an engine input with :meth:`to_event` (the clock
passed in); whether it is allowed *now* (phase, open alarms, the alarm's kind for the role) is the
table service's and the engine's call, and the service answers with :func:`accepted` or
:func:`refused`. Results are published on ``.../cmd/<role>/<user>/<verb>/result``.

Payload: a JSON object (an empty payload counts as ``{}``). The operator is the topic's user, which
the broker vouches for: it is journaled with the engine input, shown in the record it produces and
echoed in the result (DESIGN.md, "Operators and roles"). A payload ``"operator"``, where one is
sent, must equal it. An optional ``"id"`` (string or integer) is echoed in the result so a client
can match answers to requests. Money is a decimal string (``"7.50"``) or a whole number of dollars,
never a float.

=================  ==============================================  =========================
verb               payload                                         engine event
=================  ==============================================  =========================
``open``           ``{"deck_set": "A"}`` (optional)                ``TableOpened``
``close``          ``{}``                                          ``TableClosed``
``set_limits``     ``{"min_bet": "5", "max_bet": "500"}``          ``LimitsSet``
``ack_alarm``      ``{"alarm_id": 7, "reason": "..."}``            ``AlarmAcknowledged``
``decks_changed``  ``{"deck_set": "B"}``                           ``DecksChanged``
``selfcheck``      ``{}``                                          none: the program checked
``set_dealer``     ``{"dealer": "d.ames"}`` or ``{"dealer": null}``  ``DealerAssigned``
=================  ==============================================  =========================

``reason`` (1 to 200 printable characters) is optional, except that an alarm that halts for
integrity is cleared only with one (the engine's rule) and surveillance always gives one (the
role's). ``set_dealer`` names the dealer on duty (a dealer id: 1 to 64 of ``a-z 0-9 . _ -``) or signs the
dealer out (``null``), ``by`` the sender: during a round it takes effect when the round settles (the engine's
rule; the result says ``pending``). Whether ``set_limits`` stays inside what the profile's rule text allows is
checked by the table service (:func:`limits_refusal` of :mod:`controller.game.rules`), which knows the profile.

Result: ``{"ok": true, "verb": "set_limits", "id": "r-17", "operator": "s.jones", "seq": 12}`` or
``{"ok": false, "verb": "set_limits", "id": "r-17", "operator": "s.jones", "error": "max_bet: must not be
below min_bet (5)"}`` (``operator`` echoed whenever the topic's user is a valid name).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from controller.contract.dealers import check_dealer
from controller.contract.results import CommandResult, refused
from controller.contract.roles import check_user, refusal
from controller.contract.topics import CommandTopic
from controller.game.events import (
    AlarmAcknowledged,
    DealerAssigned,
    DecksChanged,
    Event,
    LimitsSet,
    TableClosed,
    TableOpened,
)
from controller.game.money import format_money, parse_money

__all__ = [
    "COMMANDS",
    "MAX_PAYLOAD",
    "AckAlarm",
    "Close",
    "Command",
    "DecksChangedCmd",
    "Open",
    "SetDealer",
    "SetLimits",
    "accepted",
    "check_sender",
    "parse_command",
]

#: Larger payloads are refused unread.
MAX_PAYLOAD = 4096
#: Deeper nesting of brackets is refused unparsed (a command is one flat object: depth 1)
MAX_DEPTH = 8

Money = Annotated[int, BeforeValidator(parse_money)]
DeckSet = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,16}$", description="deck set id, e.g. 'A'")]
RequestId = Annotated[str | int | None, Field(default=None, union_mode="left_to_right")]


def _printable(limit: int) -> Any:
    def check(value: Any) -> Any:
        if isinstance(value, str):
            if not 1 <= len(value) <= limit:
                raise ValueError(f"must be 1 to {limit} characters, not {len(value)}")
            if not value.isprintable():
                raise ValueError("must be printable characters only (no control characters or line breaks)")
            if not value.strip():
                raise ValueError("must say something: it is blank")
        return value
    return check


def _user_name(value: Any) -> Any:
    if isinstance(value, str) and (why := check_user(value)) is not None:
        raise ValueError(why)
    return value


def _dealer_id(value: Any) -> Any:
    """A dealer id (DESIGN "The dealer on duty"), or null to sign the dealer out: refused naming the rule."""
    if value is not None and (why := check_dealer(value)) is not None:
        raise ValueError(why)
    return value


def _alarm_number(value: Any) -> Any:
    """An alarm's id is a JSON number: anything else refused in words a person reads (pydantic's own says
    "Input should be a valid integer" of ``"1"``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        shown = json.dumps(value) if isinstance(value, str | float) else type(value).__name__
        raise ValueError(f"the alarm's number, as a JSON number such as 7 (not {shown[:40]})")
    if value < 1:
        raise ValueError(f"the alarm's number: alarms are numbered from 1 (not {value})")
    return value


#: who sent the command: the topic's user (1 to 64 of ``a-z 0-9 . _ -``)
Operator = Annotated[str, Field(strict=True), BeforeValidator(_user_name)]
#: why an alarm is acknowledged
Reason = Annotated[str, Field(strict=True), BeforeValidator(_printable(200))]


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)
    VERB: ClassVar[str]
    id: RequestId = None
    operator: Operator

    def to_event(self, now: float) -> Event:  # pragma: no cover - overridden
        raise NotImplementedError


class Open(_Command):
    """Open the table (totals start from zero) with deck set ``deck_set``."""

    VERB: ClassVar[str] = "open"
    deck_set: DeckSet = "A"

    def to_event(self, now: float) -> Event:
        return TableOpened(now=now, deck_set=self.deck_set, operator=self.operator)


class Close(_Command):
    """Close the table."""

    VERB: ClassVar[str] = "close"

    def to_event(self, now: float) -> Event:
        return TableClosed(now=now, operator=self.operator)


class SetLimits(_Command):
    """New table limits, in cents once parsed (at once between rounds, else from the next round: the engine)."""

    VERB: ClassVar[str] = "set_limits"
    min_bet: Money
    max_bet: Money

    @model_validator(mode="after")
    def _ordered(self) -> SetLimits:
        if self.min_bet <= 0:
            raise ValueError(f"min_bet: must be positive, not {format_money(self.min_bet)}")
        if self.max_bet < self.min_bet:
            raise ValueError(f"max_bet: must not be below min_bet ({format_money(self.min_bet)})")
        return self

    def to_event(self, now: float) -> Event:
        return LimitsSet(min_bet=self.min_bet, max_bet=self.max_bet, operator=self.operator)


class AckAlarm(_Command):
    """Acknowledge the active alarm ``alarm_id`` (an integrity alarm needs a ``reason``)."""

    VERB: ClassVar[str] = "ack_alarm"
    alarm_id: Annotated[int, Field(ge=1, strict=True), BeforeValidator(_alarm_number)]
    reason: Reason | None = None

    def to_event(self, now: float) -> Event:
        return AlarmAcknowledged(alarm_id=self.alarm_id, operator=self.operator, reason=self.reason)


class DecksChangedCmd(_Command):
    """New decks were opened (deck set ``deck_set``): the deck-change clock restarts."""

    VERB: ClassVar[str] = "decks_changed"
    deck_set: DeckSet

    def to_event(self, now: float) -> Event:
        return DecksChanged(now=now, deck_set=self.deck_set, operator=self.operator)


class SelfCheckCmd(_Command):
    """Check the program again now (DESIGN "Program authentication"); no engine input: the table service runs
    the check and halts the table on a mismatch."""

    VERB: ClassVar[str] = "selfcheck"


class SetDealer(_Command):
    """The dealer on duty from now (``null``: signed out), assigned by the sender; during a round, from its
    settlement (DESIGN "The dealer on duty")."""

    VERB: ClassVar[str] = "set_dealer"
    #: required, null included: a sign-out is said, never implied by a missing field
    dealer: Annotated[str | None, Field(strict=True), BeforeValidator(_dealer_id)]

    def to_event(self, now: float) -> Event:
        return DealerAssigned(dealer=self.dealer, by=self.operator)


Command = Open | Close | SetLimits | AckAlarm | DecksChangedCmd | SelfCheckCmd | SetDealer

COMMANDS: dict[str, type[Open] | type[Close] | type[SetLimits] | type[AckAlarm] | type[DecksChangedCmd]
               | type[SelfCheckCmd] | type[SetDealer]] = {
    cls.VERB: cls for cls in (Open, Close, SetLimits, AckAlarm, DecksChangedCmd, SelfCheckCmd, SetDealer)
}


def accepted(command: Command, **detail: Any) -> CommandResult:
    """The engine took ``command`` (``detail``: e.g. the ``seq`` of its event)."""
    return CommandResult(True, command.VERB, command.id, None, detail, command.operator)


def _describe(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid"))
        msg = msg.removeprefix("Value error, ")
        kind = err.get("type")
        if kind == "missing":
            parts.append(f"{loc}: required field missing")
        elif kind == "extra_forbidden":
            parts.append(f"{loc}: unknown field")
        elif not loc or msg.startswith(f"{loc}:"):
            parts.append(msg)
        else:
            parts.append(f"{loc}: {msg}")
    return "; ".join(parts) or "invalid command"


def _request_id(data: dict[str, Any]) -> str | int | None:
    rid = data.get("id")
    if isinstance(rid, str) and len(rid) <= 128:
        return rid
    if isinstance(rid, int) and not isinstance(rid, bool):
        return rid
    return None


class _BadJson(ValueError):
    """A JSON text json.loads would take but a command may not hold (a duplicate key, NaN)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _BadJson(f"duplicate key {key!r}: a command says each field once")
        out[key] = value
    return out


def _no_constant(name: str) -> Any:
    raise _BadJson(f"{name} is not a number a command takes")


def _depth(text: str) -> int:
    """How deep brackets nest in ``text`` (outside strings): read before json.loads recurses into them."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 70 else text[:67] + "..."


def check_sender(command: CommandTopic, payload: bytes | str = b"") -> CommandResult | None:
    """A refusal when the topic's user is not a user name, or its role may not send the verb; else None.

    Decided before the payload is read; the payload's ``id`` (when it is a well-formed command's) is
    then echoed so the sender can match the refusal. No operator is echoed unless the name is valid.
    """
    why = check_user(command.user)
    if why is not None:
        return refused(command.verb, f"sender refused: {why}", _safe_id(payload))
    why = refusal(command.role, command.verb)
    if why is not None:
        verb = command.verb if len(command.verb) <= 64 else command.verb[:61] + "..."
        return refused(command.verb, f"{verb} refused: {why}", _safe_id(payload), command.user)
    return None


def _safe_id(payload: bytes | str) -> str | int | None:
    """The ``id`` of a payload read under the same bounds as a command (None when it has none)."""
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
        if not text.strip() or _depth(text) > MAX_DEPTH:
            return None
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    return _request_id(data) if isinstance(data, dict) else None


def parse_command(verb: str, payload: bytes | str, *, user: str) -> Command | CommandResult:
    """A validated command sent by ``user`` (the topic's), or a refusal (``ok=False``) saying why."""
    cls = COMMANDS.get(verb)
    operator = user if check_user(user) is None else None
    if operator is None:
        return refused(verb, f"sender refused: {check_user(user)}")
    if len(payload) > MAX_PAYLOAD:
        return refused(verb, f"payload too large ({len(payload)} bytes, at most {MAX_PAYLOAD})", operator=operator)
    try:
        text = payload.decode("utf-8") if isinstance(payload, bytes | bytearray) else payload
    except UnicodeDecodeError as exc:
        return refused(verb, f"malformed payload: not UTF-8 text ({exc.reason} at byte {exc.start})",
                       operator=operator)
    if not text.strip():
        data: Any = {}
    else:
        if (depth := _depth(text)) > MAX_DEPTH:
            return refused(verb, f"malformed JSON: brackets nested {depth} deep (a command is one flat object)",
                           operator=operator)
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            return refused(verb, f"malformed JSON: {exc}", operator=operator)
        except (_BadJson, RecursionError) as exc:
            return refused(verb, f"malformed JSON: {exc or 'nested too deep'}", operator=operator)
    if cls is None:  # the request id is still echoed, so the sender can match the refusal
        rid = _request_id(data) if isinstance(data, dict) else None
        return refused(verb, f"unknown command {_short(verb)}; known: {', '.join(COMMANDS)}", rid, operator)
    if not isinstance(data, dict):
        return refused(verb, f"payload must be a JSON object, not {type(data).__name__}", operator=operator)
    rid = _request_id(data)
    if "operator" in data and data["operator"] != operator:
        return refused(verb, f"operator: {_short(data['operator'])} is not the sender {operator!r} (the topic's user): "
                             "a command names only the person who sends it", rid, operator)
    try:
        command: Command = cls.model_validate({**data, "operator": operator})
    except ValidationError as exc:
        return refused(verb, _describe(exc), rid, operator)
    return command


Verb = Literal["open", "close", "set_limits", "ack_alarm", "decks_changed", "selfcheck", "set_dealer"]
