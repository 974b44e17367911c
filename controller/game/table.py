"""The round engine: one table's blackjack, driven one physical event at a time.

Sans-I/O (the h11 model): :meth:`Table.handle` takes an event from
:mod:`controller.game.events` and returns a list of effects
(:mod:`controller.game.effects`). No clock, no randomness, no I/O: time comes in
on the events, the shoe order comes from the cards drawn. The same object runs
the table service, the scenario runner and the bench, so the journal can replay
a table exactly.

A round, in the order of the rule texts::

    betting --no more bets--> dealing --(ace up, insurance offered)--> insurance
    dealing/insurance --(peek when the up card calls for it)--> players --> dealer --> settled
    settled --(cut card reached / decks changed)--> shuffling --shuffle done--> betting

The transitions are data, :data:`TRANSITIONS` (docs/state-diagram.md is drawn
from it): any event a phase does not list is refused with :class:`IllegalAction`
naming the rule, and the table is left exactly as it was (every handler checks
before it changes anything); a handler that moved the table along a transition
not listed would raise :class:`TransitionNotListed` (an engine bug). Cards are
physical: a card the procedure did not call for is not refused but burnt as a
dead card with an alarm (NY 4620.5(i)(4)).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from mypy_extensions import mypyc_attr

from controller.game import events as ev
from controller.game import legality
from controller.game.awaiting import Awaiting
from controller.game.cards import VALUE, is_natural, parse_card
from controller.game.effects import (
    AlarmCleared,
    AlarmRaised,
    DealingLocked,
    Effect,
    Record,
    RequestPeek,
    RevealHole,
    StartShuffle,
)
from controller.game.hand import Hand, Spot
from controller.game.legality import Refusal
from controller.game.money import format_money, format_money_fixed
from controller.game.rules import Rules, RulesFormatError, limits_refusal, rules_digest, rules_from_json

PHASES: Final = ("closed", "betting", "dealing", "insurance", "players", "dealer", "settled", "shuffling")

def _to(*phases: str) -> frozenset[str]:
    return frozenset(phases)


# Where each event may lead, phase by phase: (phase, event type) -> the phases the table may be in once
# handle() has taken it, the phase itself where the event may leave it there. handle() refuses up front
# every event its phase does not list, and raises TransitionNotListed if a handler ever moves the table
# where the pair does not lead. One event may pass through several phases inside handle() (a last stand
# plays the dealer's hand and settles the round): the table says where it ends. A card or a face-down
# card out of the shoe is taken in every phase: dealt, burnt, or dead (NY 4620.5(i)(4)) where nothing
# called for it.
TRANSITIONS: Final[dict[tuple[str, str], frozenset[str]]] = {
    ("closed", "table_opened"): _to("betting", "shuffling"),  # shuffling when a shuffle is due
    ("closed", "table_closed"): _to("closed"),
    ("closed", "card"): _to("closed"),
    ("closed", "hole_card_dealt"): _to("closed"),
    ("closed", "decks_changed"): _to("closed"),  # the shuffle is due when the table opens
    ("closed", "shuffle_started"): _to("closed"),  # a closed table shuffles and stays closed: only an open opens it
    ("closed", "shuffle_done"): _to("closed"),
    ("closed", "rules_changed"): _to("closed"),
    ("betting", "bet"): _to("betting"),
    ("betting", "no_more_bets"): _to("dealing"),
    ("betting", "card"): _to("betting"),  # the burn, or a dead card
    ("betting", "hole_card_dealt"): _to("betting"),
    ("betting", "table_closed"): _to("closed"),  # the wagers on the layout are given back
    ("betting", "decks_changed"): _to("shuffling"),
    ("betting", "shuffle_started"): _to("shuffling"),  # the cut card came out between rounds
    ("betting", "shuffle_done"): _to("betting"),
    ("betting", "rules_changed"): _to("betting"),
    ("dealing", "card"): _to("dealing", "insurance", "players", "dealer", "settled"),  # the deal's last card
    ("dealing", "hole_card_dealt"): _to("dealing", "insurance", "players", "dealer"),
    ("dealing", "peek"): _to("players", "dealer", "settled"),
    ("dealing", "shoe_empty"): _to("dealing"),  # NJ 19:47-2.15(f): the discards are shuffled
    ("dealing", "shuffle_done"): _to("dealing"),  # the discards, shuffled: the round goes on
    ("dealing", "table_closed"): _to("dealing"),  # asked during a round: it closes when the round settles
    ("insurance", "decision"): _to("insurance"),  # insurance, even money or none
    ("insurance", "insurance_closed"): _to("dealing", "players", "dealer", "settled"),  # dealing: the peek
    ("insurance", "card"): _to("insurance"),
    ("insurance", "hole_card_dealt"): _to("insurance"),
    ("insurance", "shoe_empty"): _to("insurance"),
    ("insurance", "shuffle_done"): _to("insurance"),
    ("insurance", "table_closed"): _to("insurance"),  # a close asked for when the round settles
    ("players", "decision"): _to("players", "dealer", "settled"),
    ("players", "card"): _to("players", "dealer", "settled"),
    ("players", "hole_card_dealt"): _to("players"),
    ("players", "shoe_empty"): _to("players"),
    ("players", "shuffle_done"): _to("players"),
    ("players", "table_closed"): _to("players"),  # a close asked for when the round settles
    ("dealer", "dealer_reveal"): _to("dealer", "settled"),
    ("dealer", "card"): _to("dealer", "settled"),
    ("dealer", "hole_card_dealt"): _to("dealer"),
    ("dealer", "shoe_empty"): _to("dealer"),
    ("dealer", "shuffle_done"): _to("dealer"),
    ("dealer", "table_closed"): _to("dealer"),  # a close asked for when the round settles
    ("settled", "bet"): _to("betting"),  # the next round's first wager
    ("settled", "card"): _to("settled"),
    ("settled", "hole_card_dealt"): _to("settled"),
    ("settled", "table_closed"): _to("closed"),
    ("settled", "decks_changed"): _to("shuffling"),
    ("settled", "shuffle_started"): _to("shuffling"),
    ("settled", "shuffle_done"): _to("settled"),
    ("settled", "rules_changed"): _to("settled"),
    ("shuffling", "shuffle_started"): _to("shuffling"),  # the shuffler reports the start the engine asked for
    ("shuffling", "shuffle_done"): _to("betting"),
    ("shuffling", "card"): _to("shuffling"),
    ("shuffling", "hole_card_dealt"): _to("shuffling"),
    ("shuffling", "table_closed"): _to("closed"),
    ("shuffling", "decks_changed"): _to("shuffling"),
    ("shuffling", "rules_changed"): _to("shuffling"),
} | {
    # taken in every phase, and never moving it: the clock, the devices, alarms, the cut card, the limits
    (phase, etype): _to(phase)
    for phase in PHASES
    for etype in ("tick", "device_fault", "device_restored", "irregularity", "alarm_ack", "cut_card", "set_limits")
}

# TRANSITIONS by phase, then event type (handle() looks up one phase's dict, then the event: no key tuple built).
_NEXT: Final[dict[str, dict[str, frozenset[str]]]] = {
    phase: {etype: to for (at, etype), to in TRANSITIONS.items() if at == phase} for phase in PHASES
}

#: Which events each phase accepts: those its transitions list. Any other is refused.
PHASE_EVENTS: Final[dict[str, frozenset[str]]] = {phase: frozenset(nxt) for phase, nxt in _NEXT.items()}

# The rules a journal is bound to change only between shoes, so no shoe is dealt under two sets of rules.
_RULES_BETWEEN_SHOES: Final = "the rules change only between shoes: close the table, or wait for the shuffle"
_ROUND_IN_PROGRESS: Final = "a round is in progress: finish it first"

# Classes of the events handle() calls its handler for directly (Final: compiled, constants).
_CARD_DRAWN: Final = ev.CardDrawn
_DECISION: Final = ev.Decision

# The decisions there are (ev.ACTIONS; Final: compiled, a constant, not an attribute of the events module looked up).
_ACTIONS: Final = ev.ACTIONS
#: the decisions that put money down and so carry an amount (a split only the wager, an equal amount)
_TAKE_AMOUNT: Final = ("double", "insurance", "split")

# Player hand states in which the hand is finished and waits for the dealer.
_LIVE: Final = frozenset({"stood", "doubled"})

# Effects without a variable part: immutable, so one of each serves every request (a dataclass built is a call).
_REQUEST_PEEK: Final = RequestPeek()
_REVEAL_HOLE: Final = RevealHole()
_DEALING_LOCKED: Final = DealingLocked(True)
_DEALING_UNLOCKED: Final = DealingLocked(False)


class GameError(Exception):
    """Root of the engine's refusals."""


class MalformedEvent(GameError):
    """The event itself is wrong (not a card, no such spot): the sender erred."""


class IllegalAction(GameError):
    """A well-formed event the rules do not allow now; ``rule`` names the rule broken."""

    def __init__(self, reason: str, *, rule: str, spot: int | None = None, action: str | None = None,
                 option: str | None = None, clause: str | None = None) -> None:
        self.reason = reason
        self.rule = rule
        self.option = option  # the profile option enforced, if any
        self.clause = clause  # what the profile cites for that option (its clause, or "house choice")
        self.spot = spot
        self.action = action
        if spot is not None and action is not None:
            text = f"spot {spot}: {action} refused: {reason}"
        elif action is not None:
            text = f"{action} refused: {reason}"
        else:
            text = reason
        super().__init__(text)


def refusal_error(refusal: Refusal, rules: Rules, spot: int | None, action: str) -> IllegalAction:
    """The refusal as the engine raises it, naming the profile option it enforces and the clause the profile
    cites for it (``Rules.citations``, from the profile's comments)."""
    clause = None
    if refusal.option is not None:
        for option, cited in rules.citations:
            if option == refusal.option:
                clause = cited
                break
    return IllegalAction(refusal.reason, rule=refusal.rule, spot=spot, action=action, option=refusal.option,
                         clause=clause)


@mypyc_attr(native_class=False)  # mypyc cannot compile a subclass of AssertionError: a plain Python class
class TransitionNotListed(AssertionError):
    """An engine bug, not a refusal: a handler took the table from ``phase`` on ``event`` to ``new_phase``,
    a transition :data:`TRANSITIONS` does not list. The event has already changed the table."""

    def __init__(self, phase: str, event: str, new_phase: str) -> None:
        self.phase = phase
        self.event = event
        self.new_phase = new_phase
        listed = ", ".join(sorted(TRANSITIONS.get((phase, event), ())))
        super().__init__(f"engine bug: {event} took the table from {phase} to {new_phase}, a transition "
                         f"TRANSITIONS does not list ({phase} on {event} leads to: {listed})")


@dataclass(slots=True)
class Alarm:
    """An active alarm; ``halts`` ones stop new rounds until acknowledged or cleared."""

    id: int
    code: str
    message: str
    halts: bool

    @property
    def integrity(self) -> bool:
        """An alarm that halts for integrity: cleared only by a named operator giving a reason."""
        return needs_supervisor(self.code, self.halts)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "code": self.code, "message": self.message, "halts": self.halts,
                "integrity": self.integrity}


#: Code prefixes of the alarms that halt for integrity: card count (a foreign or duplicate card),
#: shuffler count and composition, the peek reader against the shoe's read, the journal.
INTEGRITY_PREFIXES: Final = ("integrity_", "journal", "peek_mismatch")


def needs_supervisor(code: str, halts: bool) -> bool:
    """Whether an alarm is cleared only by an ``ack_alarm`` naming its operator and giving a reason
    (DESIGN, "Operators and roles"): the integrity alarms, and any irregularity that halts play
    (a card that left the shoe unread, a hole card the peek reader never saw). A dealer's console
    button is not a supervisor."""
    return (halts and (code.startswith(INTEGRITY_PREFIXES) or code.startswith("irregularity:"))) or code in SURVEILLANCE


#: The alarm of a wall clock that went back or jumped forward against the table's monotonic time
#: (controller/service/clock.py): play goes on on the monotonic count; surveillance checks the PC's time source.
CLOCK_ALARM: Final = "clock_jump"
#: Alarms the shell raises through an :class:`Irregularity` under the code a contract gives them.
NAMED_ALARMS: Final = frozenset({"shuffle_quality", CLOCK_ALARM})
#: Alarms that do not halt play but are surveillance's to clear, not the dealer's button (DESIGN, "Table
#: analytics": a shoe that fails the shuffle-quality monitor "does not halt play; surveillance decides").
SURVEILLANCE: Final = frozenset({"shuffle_quality", CLOCK_ALARM})


def _by(operator: str | None) -> dict[str, str]:
    """The ``operator`` of a record, when a person named in a pit command caused it."""
    return {} if operator is None else {"operator": operator}


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@mypyc_attr(allow_interpreted_subclasses=True)  # tests plant broken engines as subclasses
class Table:
    """A blackjack table's state machine. Feed events with :meth:`handle`; read :meth:`snapshot`."""

    # Slotted (interpreted: more than 30 attributes would leave the instance's shared-key layout, and every read of
    # one a hashed lookup); the compiled class has fixed fields anyway. Every attribute __init__ sets.
    __slots__ = (
        "_dealer_hand", "_dealer_play", "_dispatch", "_dispatch_now", "_dispatch_phase", "_handlers", "_out",
        "active", "alarms", "awaiting_discards", "awaiting_peek", "awaiting_reveal", "bets", "burn_pending", "burned",
        "cards_before_round", "cards_dealt", "close_asked", "close_by", "cut_card_reached", "deal_plan", "deal_pos",
        "dealer",
        "dealer_blackjack", "deck_opened_at", "deck_set", "devices", "handle_cents", "hole_at", "hole_face_down",
        "hole_revealed", "house_net", "insurance_declined", "insurance_open", "max_bet", "min_bet", "narrate",
        "next_alarm_id", "next_limits", "now", "order", "phase", "reshuffle_after_round", "round", "round_open",
        "rounds_settled", "rules", "seen", "shuffle_due", "shuffle_reason", "shuffles", "spots", "third_card_dealt",
    )

    def __init__(self, rules: Rules, *, narrate: bool = True) -> None:
        self.rules = rules
        #: build public :class:`Record` effects (off on the bench, for speed)
        self.narrate = narrate
        self.phase = "closed"
        self.round = 0
        self.round_open = False  # a round number is assigned to the bets on the layout
        self._dealer_play = "full"
        self.min_bet = rules.min_bet
        self.max_bet = rules.max_bet
        self.next_limits: tuple[int, int] | None = None  # set while wagers were in play: from the next round
        #: a close asked while a round was in play (and by whom): the table closes when that round settles
        self.close_asked = False
        self.close_by: str | None = None
        # the betting layout between rounds: spot -> (amount, player)
        self.bets: dict[int, tuple[int, str | None]] = {}
        # the round
        self.spots: dict[int, Spot] = {}
        self.order: list[Spot] = []
        self.dealer: list[str] = []
        self._dealer_hand = Hand(0, self.dealer)  # keeps the dealer's total as cards arrive
        self.hole_revealed = False
        self.hole_face_down = False  # dealt unread: its value comes with the reveal
        self.hole_at = -1  # position in the shoe of a face-down hole card (-1: none); never its value
        self.awaiting_reveal = False
        self.dealer_blackjack: bool | None = None
        self.deal_plan: list[Spot | None] = []  # None = the dealer
        self.deal_pos = 0
        self.active: tuple[int, int] | None = None
        self.awaiting_peek = False
        self.insurance_open = False
        self.insurance_declined: set[int] = set()  # spots that said no to insurance this round
        self.third_card_dealt = False
        self.burned: list[str] = []  # burnt and dead cards of the current round (public)
        # the shoe
        self.cards_dealt = 0
        self.shuffles = 0  # full shuffles since the table first opened
        self.cards_before_round = 0
        self.burn_pending = 0
        self.cut_card_reached = False
        self.shuffle_due = True
        self.shuffle_reason = "first shuffle of the deck set"
        self.awaiting_discards: int | None = None  # NJ 19:47-2.15(f) irregularity in progress
        self.reshuffle_after_round = False
        self.seen: dict[str, int] = {}
        # deck set, clock, devices, alarms, totals
        self.deck_set = "A"
        self.deck_opened_at: float | None = None
        self.now: float | None = None
        self.devices: dict[str, str] = {"shoe": "ok", "shuffler": "ok", "chips": "ok", "console": "ok"}
        self.alarms: dict[int, Alarm] = {}
        self.next_alarm_id = 1
        self.rounds_settled = 0
        self.handle_cents = 0
        self.house_net = 0
        self._out: list[Effect] = []
        self._handlers: dict[type[Any], Callable[[Any], None]] = {
            ev.TableOpened: self._on_opened,
            ev.TableClosed: self._on_closed,
            ev.BetPlaced: self._on_bet,
            ev.NoMoreBets: self._on_no_more_bets,
            ev.CardDrawn: self._on_card,
            ev.HoleCardDealt: self._on_hole_dealt,
            ev.CutCardReached: self._on_cut_card,
            ev.ShoeEmpty: self._on_shoe_empty,
            ev.PeekResult: self._on_peek,
            ev.Decision: self._on_decision,
            ev.InsuranceClosed: self._on_insurance_closed,
            ev.DealerReveal: self._on_dealer_reveal,
            ev.ShuffleStarted: self._on_shuffle_started,
            ev.ShuffleDone: self._on_shuffle_done,
            ev.DecksChanged: self._on_decks_changed,
            ev.Tick: self._on_tick,
            ev.DeviceFault: self._on_device_fault,
            ev.DeviceRestored: self._on_device_restored,
            ev.Irregularity: self._on_irregularity,
            ev.AlarmAcknowledged: self._on_alarm_ack,
            ev.LimitsSet: self._on_limits,
            ev.RulesChanged: self._on_rules_changed,
        }
        # _handlers and _NEXT by phase, then event class: what handle() calls and where it may lead, in one lookup
        self._dispatch: dict[str, dict[type[Any], tuple[Callable[[Any], None], frozenset[str]]]] = {
            phase: {cls: (handler, nxt[cls.TYPE]) for cls, handler in self._handlers.items() if cls.TYPE in nxt}
            for phase, nxt in _NEXT.items()
        }
        self._dispatch_phase = self.phase
        self._dispatch_now = self._dispatch[self.phase]

    # ------------------------------------------------------------------ entry point

    def handle(self, event: ev.Event) -> list[Effect]:
        """Apply one event; return its effects. Refusals raise and change nothing."""
        phase = self.phase
        if phase is not self._dispatch_phase:  # the phase's dispatch, looked up again when the phase changed
            self._dispatch_now = self._dispatch[phase]
            self._dispatch_phase = phase
        cls = type(event)
        try:  # a subscript, not .get(): interpreted, a method call costs more than the try
            handler, leads_to = self._dispatch_now[cls]
        except KeyError:
            if cls not in self._handlers:
                raise MalformedEvent(f"not an engine event: {event!r}") from None
            raise self._phase_refusal(event) from None
        out: list[Effect] = []
        self._out = out
        # the cards and the decisions, most of the events, called directly (compiled: not through the bound method;
        # narrowed by their class, not a cast: interpreted, a cast is a call)
        if type(event) is _CARD_DRAWN:
            self._on_card(event)
        elif type(event) is _DECISION:
            self._on_decision(event)
        else:
            handler(event)
        if self.phase not in leads_to:
            raise TransitionNotListed(phase, event.TYPE, self.phase)
        return out

    def _phase_refusal(self, event: ev.Event) -> IllegalAction:
        """The refusal of an event the phase does not accept (:data:`TRANSITIONS` lists no transition for it);
        a player's decision names its spot and action (after the round settled too)."""
        etype = event.TYPE
        if etype == "table_closed":
            return IllegalAction(_ROUND_IN_PROGRESS, rule="procedure", action="close")
        if isinstance(event, ev.Decision):
            return IllegalAction(self._phase_refusal_reason(etype), rule="procedure", spot=event.spot,
                                 action=event.action)
        return IllegalAction(self._phase_refusal_reason(etype), rule="procedure", action=etype)

    def _phase_refusal_reason(self, etype: str) -> str:
        if etype == "bet":
            if self.phase == "closed":
                return "the table is closed"
            if self.phase == "shuffling":
                return "the shoe is being shuffled"
            return "bets are locked once the first card is dealt (NJ 19:47-2.3(f))"
        if etype == "rules_changed":
            return _RULES_BETWEEN_SHOES
        if etype == "decision" and self.awaiting_peek:
            return "the dealer peeks at the hole card before any player decision (NY 4620.5(h)(1))"
        if etype == "decision" and self.phase in ("betting", "settled", "dealing", "dealer"):
            return f"no player decision is taken in the {self.phase} phase"
        return f"not accepted in the {self.phase} phase"

    def _record(self, type_: str, **data: Any) -> None:
        self._out.append(Record(type_, data))

    # ------------------------------------------------------------------ table, limits, clock

    def _on_opened(self, e: ev.TableOpened) -> None:
        self.now = e.now
        if self.deck_opened_at is None:
            self.deck_opened_at = e.now
            self.deck_set = e.deck_set
        self.rounds_settled = 0
        self.handle_cents = 0
        self.house_net = 0
        if self.narrate:
            self._record("table_opened", at=_iso(e.now), deck_set=self.deck_set, **_by(e.operator))
        self._set_phase("shuffling" if self.shuffle_due else "betting")
        if self.shuffle_due:
            self._request_shuffle(self.shuffle_reason)

    def _on_closed(self, e: ev.TableClosed) -> None:
        if self.phase == "betting" and self.spots:  # (no such table is known: kept as the engine always had it)
            raise IllegalAction(_ROUND_IN_PROGRESS, rule="procedure", action="close")
        if self.phase in ("dealing", "insurance", "players", "dealer"):
            if self.close_asked:
                raise IllegalAction(f"a close is already asked: the table closes when round {self.round} settles",
                                    rule="procedure", action="close")
            self.close_asked, self.close_by = True, e.operator  # the table service closes it at the settlement
            if self.narrate:
                self._record("close_asked", round=self.round, **_by(e.operator))
            return
        self.now = e.now
        self.close_asked, self.close_by = False, None
        self.bets.clear()
        self._clear_round()
        if self.narrate:
            self._record("table_closed", at=_iso(e.now), **_by(e.operator))
        self._set_phase("closed")
        self._apply_next_limits()

    def _on_limits(self, e: ev.LimitsSet) -> None:
        """New limits apply to wagers not yet placed: at once between rounds, else from the next round.

        A supervisor who changes the limits while wagers are on the layout or a round is dealt
        means the next round; the wagers in play keep the limits they were placed under.
        """
        if not 0 < e.min_bet <= e.max_bet:
            raise IllegalAction(
                f"minimum {format_money(e.min_bet)} must be above zero and not above maximum {format_money(e.max_bet)}",
                rule="limits",
                action="set_limits",
            )
        outside = limits_refusal(self.rules, e.min_bet, e.max_bet)  # the rule text's bounds (one check)
        if outside is not None:
            raise IllegalAction(outside, rule="limits", action="set_limits")
        if self.phase in ("closed", "settled", "shuffling") or (self.phase == "betting" and not self.bets):
            self.next_limits = None
            self._set_limits(e.min_bet, e.max_bet, e.operator)
            return
        self.next_limits = (e.min_bet, e.max_bet)
        if self.narrate:
            self._record("limits_pending", min_bet=format_money(e.min_bet), max_bet=format_money(e.max_bet),
                         from_round=self.round + 1, **_by(e.operator))

    def _set_limits(self, min_bet: int, max_bet: int, operator: str | None = None) -> None:
        self.min_bet, self.max_bet = min_bet, max_bet
        if self.narrate:
            self._record("limits", min_bet=format_money(min_bet), max_bet=format_money(max_bet), **_by(operator))

    def _apply_next_limits(self) -> None:
        """The round the limits waited for is over (settled, or its bets taken back at a close)."""
        if self.next_limits is not None:
            limits, self.next_limits = self.next_limits, None
            self._set_limits(*limits)

    def between_shoes(self) -> bool:
        """No shoe is being dealt: the table is closed, the shoe is being shuffled, or no card of the new
        shoe has left it and no wager lies on the layout (when the rules may change)."""
        return self.phase in ("closed", "shuffling") or (
            self.phase in ("betting", "settled") and self.cards_dealt == 0 and not self.bets)

    def _on_rules_changed(self, e: ev.RulesChanged) -> None:
        """New rules only between shoes, so no shoe is dealt under two sets of rules: with the table closed,
        while the shoe is shuffled, or before the first card of a new shoe (no wager on the layout); a
        change of the number of decks only with the table closed, and a new shoe is shuffled for it."""
        if not self.between_shoes():
            raise IllegalAction(_RULES_BETWEEN_SHOES, rule="rules", action="rules_changed")
        try:
            rules = rules_from_json(e.rules)
        except RulesFormatError as exc:
            raise MalformedEvent(f"rules_changed: {exc}") from None
        old = self.rules
        decks_change = (rules.decks, rules.deck_sets) != (old.decks, old.deck_sets)
        if decks_change and self.phase != "closed":
            raise IllegalAction(f"the number of decks changes ({old.decks} to {rules.decks}) only with the table "
                                "closed", rule="rules", action="rules_changed")
        self.rules = rules
        if self.narrate:
            self._record("rules_changed", profile=rules.name, digest=rules_digest(rules), **_by(e.operator))
        if (self.min_bet, self.max_bet) == (old.min_bet, old.max_bet) != (rules.min_bet, rules.max_bet):
            self.next_limits = None
            self._set_limits(rules.min_bet, rules.max_bet, e.operator)  # the profile's, unless the pit set others
        if decks_change:
            self.shuffle_due = True
            self.shuffle_reason = f"new rules: {rules.decks} decks"

    def _on_tick(self, e: ev.Tick) -> None:
        self.now = e.now
        self._check_deck_age()

    def _check_deck_age(self) -> None:
        if self.now is None or self.deck_opened_at is None:
            return
        due = self.deck_opened_at + self.rules.deck_change_hours * 3600.0
        left = due - self.now
        codes = {a.code for a in self.alarms.values()}
        if left <= 0:
            if "deck_change_overdue" not in codes:
                self._clear_alarms("deck_change_due")
                self._raise_alarm(
                    "deck_change_overdue",
                    f"deck set {self.deck_set} is overdue for a change "
                    f"(every {self.rules.deck_change_hours:g} h): no new round until decks are changed",
                    halts=True,
                )
        elif left <= self.rules.deck_change_warning_minutes * 60.0 and not (
            codes & {"deck_change_due", "deck_change_overdue"}
        ):
            self._raise_alarm(
                "deck_change_due", f"deck set {self.deck_set} must be changed in {int(left // 60)} min", halts=False
            )

    def _on_decks_changed(self, e: ev.DecksChanged) -> None:
        self.now = e.now
        self.deck_opened_at = e.now
        self.deck_set = e.deck_set
        self._clear_alarms("deck_change_due", "deck_change_overdue")
        self.shuffle_due = True
        self.shuffle_reason = "new decks"
        if self.narrate:
            self._record("decks_changed", deck_set=e.deck_set, at=_iso(e.now), **_by(e.operator))
        if self.phase != "closed":
            self._set_phase("shuffling")
            self._request_shuffle("new decks")

    # ------------------------------------------------------------------ devices and alarms

    def _on_device_fault(self, e: ev.DeviceFault) -> None:
        if e.device not in self.devices:
            raise MalformedEvent(f"unknown device {e.device!r}")
        if self.devices[e.device] == "lost":
            return
        self.devices[e.device] = "lost"
        self._raise_alarm(f"device_lost:{e.device}", f"{e.device} lost: {e.reason}", halts=True)

    def _on_device_restored(self, e: ev.DeviceRestored) -> None:
        if e.device not in self.devices:
            raise MalformedEvent(f"unknown device {e.device!r}")
        if self.devices[e.device] == "ok":
            return
        self.devices[e.device] = "ok"
        self._clear_alarms(f"device_lost:{e.device}")
        if self.narrate:
            self._record("device_restored", device=e.device)

    def _on_irregularity(self, e: ev.Irregularity) -> None:
        if not isinstance(e.source, str) or not e.source or not isinstance(e.detail, str) or not e.detail:
            raise MalformedEvent("an irregularity names its source and what happened")
        if e.code is not None and e.code not in NAMED_ALARMS:
            raise MalformedEvent(f"an irregularity's alarm code is one of {', '.join(sorted(NAMED_ALARMS))}")
        self._raise_alarm(e.code or f"irregularity:{e.source}", e.detail, halts=bool(e.halts))

    def _on_alarm_ack(self, e: ev.AlarmAcknowledged) -> None:
        alarm = self.alarms.get(e.alarm_id)
        if alarm is None:
            raise IllegalAction(f"no active alarm {e.alarm_id}", rule="alarms", action="ack_alarm")
        if alarm.code.startswith("device_lost:") and self.devices[alarm.code.split(":", 1)[1]] == "lost":
            raise IllegalAction(f"alarm {e.alarm_id} clears when the device is back", rule="alarms",
                                action="ack_alarm")
        if alarm.code == "deck_change_overdue":
            raise IllegalAction("an overdue deck set clears only when the decks are changed", rule="alarms",
                                action="ack_alarm")
        if alarm.integrity and not (e.operator and e.reason):
            why = "halts for integrity" if alarm.halts else "is surveillance's to judge"
            raise IllegalAction(f"alarm {e.alarm_id} ({alarm.code}) {why}: it is cleared only by an "
                                "acknowledgement that names the operator and gives a reason", rule="integrity",
                                action="ack_alarm")
        del self.alarms[e.alarm_id]
        self._out.append(AlarmCleared(alarm.id, alarm.code))
        if self.narrate:
            if e.operator is None:
                self._record("alarm_cleared", id=alarm.id, code=alarm.code, by="acknowledge")
            else:
                self._record("alarm_cleared", id=alarm.id, code=alarm.code, by="acknowledge",
                             operator=e.operator, **({"reason": e.reason} if e.reason else {}))

    def _raise_alarm(self, code: str, message: str, *, halts: bool) -> None:
        alarm = Alarm(self.next_alarm_id, code, message, halts)
        self.next_alarm_id += 1
        self.alarms[alarm.id] = alarm
        self._out.append(AlarmRaised(alarm.id, code, message, halts))
        if self.narrate:
            self._record("alarm", **alarm.to_json())

    def _clear_alarms(self, *codes: str) -> None:
        for alarm in [a for a in self.alarms.values() if a.code in codes]:
            del self.alarms[alarm.id]
            self._out.append(AlarmCleared(alarm.id, alarm.code))
            if self.narrate:
                self._record("alarm_cleared", id=alarm.id, code=alarm.code, by="resolved")

    @property
    def halted(self) -> str | None:
        """Why no new round may start (a device lost, an integrity alarm, decks overdue), or None."""
        if not self.alarms:
            return None  # a lost device always has its alarm
        lost = [d for d, s in self.devices.items() if s == "lost"]
        if lost:
            return f"device lost: {', '.join(lost)}"
        for alarm in self.alarms.values():
            if alarm.halts:
                return alarm.message
        return None

    @property
    def hole_position(self) -> int | None:
        """The shoe position of the dealer's face-down hole card (never its value), or None."""
        return self.hole_at if self.hole_face_down and self.hole_at >= 0 else None

    def round_held(self) -> str | None:
        """Why play inside a round is held (a device lost; the round resumes on reconnect), or None."""
        if not self.alarms:
            return None
        lost = [d for d, s in self.devices.items() if s == "lost"]
        return f"round held: {', '.join(lost)} lost" if lost else None

    # ------------------------------------------------------------------ bets

    def _on_bet(self, e: ev.BetPlaced) -> None:
        rules = self.rules
        spot, amount, player = e.spot, e.amount, e.player  # read once (compiled: each read of an event's is a lookup)
        if not isinstance(spot, int) or not 1 <= spot <= rules.spots:
            raise MalformedEvent(f"spot {spot!r} is not on the layout (1 to {rules.spots})")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
            raise MalformedEvent(f"spot {spot}: wager {amount!r} must be whole cents, zero or more")
        if self.shuffle_due:
            raise IllegalAction("the shoe must be shuffled before the next round", rule="shuffle",
                                spot=spot, action="bet")
        halted = self.halted if self.alarms else None  # no alarm, nothing halts (read first: a property is a call)
        if halted is not None and amount:
            raise IllegalAction(f"play is halted ({halted})", rule="halt", spot=spot, action="bet")
        if amount and not self.min_bet <= amount <= self.max_bet:
            raise IllegalAction(
                f"wager {format_money(amount)} is outside the table limits "
                f"{format_money(self.min_bet)} to {format_money(self.max_bet)}",
                rule="limits",
                spot=spot,
                action="bet",
            )
        if amount and player is not None and rules.multi_spot_max_players:
            owners = {s: p for s, (_, p) in self.bets.items() if s != spot}
            players = {p for p in owners.values() if p is not None} | {player}
            if player in owners.values() and len(players) >= rules.multi_spot_max_players:
                raise IllegalAction(
                    f"a player may play one spot only while fewer than {rules.multi_spot_max_players} "
                    f"players are at the table ({rules.name} house rules)",
                    rule="multi_spot",
                    spot=spot,
                    action="bet",
                )
        if self.phase == "settled":
            self._start_round()
        elif not self.round_open:
            self.round += 1
            self.round_open = True
        if amount:
            self.bets[spot] = (amount, player)
        else:
            self.bets.pop(spot, None)
        if self.narrate:
            self._record("bet", spot=spot, amount=format_money(amount), player=player)

    def _start_round(self) -> None:
        self._clear_round()
        self.round += 1
        self.round_open = True
        self._set_phase("betting")

    def _clear_round(self) -> None:
        self.spots = {}
        self.order = []
        self.dealer = []
        self._dealer_hand = Hand(0, self.dealer)
        self.hole_revealed = False
        self.hole_face_down = False
        self.hole_at = -1
        self.awaiting_reveal = False
        self.dealer_blackjack = None
        self.deal_plan = []
        self.deal_pos = 0
        self.active = None
        self.awaiting_peek = False
        self.insurance_open = False
        self.insurance_declined = set()
        self.third_card_dealt = False
        self.burned = []

    def _on_no_more_bets(self, e: ev.NoMoreBets) -> None:
        if not self.bets:
            raise IllegalAction("no wager on the layout", rule="procedure", action="no_more_bets")
        halted = self.halted if self.alarms else None  # no alarm, nothing halts (read first: a property is a call)
        if halted is not None:
            raise IllegalAction(f"play is halted ({halted})", rule="halt", action="no_more_bets")
        limit = self.rules.multi_spot_max_players
        if limit:
            owners = [p for _, p in self.bets.values() if p is not None]
            if len(set(owners)) >= limit:
                several = sorted({p for p in owners if owners.count(p) > 1})
                if several:
                    raise IllegalAction(
                        f"{', '.join(several)} must play one spot: {len(set(owners))} players are at the table "
                        f"and several spots are allowed only while fewer than {limit} ({self.rules.name} house rules)",
                        rule="multi_spot", action="no_more_bets")
        layout = list(self.bets.items())
        if len(layout) > 1:  # in spot order (a sort, even of one, is not free)
            layout.sort()
        order: list[Spot] = []
        spots: dict[int, Spot] = {}
        for n, (a, p) in layout:  # loops, not comprehensions: interpreted, a comprehension is a call
            spot = spots[n] = Spot(n, a, p)
            order.append(spot)
            self.handle_cents += a
        self.order = order
        self.spots = spots
        self.bets = {}
        # NY 4620.5(g): one card to each player clockwise from the dealer's left, one to the dealer,
        # then the second round; the dealer's second card is the hole card, or (no hole card game)
        # is dealt only at the dealer's turn.
        plan: list[Spot | None] = [*self.order, None, *self.order]
        if self.rules.hole_card != "none":
            plan.append(None)
        self.deal_plan = plan
        self.deal_pos = 0
        self.cards_before_round = self.cards_dealt
        if self.narrate:
            self._record(
                "no_more_bets", round=self.round,
                wagers={str(s.number): format_money(s.wager) for s in self.order},
            )
        self._set_phase("dealing")

    # ------------------------------------------------------------------ cards

    @property
    def wants_card(self) -> bool:
        """Whether the procedure now calls for a card out of the shoe."""
        return self._card_target() is not None

    @property
    def card_required(self) -> bool:
        """A card the procedure calls for without a player's say: a burn, the deal, the card owed to a
        split hand or a double, the dealer's draw. (A hit is the player's choice, not required.)"""
        return self.requires_card()

    def requires_card(self) -> bool:
        """:attr:`card_required` as a method: the croupier asks before every card, and a property read is not one
        of the calls the interpreter (3.11) runs in its own loop."""
        if not self.burn_pending and self.awaiting_discards is None:
            # _card_target's answers without a burn, read here (the croupier asks before every card and between
            # rounds: one call, not two; tests/game/test_table.py checks the two agree all along many shoes)
            phase = self.phase
            if phase == "dealing":
                return self.deal_pos < len(self.deal_plan) and not self.awaiting_peek
            if phase == "players":  # "hit" for a hand that takes a card, required for its first two or a double's
                active = self.active
                if active is None:
                    return False
                hand = self.spots[active[0]].hands[active[1]]
                return (len(hand.cards) < 2 or hand.doubled) and legality.takes_card(self.rules, hand)
            if phase == "dealer":
                return not self.awaiting_reveal and self._dealer_wants_card()
            return False
        return self._card_target() is not None

    def _card_target(self) -> str | None:
        """Where the next card out of the shoe goes: burn, deal, hit, dealer; None = not called for."""
        if self.burn_pending or self.awaiting_discards is not None:
            if self.awaiting_discards is not None:
                return None
            if self.phase in ("betting", "dealing", "players", "dealer"):
                return "burn"
        phase = self.phase
        if phase == "dealing":
            return "deal" if self.deal_pos < len(self.deal_plan) and not self.awaiting_peek else None
        if phase == "players":
            active = self.active
            if active is None:
                return None
            return "hit" if legality.takes_card(self.rules, self.spots[active[0]].hands[active[1]]) else None
        if phase == "dealer":
            return "dealer" if not self.awaiting_reveal and self._dealer_wants_card() else None
        return None

    def _on_card(self, e: ev.CardDrawn) -> None:
        card = e.card
        if card not in VALUE:
            try:
                card = parse_card(card)
            except ValueError as err:
                raise MalformedEvent(str(err)) from None
        self.cards_dealt += 1
        seen = self.seen
        n = seen[card] + 1 if card in seen else 1
        seen[card] = n
        if n > self.rules.decks:
            self._dead(card, "integrity_card_count",
                       f"{card} seen {n} times in a {self.rules.decks}-deck shoe: foreign card", halts=True)
            return
        if (self.phase == "dealing" and not self.burn_pending and self.awaiting_discards is None
                and self.deal_pos < len(self.deal_plan) and not self.awaiting_peek):
            self._deal(card)  # _card_target's "deal", most of the cards, read here (one call, not two)
            return
        target = self._card_target()
        if target is None:
            if (self.phase in ("dealer", "settled") and len(self.dealer) >= 2 and self.hole_revealed
                    and self.cards_dealt - 1 > self.cards_before_round):
                # the dealer's hand is still on the layout (no shuffle since): a card now is the dealer
                # drawing on a stand total (NY 4620.5(i)(2)-(3)), not only a dead card
                self._dead(card, "dealer_drew_on_stand",
                           f"dealer drew {card} on {self._dealer_total()[0]} where the rule says stand", halts=False)
            elif self.awaiting_peek:
                self._dead(card, "dead_card", f"{card} dealt before the hole-card peek: dead card", halts=False)
            elif self.phase == "insurance":
                self._dead(card, "dead_card", f"{card} dealt while insurance is open: dead card", halts=False)
            else:
                self._dead(card, "dead_card",
                           f"{card} was not called for ({self.phase}): dead card, burnt (NY 4620.5(i)(4))", halts=False)
            return
        if target == "burn":
            self.burn_pending -= 1
            self.burned.append(card)
            if self.narrate:
                # NY 4620.5(g): burnt "without showing its face value" (the journal keeps it)
                self._record("card", to="burn", card=None)
        elif target == "deal":
            self._deal(card)
        elif target == "hit":
            self._hit(card)
        else:
            self._dealer_card(card)

    def _on_hole_dealt(self, e: ev.HoleCardDealt) -> None:
        target = self._card_target()
        self.cards_dealt += 1
        if target != "deal" or self.deal_plan[self.deal_pos] is not None or len(self.dealer) != 1:
            self.burned.append("??")
            if self.narrate:
                self._record("card", to="dead", card=None)
            self._raise_alarm("dead_card", "a face-down card was not called for: dead card", halts=False)
            return
        self.deal_pos += 1
        self.hole_face_down = True
        self.hole_at = self.cards_dealt - 1
        if self.narrate:
            self._record("card", to="dealer", card=None, hole=True)
        if self.deal_pos == len(self.deal_plan):
            self._after_deal()

    def _dead(self, card: str, code: str, message: str, *, halts: bool) -> None:
        self.burned.append(card)
        if self.narrate:
            self._record("card", to="dead", card=card)
        self._raise_alarm(code, message, halts=halts)

    def _deal(self, card: str) -> None:
        spot = self.deal_plan[self.deal_pos]
        self.deal_pos += 1
        if spot is None:
            self._dealer_hand.add(card)
            if self.narrate:
                hole = len(self.dealer) == 2
                self._record("card", to="dealer", card=None if hole else card, hole=hole)
        else:
            hand = spot.hands[0]
            hand.add(card)
            if self.narrate:
                self._record("card", to="spot", spot=spot.number, hand=0, card=card)
        if self.deal_pos == len(self.deal_plan):
            self._after_deal()

    def _after_deal(self) -> None:
        up = VALUE[self.dealer[0]]
        for s in self.order:
            h = s.hands[0]
            if h.total == 21 and len(h.cards) == 2:  # Hand.is_natural (no split yet), without a property read
                h.status = "blackjack"
        if up == 1 and self.rules.insurance != "none":
            self.insurance_open = True
            self._set_phase("insurance")
            if self.narrate:
                self._record("insurance_open", even_money=self.rules.even_money)
            return
        self._after_insurance()

    def _after_insurance(self) -> None:
        self.insurance_open = False
        up = VALUE[self.dealer[0]]
        if self.rules.hole_card == "peek" and up in self.rules.peek_on:
            self.awaiting_peek = True
            if self.phase != "dealing":
                self._set_phase("dealing")
            self._out.append(_REQUEST_PEEK)
            if self.narrate:
                self._record("peek_requested")
            return
        self._start_players()

    def _on_peek(self, e: ev.PeekResult) -> None:
        if not self.awaiting_peek:
            raise IllegalAction("no peek was requested", rule="procedure", action="peek")
        self.awaiting_peek = False
        # a face-down unread hole card: the peek reader is the only one who has seen it
        hole_bj = bool(e.blackjack) if self.hole_face_down else is_natural(self.dealer)
        if bool(e.blackjack) != hole_bj:
            self._raise_alarm("peek_mismatch", "the peek reader disagrees with the hole card read by the shoe",
                              halts=True)
        self.dealer_blackjack = hole_bj
        if self.narrate:
            self._record("peek", blackjack=hole_bj)
        self._settle_insurance()
        if hole_bj:
            # NY 4620.5(h)(1): the dealer faces the natural and collects; ties per the option.
            if self.hole_face_down:
                self._set_phase("dealer")
                self.awaiting_reveal = True
                self._out.append(_REVEAL_HOLE)
                return
            self._reveal()
            self._settle()
        else:
            self._start_players()

    def _start_players(self) -> None:
        self._set_phase("players")
        # Naturals are paid at once when the dealer cannot have blackjack (peeked, or the up card
        # is not an ace or ten-value): NY 4620.5(h)(2); house-rules-shoe-game-surrender BLACKJACK.
        up = VALUE[self.dealer[0]]
        if self.dealer_blackjack is False or (self.rules.naturals_paid_at_once and up not in (1, 10)):
            for s in self.order:
                h = s.hands[0]
                if h.status == "blackjack" and h.payout is None:
                    num, den = self.rules.natural_pays
                    self._pay(s, 0, h, "blackjack", h.wager * num // den)
        self._advance()

    # ------------------------------------------------------------------ player decisions

    def _active_hand(self) -> Hand | None:
        if self.active is None:
            return None
        spot, idx = self.active
        return self.spots[spot].hands[idx]

    def _hand_takes_card(self, hand: Hand) -> bool:
        return legality.takes_card(self.rules, hand)

    def _hit(self, card: str) -> None:
        assert self.active is not None
        spot_no, idx = self.active
        hand = self.spots[spot_no].hands[idx]
        hand.add(card)
        # Every card dealt after the deal is some player's third card or later, a split hand's new
        # card included (the split pair were his first two): the European surrender window closes
        # "before the third card has been dealt to the first player" (european-6deck SURRENDER).
        self.third_card_dealt = True
        if self.narrate:
            self._record("card", to="spot", spot=spot_no, hand=idx, card=card)
        if hand.total > 21:
            hand.status = "bust"
            self._collect_bust(spot_no, idx, hand)
        elif hand.doubled:
            hand.status = "doubled"
        elif hand.total == 21:
            hand.status = "stood"
        elif (
            hand.split_aces
            and self.rules.split_aces_one_card
            and len(hand.cards) == 2
            and not (VALUE[card] == 1 and self._can_split(self.spots[spot_no], hand))
        ):
            hand.status = "stood"  # one card to each split ace, unless it makes a pair to resplit
        if hand.status != "active":
            self._advance()

    def _collect_bust(self, spot_no: int, idx: int, hand: Hand) -> None:
        """A busted hand loses at once: NY 4620.5(h)(3)(ii) "The dealer takes the player's wager and
        cards"; house-h17 "The player loses immediately if their hand busts"; European "the player
        automatically loses the hand".

        Except where a dealer blackjack not yet ruled out would take the original wager only
        (``dealer_blackjack_takes = "original"``, house-rules-shoe-game-surrender BLACKJACK: "split and
        double down bets are returned to the Player"): then what the hand loses depends on the
        dealer's hand, and it is settled with it.
        """
        blackjack_possible = self.dealer_blackjack is not False and VALUE[self.dealer[0]] in (1, 10)
        if self.rules.dealer_blackjack_takes == "original" and blackjack_possible:
            return
        self._pay(self.spots[spot_no], idx, hand, "lose", -hand.wager)

    def _advance(self) -> None:
        """Make the next hand to play active, in deal order; split hands in turn (NY 4620.5(k)(3))."""
        if self.active is not None:
            spot, idx = self.active
            hand = self.spots[spot].hands[idx]
            if hand.status == "active":
                return
            if self.narrate:
                self._record("hand_done", spot=spot, hand=idx, status=hand.status, total=hand.total)
        for s in self.order:
            for i, h in enumerate(s.hands):
                if h.status == "waiting":
                    h.status = "active"
                    self.active = (s.number, i)
                    if self.narrate:
                        self._record("active", spot=s.number, hand=i)
                    if len(h.cards) == 2 and h.total == 21:
                        h.status = "stood"  # a two-card 21 after a split stands: nothing to decide
                        return self._advance()
                    return None
        self.active = None
        self._dealer_turn()
        return None

    def _check_decision(self, e: ev.Decision) -> int:
        """Raise the refusal of ``e``, or return the money it puts down (a double's or insurance's amount,
        else 0). Changes nothing: :meth:`legal_actions` asks it of every candidate, so what the table
        offers is exactly what it takes."""
        return self._check(e.spot, e.action, e.amount)

    def _check(self, spot_no: int, action: str, amount: int | None) -> int:
        """:meth:`_check_decision` of a decision's fields (read once: compiled, each read of an event's is a lookup)."""
        if action not in _ACTIONS:
            raise MalformedEvent(f"spot {spot_no}: unknown action {action!r} (one of {', '.join(ev.ACTIONS)})")
        spot = self.spots.get(spot_no)
        if spot is None:
            raise IllegalAction("no wager on this spot in this round", rule="procedure", spot=spot_no, action=action)
        held = self.round_held() if self.alarms else None  # no alarm, nothing held
        if held is not None:
            raise IllegalAction(held, rule="halt", spot=spot_no, action=action)
        if amount is not None and (not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0):
            raise MalformedEvent(f"spot {spot_no}: {action} amount {amount!r} must be whole cents above zero")
        if amount is not None and action not in _TAKE_AMOUNT:  # an amount silently ignored would mislead
            raise MalformedEvent(f"spot {spot_no}: {action} takes no amount (only {', '.join(_TAKE_AMOUNT)} do)")
        if action in ("insurance", "even_money", "no_insurance"):
            return self._check_insurance(spot, action, amount)
        if self.phase == "insurance":
            raise IllegalAction("insurance is open: the dealer closes it before any player decision",
                                rule="insurance", spot=spot_no, action=action)
        if action == "surrender":
            refused = legality.surrender_refusal(self.rules, spot, up_card=self.dealer[0],
                                                 third_card_dealt=self.third_card_dealt, active=self.active)
            if refused is not None:
                raise refusal_error(refused, self.rules, spot.number, action)
            return 0
        hand = self._active_hand()
        if self.active is None or self.active[0] != spot_no or hand is None:
            turn = f"spot {self.active[0]} is playing" if self.active else "no hand is in play"
            raise IllegalAction(f"not this spot's turn ({turn})", rule="turn", spot=spot_no, action=action)
        if action == "stand":
            refused = legality.stand_refusal(hand)
        elif action == "double":
            return self._check_double(spot, hand, amount)
        else:  # split
            refused = legality.split_refusal(self.rules, spot, hand)
            if refused is None and amount is not None:
                refused = legality.split_amount_refusal(spot.wager, amount)
        if refused is not None:
            raise refusal_error(refused, self.rules, spot_no, action)
        return 0

    def _on_decision(self, e: ev.Decision) -> None:
        spot_no, action = e.spot, e.action
        amount = self._check(spot_no, action, e.amount)
        spot = self.spots[spot_no]
        if action in ("insurance", "even_money", "no_insurance"):
            self._insurance_decision(spot, action, amount)
            return
        if action == "surrender":
            self._surrender(spot)
            return
        assert self.active is not None
        idx = self.active[1]
        hand = spot.hands[idx]
        if action == "stand":
            hand.status = "stood"
            if self.narrate:
                self._record("decision", spot=spot_no, hand=idx, action="stand")
            self._advance()
        elif action == "double":
            hand.wager += amount
            hand.doubled = True
            self.handle_cents += amount
            if self.narrate:
                self._record("decision", spot=spot_no, hand=idx, action="double", amount=format_money(amount))
        else:  # split
            second = hand.cards.pop()
            hand._recount()
            new = Hand(spot.wager, [second], from_split=True)
            hand.from_split = True
            if VALUE[second] == 1:
                hand.split_aces = new.split_aces = True
            spot.hands.insert(idx + 1, new)
            self.handle_cents += spot.wager
            if self.narrate:
                self._record("decision", spot=spot_no, hand=idx, action="split", wager=format_money(spot.wager))

    def _check_double(self, spot: Spot, hand: Hand, amount: int | None) -> int:
        refused = legality.double_refusal(self.rules, hand)
        if refused is not None:
            raise refusal_error(refused, self.rules, spot.number, "double")
        taken = legality.double_amount(self.rules, hand.wager, amount, self.min_bet)
        if isinstance(taken, Refusal):
            raise refusal_error(taken, self.rules, spot.number, "double")
        return taken

    def _can_split(self, spot: Spot, hand: Hand) -> bool:
        return legality.split_refusal(self.rules, spot, hand) is None

    def _surrender(self, spot: Spot) -> None:
        """Apply a surrender :meth:`_check_decision` allowed."""
        r = self.rules
        hand = spot.hands[0]
        was_active = self.active == (spot.number, 0)
        hand.status = "surrendered"
        if self.narrate:
            self._record("decision", spot=spot.number, hand=0, action="surrender")
        # With the dealer's blackjack already ruled out (peek), the half is returned at once;
        # otherwise it waits for the dealer's hand (house-rules-shoe-game-surrender SURRENDER).
        if self.dealer_blackjack is False or not r.surrender_lost_to_blackjack:
            self._pay(spot, 0, hand, "surrender", -(hand.wager - hand.wager // 2))
        if was_active:
            self._advance()

    def _check_insurance(self, spot: Spot, action: str, amount: int | None) -> int:
        """The refusal of an insurance, even-money or no-insurance decision, or the insurance it takes."""
        if self.phase != "insurance" or not self.insurance_open:
            if not self.dealer or VALUE[self.dealer[0]] != 1:
                reason = "insurance and even money are offered only when the dealer's up card is an ace"
            else:
                reason = "insurance is closed (it closes before any player receives a third card)"
            raise IllegalAction(reason, rule="insurance", spot=spot.number, action=action)
        hand = spot.hands[0]
        if spot.insurance is not None or hand.payout is not None or spot.number in self.insurance_declined:
            raise IllegalAction("this spot has already decided on insurance", rule="insurance", spot=spot.number,
                                action=action)
        if action == "no_insurance":
            return 0
        if action == "even_money":
            refused = legality.even_money_refusal(self.rules, hand)
            if refused is not None:
                raise refusal_error(refused, self.rules, spot.number, action)
            return 0
        taken = legality.insurance_amount(self.rules, spot.wager, amount, self.min_bet)
        if isinstance(taken, Refusal):
            raise refusal_error(taken, self.rules, spot.number, action)
        return taken

    def _insurance_decision(self, spot: Spot, action: str, amount: int) -> None:
        """Apply an insurance decision :meth:`_check_insurance` allowed (``amount``: the insurance)."""
        hand = spot.hands[0]
        if action == "no_insurance":
            self.insurance_declined.add(spot.number)
            if self.narrate:
                self._record("decision", spot=spot.number, hand=0, action="no_insurance")
            return
        if action == "even_money":
            hand.status = "settled"
            if self.narrate:
                self._record("decision", spot=spot.number, hand=0, action="even_money")
            self._pay(spot, 0, hand, "even_money", hand.wager)
            return
        spot.insurance = amount
        self.handle_cents += amount
        if self.narrate:
            self._record("decision", spot=spot.number, hand=0, action="insurance", amount=format_money(amount))

    def _on_insurance_closed(self, e: ev.InsuranceClosed) -> None:
        if not self.insurance_open:
            raise IllegalAction("insurance is not open", rule="insurance", action="insurance_closed")
        if self.narrate:
            self._record("insurance_closed")
        self._after_insurance()

    def _settle_insurance(self) -> None:
        """Insurance pays 2 to 1 when the dealer has blackjack (NY 4620.5(m))."""
        bj = self.dealer_blackjack
        assert bj is not None
        for s in self.order:
            if s.insurance is not None and s.insurance_payout is None:
                s.insurance_payout = 2 * s.insurance if bj else -s.insurance
                self.house_net -= s.insurance_payout
                if self.narrate:
                    self._record("insurance_settled", spot=s.number, wager=format_money(s.insurance),
                                 payout=format_money(s.insurance_payout))

    # ------------------------------------------------------------------ the dealer

    def _dealer_total(self) -> tuple[int, bool]:
        """The dealer's best total (all cards, the hole card included) and whether it is soft."""
        return self._dealer_hand.total, self._dealer_hand.soft

    def dealer_total(self) -> tuple[int, bool]:
        """The dealer's best total of the cards known and whether it is soft (the view's reading)."""
        return self._dealer_hand.total, self._dealer_hand.soft

    def _dealer_must_play(self) -> str:
        """'full' when a hand stands against the dealer, 'check' when only a blackjack matters, else 'none'."""
        check = False
        for s in self.order:
            if s.insurance is not None and s.insurance_payout is None:
                check = True
            for h in s.hands:
                if h.status in _LIVE:
                    return "full"
                if h.payout is None and h.status in ("blackjack", "surrendered"):
                    check = True
        return "check" if check else "none"

    def _dealer_wants_card(self) -> bool:
        n = len(self.dealer)
        if n >= 2:
            if self._dealer_play != "full":
                # NY 4620.5(i): with no hand left standing against him the dealer draws nothing
                return False
            hand = self._dealer_hand
            total = hand.total
            if n == 2 and total == 21:
                return False
            return total < 17 or (total == 17 and hand.soft and self.rules.dealer_hits_soft_17)
        return self._dealer_play != "none"

    def _dealer_turn(self) -> None:
        self._set_phase("dealer")
        self._dealer_play = self._dealer_must_play()
        if self.hole_face_down:
            self.awaiting_reveal = True  # NY 4620.5(i)(1): the dealer turns up the hole card first
            self._out.append(_REVEAL_HOLE)
            return
        if len(self.dealer) == 2:
            self._reveal()
        if not self._dealer_wants_card():
            self._finish_dealer()

    def _reveal(self) -> None:
        if self.hole_revealed or len(self.dealer) < 2:
            return
        self.hole_revealed = True
        if self.narrate:
            total, soft = self._dealer_total()
            self._record("hole_card", card=self.dealer[1], total=total, soft=soft)

    def _on_dealer_reveal(self, e: ev.DealerReveal) -> None:
        if not self.hole_face_down:
            if e.card is not None and self.dealer[1:2] != [e.card]:
                raise MalformedEvent(f"the hole card is {'not ' + e.card if len(self.dealer) > 1 else 'not dealt'}")
            self._reveal()
            return
        if not self.awaiting_reveal:
            raise IllegalAction("the hole card stays face down until the dealer's turn", rule="hole_card",
                                action="dealer_reveal")
        if e.card is None:
            raise MalformedEvent("the hole card was dealt face down: its reveal must carry the card")
        try:
            card = parse_card(e.card)
        except ValueError as err:
            raise MalformedEvent(str(err)) from None
        n = self.seen.get(card, 0) + 1
        self.seen[card] = n
        if n > self.rules.decks:
            self._raise_alarm("integrity_card_count",
                              f"{card} seen {n} times in a {self.rules.decks}-deck shoe: foreign card", halts=True)
        self.hole_face_down = False
        self.awaiting_reveal = False
        self._dealer_hand.add(card)
        self._reveal()
        if self.dealer_blackjack:  # the peek found it: the round ends on the natural
            total, _ = self._dealer_total()
            if total != 21:
                self._raise_alarm("peek_mismatch", f"the peek reader reported blackjack, the hole card is {card}",
                                  halts=True)
            self._settle()
        elif not self._dealer_wants_card():
            self._finish_dealer()

    def _dealer_card(self, card: str) -> None:
        self._dealer_hand.add(card)
        if len(self.dealer) == 2:
            self.hole_revealed = True
        if self.narrate:
            total, _soft = self._dealer_total()
            self._record("card", to="dealer", card=card, hole=False, total=total)
        if not self._dealer_wants_card():
            self._finish_dealer()

    def _finish_dealer(self) -> None:
        if len(self.dealer) >= 2:
            self.dealer_blackjack = len(self.dealer) == 2 and self._dealer_hand.total == 21
        else:
            self.dealer_blackjack = False
        for s in self.order:
            if s.insurance is not None and s.insurance_payout is None:
                self._settle_insurance()
                break
        self._settle()

    # ------------------------------------------------------------------ settlement

    def _pay(self, spot: Spot, idx: int, hand: Hand, outcome: str, payout: int) -> None:
        hand.outcome = outcome
        hand.payout = payout
        self.house_net -= payout
        if self.narrate:
            self._record("payout", spot=spot.number, hand=idx, outcome=outcome, wager=format_money(hand.wager),
                         payout=format_money(payout))

    def _settle(self) -> None:
        """Settle every open wager; payouts run from the dealer's right (NY 4620.5(j))."""
        r = self.rules
        total = self._dealer_hand.total
        dealer_bj = bool(self.dealer_blackjack)
        dealer_bust = total > 21
        num, den = r.natural_pays
        original_only = dealer_bj and r.dealer_blackjack_takes == "original"
        for s in reversed(self.order):
            capped = False  # original-bets-only: the spot loses its original wager once
            for i, h in enumerate(s.hands):
                if h.payout is not None:
                    continue
                if h.status == "surrendered":
                    lost = h.wager if dealer_bj and r.surrender_lost_to_blackjack else h.wager - h.wager // 2
                    self._pay(s, i, h, "surrender", -lost)
                elif h.status == "blackjack":
                    if dealer_bj:
                        if r.ties == "house_wins":
                            self._pay(s, i, h, "lose", -h.wager)
                        else:
                            self._pay(s, i, h, "push", 0)
                    else:
                        self._pay(s, i, h, "blackjack", h.wager * num // den)
                elif dealer_bj:
                    if original_only:
                        self._pay(s, i, h, "lose" if not capped else "push", 0 if capped else -s.wager)
                        capped = True
                    else:
                        self._pay(s, i, h, "lose", -h.wager)
                elif h.status == "bust":
                    self._pay(s, i, h, "lose", -h.wager)
                elif dealer_bust or h.total > total:
                    self._pay(s, i, h, "win", h.wager)
                elif h.total < total or r.ties != "push":
                    # NY 4620.5(h) options two and three: the house wins ties other than naturals.
                    self._pay(s, i, h, "lose", -h.wager)
                else:
                    self._pay(s, i, h, "push", 0)
        self.rounds_settled += 1
        self.round_open = False
        self.active = None
        self._set_phase("settled")
        if self.narrate:
            self._record(
                "round_settled",
                round=self.round,
                dealer={"cards": list(self.dealer), "total": total, "blackjack": dealer_bj},
                nets={str(s.number): format_money(s.net) for s in self.order},
                totals=self._totals(),
            )
        if self.next_limits is not None:
            self._apply_next_limits()
        if self.cut_card_reached or self.reshuffle_after_round:
            reason = ("full reshuffle after the insufficient-cards procedure (NJ 19:47-2.15(f))"
                      if self.reshuffle_after_round else "cut card reached")
            self.shuffle_due = True
            self.shuffle_reason = reason
            self._request_shuffle(reason)

    # ------------------------------------------------------------------ shoe and shuffles

    def _on_cut_card(self, e: ev.CutCardReached) -> None:
        if self.cut_card_reached:
            return
        self.cut_card_reached = True
        if self.narrate:
            self._record("cut_card", cards_dealt=self.cards_dealt)
        # Between rounds the shuffle is due at once; during a round (wagers down or cards out) the
        # round is finished first and the shuffle requested at its settlement.
        if self.phase == "settled" or (self.phase == "betting" and not self.bets):
            self.shuffle_due = True
            self.shuffle_reason = "cut card reached"
            self._request_shuffle("cut card reached")

    def _request_shuffle(self, reason: str) -> None:
        self._out.append(StartShuffle(self.rules.cards_in_shoe, reason))
        self._out.append(_DEALING_LOCKED)
        if self.narrate:
            self._record("shuffle_requested", reason=reason)

    def _on_shuffle_started(self, e: ev.ShuffleStarted) -> None:
        if self.phase == "shuffling":  # the shuffler reports its start after the engine asked for it
            if self.narrate:
                self._record("shuffle_started")
            return
        if not self.shuffle_due:
            raise IllegalAction("no shuffle is due", rule="shuffle", action="shuffle_started")
        if self.phase != "closed":  # a closed table stays closed while its shoe is shuffled: no round without an open
            self._set_phase("shuffling")
        if self.narrate:
            self._record("shuffle_started")

    def _on_shoe_empty(self, e: ev.ShoeEmpty) -> None:
        """NJ 19:47-2.15(f): the discards are shuffled, one card burnt, the round completed."""
        if self.awaiting_discards is not None:
            return
        # "all of the cards in the discard rack": every card out of the shoe that is not on the layout,
        # so the round's burnt and dead cards too, not only the rounds before
        on_table = self._count_on_table()
        discards = self.cards_dealt - on_table
        if discards <= 0:
            raise IllegalAction("no discards to reshuffle", rule="insufficient_cards", action="shoe_empty")
        self.awaiting_discards = discards
        self._raise_alarm("insufficient_cards",
                          f"insufficient cards to complete round {self.round}: shuffle the {discards} discards "
                          f"({on_table} on the table stay), burn one, complete the round (NJ 19:47-2.15(f))",
                          halts=False)
        self._out.append(StartShuffle(discards, "insufficient cards (NJ 19:47-2.15(f))"))

    def _on_shuffle_done(self, e: ev.ShuffleDone) -> None:
        r = self.rules
        if not isinstance(e.count, int) or e.count < 0:
            raise MalformedEvent(f"shuffle count {e.count!r} must be a whole number")
        if self.awaiting_discards is not None:
            expected = self.awaiting_discards
            if e.count != expected:
                self._raise_alarm("integrity_shuffle_count",
                                  f"discard reshuffle counted {e.count} cards, expected {expected}", halts=True)
            self.awaiting_discards = None
            self._clear_alarms("insufficient_cards")
            on_table: dict[str, int] = {}
            for c in self._cards_on_table():
                on_table[c] = on_table.get(c, 0) + 1
            self.seen = on_table  # a face-down hole card is counted at its reveal
            self.cards_dealt = self._count_on_table()
            self.cards_before_round = 0
            self.burn_pending = 1
            self.reshuffle_after_round = True
            if self.narrate:
                self._record("shuffle_done", count=e.count, discards=True)
            return
        if self.phase not in ("shuffling", "settled", "betting", "closed") or not self.shuffle_due:
            raise IllegalAction("no shuffle is due", rule="shuffle", action="shuffle_done")
        if self.phase == "betting" and self.bets:
            raise IllegalAction("wagers are on the layout", rule="shuffle", action="shuffle_done")
        if e.count != r.cards_in_shoe:
            self._raise_alarm("integrity_shuffle_count",
                              f"shuffler counted {e.count} cards, a {r.decks}-deck set holds {r.cards_in_shoe}",
                              halts=True)
        if e.composition is not None:
            wrong = {rank: n for rank, n in e.composition.items() if n != 4 * r.decks}
            missing = [rank for rank in "A23456789TJQK" if rank not in e.composition]
            if wrong or missing:
                self._raise_alarm("integrity_shuffle_composition",
                                  f"shuffled deck composition is wrong: {wrong or ''}{' missing ' if missing else ''}"
                                  f"{''.join(missing)} (each rank must appear {4 * r.decks} times)", halts=True)
        self.shuffle_due = False
        self.shuffles += 1
        self.cut_card_reached = False
        self.reshuffle_after_round = False
        self.cards_dealt = 0
        self.seen = {}
        self.burn_pending = r.burn
        if e.deck_set is not None:
            self.deck_set = e.deck_set
        self._out.append(_DEALING_UNLOCKED)
        if self.narrate:
            self._record("shuffle_done", count=e.count, deck_set=self.deck_set)
        if self.phase != "closed" and self.phase != "settled":
            self._set_phase("betting")

    def _cards_on_table(self) -> list[str]:
        cards = list(self.dealer)
        for s in self.order:
            for h in s.hands:
                cards.extend(h.cards)
        return cards

    def _count_on_table(self) -> int:
        """Cards on the layout, a face-down hole card (dealt, value not yet known) included."""
        return len(self._cards_on_table()) + (1 if self.hole_face_down else 0)

    # ------------------------------------------------------------------ views

    def _set_phase(self, phase: str) -> None:
        if phase == self.phase:
            return
        if phase == "betting" and self.phase in ("settled", "shuffling") and self.spots:
            self._clear_round()
        self.phase = phase
        if self.narrate:
            self._record("phase", phase=phase)

    def legal_actions(self) -> list[ev.Decision]:
        """Every player decision :meth:`handle` accepts now, each with its default amount (the python-chess
        ``legal_moves`` idea): exactly the decisions whose check passes, by the same code that refuses them.

        Insurance is offered at half the wager and a double at the full wager; where the profile allows
        less (``up_to_half``, ``double_for_less``) other amounts are legal too, within the limits
        :mod:`controller.game.legality` sets. A hit is not a decision but a card: :meth:`awaiting`
        says when the active hand may take one (``card == "hit"``).
        """
        if "decision" not in _NEXT[self.phase] or not self.order:
            return []
        out: list[ev.Decision] = []
        for s in self.order:
            for action in ev.ACTIONS:
                decision = ev.Decision(spot=s.number, action=action)  # type: ignore[arg-type]
                try:
                    self._check_decision(decision)
                except GameError:
                    continue
                out.append(decision)
        return out

    def hit_refusal(self, spot: int) -> Refusal | None:
        """Why ``spot`` may not take a card at its say now, or None: a hit is a card, not a decision, so
        :meth:`legal_actions` does not list it; the croupier asks this before it draws for a player."""
        if spot not in self.spots and self.phase in ("insurance", "players"):
            return Refusal("no wager on this spot in this round", "procedure")
        if self.phase != "players":
            return Refusal(f"no hit in the {self.phase} phase", "procedure")
        if self.active is None or self.active[0] != spot:
            who = f"spot {self.active[0]} is playing" if self.active else "no hand is in play"
            return Refusal(f"not this spot's turn ({who})", "turn")
        held = self.round_held() if self.alarms else None  # no alarm, nothing held
        if held is not None:
            return Refusal(held, "halt")
        return legality.hit_refusal(self.rules, self.spots[spot].hands[self.active[1]])

    def _totals(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds_settled,
            "handle": format_money_fixed(self.handle_cents),
            "house_net": format_money_fixed(self.house_net),
        }

    def snapshot(self) -> dict[str, Any]:
        """The public ``state`` of DESIGN.md (without ``seq`` and ``table_id``, which the service adds).

        The hole card is ``null`` until the dealer turns it; the dealer's total counts visible cards.
        """
        spots: dict[str, Any] = {}
        if self.order:
            for s in self.order:
                spots[str(s.number)] = {
                    "hands": [
                        {
                            "cards": list(h.cards),
                            "total": h.total,
                            "soft": h.soft,
                            "wager": format_money(h.wager),
                            "status": h.status,
                            "outcome": h.outcome,
                            "payout": None if h.payout is None else format_money(h.payout),
                        }
                        for h in s.hands
                    ],
                    "insurance": None
                    if s.insurance is None
                    else {
                        "wager": format_money(s.insurance),
                        "payout": None if s.insurance_payout is None else format_money(s.insurance_payout),
                    },
                    "net": format_money(s.net) if s.settled else None,
                    "player": s.player,
                }
        else:
            for n, (amount, player) in sorted(self.bets.items()):
                spots[str(n)] = {
                    "hands": [{"cards": [], "total": 0, "soft": False, "wager": format_money(amount),
                               "status": "waiting", "outcome": None, "payout": None}],
                    "insurance": None, "net": None, "player": player,
                }
        if self.hole_face_down:
            visible: list[str | None] = [self.dealer[0], None]
            total, soft = self._dealer_total()
        elif self.hole_revealed or len(self.dealer) < 2:
            visible = list(self.dealer)
            total, soft = self._dealer_total()
        else:
            visible = [self.dealer[0], None, *self.dealer[2:]]
            v = VALUE[self.dealer[0]]
            total, soft = (11, True) if v == 1 else (v, False)
        if not self.dealer:
            total, soft = 0, False
        due_in: float | None = None
        if self.deck_opened_at is not None and self.now is not None:
            due_in = self.deck_opened_at + self.rules.deck_change_hours * 3600.0 - self.now
        return {
            "round": self.round,
            "phase": self.phase,
            "halted": self.halted,
            "closing": self.close_asked,
            "spots": spots,
            "active": None if self.active is None else {"spot": self.active[0], "hand": self.active[1]},
            "dealer": {
                "cards": visible,
                "total": total,
                "soft": soft,
                "blackjack": self.dealer_blackjack if (self.hole_revealed or self.dealer_blackjack is False)
                else None,
            },
            "insurance_open": self.insurance_open,
            "awaiting": self._awaiting_what(),
            "shoe": {
                "decks": self.rules.decks,
                "cards_dealt": self.cards_dealt,
                "penetration": round(self.cards_dealt / self.rules.cards_in_shoe, 4),
                "cut_card_reached": self.cut_card_reached,
                "shuffle_due": self.shuffle_due,
                "shuffles": self.shuffles,
            },
            "deck_set": {
                "id": self.deck_set,
                "opened_at": _iso(self.deck_opened_at),
                "change_due_in_s": None if due_in is None else int(due_in),
            },
            "limits": {"min_bet": format_money(self.min_bet), "max_bet": format_money(self.max_bet),
                       "next": None if self.next_limits is None else
                       {"min_bet": format_money(self.next_limits[0]), "max_bet": format_money(self.next_limits[1])}},
            "devices": dict(self.devices),
            "alarms": len(self.alarms),
            "totals": self._totals(),
            "profile": self.rules.name,
            "burned": len(self.burned),
        }

    def _awaiting_what(self) -> str | None:
        if self.awaiting_discards is not None:
            return "discard_shuffle"
        if self.awaiting_peek:
            return "peek"
        if self.awaiting_reveal:
            return "reveal"
        if self.wants_card:
            return "card"
        if self.phase == "insurance":
            return "insurance_closed"
        if self.phase == "players":
            return "decision"
        if self.shuffle_due:
            return "shuffle"
        if self.phase in ("betting", "settled"):
            return "bets"
        return None

    def awaiting(self) -> Awaiting:
        """What the table waits for next: the input, the card and how it is dealt, the device requests."""
        if self.phase == "closed":
            return Awaiting(None)
        target = self._card_target()
        requests: list[Effect] = []
        if self.awaiting_peek:
            requests.append(RequestPeek())
        if self.awaiting_reveal and self.hole_face_down:
            requests.append(RevealHole())
        if self.awaiting_discards is not None:
            requests.append(StartShuffle(self.awaiting_discards, "insufficient cards (NJ 19:47-2.15(f))"))
        elif self.shuffle_due:  # asked at once (table opened, new decks) or at a settlement (cut card)
            requests.append(StartShuffle(self.rules.cards_in_shoe, self.shuffle_reason))
        requests.append(DealingLocked(self.shuffle_due and self.awaiting_discards is None))
        face_down = (
            target == "deal"
            and self.rules.hole_card != "none"
            and self.deal_plan[self.deal_pos] is None
            and len(self.dealer) == 1
        )
        return Awaiting(
            self._awaiting_what(),
            card=target,
            card_required=self.card_required,
            face_down=face_down,
            active=self.active,
            requests=tuple(requests),
        )

    def alarm_list(self) -> list[dict[str, Any]]:
        """The active alarms, as published on ``alarms``."""
        return [a.to_json() for a in self.alarms.values()]
