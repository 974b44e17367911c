"""The round engine: one table's blackjack, driven one physical event at a time.

Sans-I/O (the h11 model): :meth:`Table.handle` takes an event from
:mod:`controller.game.events` and returns a list of effects
(:mod:`controller.game.effects`). No clock, no randomness, no I/O: time comes in
on the events, the shoe order comes from the cards drawn. The same object runs
the table service, the scenario runner and the bench, so the journal can replay
a table exactly.

The table holds the state and keeps the dispatch, the phase and the round's flow (the deal, the peek, the
players' turns, the dealer's turn, the settlement); beside it a module per job: :mod:`~controller.game.errors`,
:mod:`~controller.game.transitions` (the phases and where each event may lead), :mod:`~controller.game.alarms`,
:mod:`~controller.game.pit` (limits, rules, the clock and deck age), :mod:`~controller.game.shoe` (the cut
card, the burn, the shuffles), :mod:`~controller.game.bets`, :mod:`~controller.game.decisions`,
:mod:`~controller.game.dealer` and :mod:`~controller.game.settlement` (pure functions) and
:mod:`~controller.game.public_view`.

Any event a phase does not list is refused with :class:`IllegalAction` naming the rule, and the table is
left exactly as it was (every handler checks before it changes anything); a phase a handler sets is checked
against the event's transitions before the phase changes (:class:`TransitionNotListed`: an engine bug). Cards
are physical: a card the procedure did not call for is not refused but burnt as a dead card with an alarm
(NY 4620.5(i)(4)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mypy_extensions import mypyc_attr

from controller.game import alarms, bets, deal, dealer, dealer_duty, decisions, pit, public_view, settlement, shoe
from controller.game import events as ev
from controller.game.alarms import Alarm
from controller.game.awaiting import Awaiting
from controller.game.cards import VALUE, parse_card
from controller.game.effects import Effect, Record
from controller.game.errors import IllegalAction, MalformedEvent, TransitionNotListed
from controller.game.hand import Hand, Spot
from controller.game.legality import Refusal
from controller.game.money import format_money
from controller.game.rules import Rules
from controller.game.transitions import (
    BETTING,
    CLOSED,
    DEALER,
    DEALING,
    INSURANCE,
    NEXT,
    PLAYERS,
    SETTLED,
    SHUFFLING,
)

_ROUND_IN_PROGRESS: Final = "a round is in progress: finish it first"

# Classes of the events handle() calls its handler for directly (Final: compiled, constants).
_CARD_DRAWN: Final = ev.CardDrawn
_DECISION: Final = ev.Decision
_BET_PLACED: Final = ev.BetPlaced
_NO_MORE_BETS: Final = ev.NoMoreBets


@mypyc_attr(allow_interpreted_subclasses=True)  # tests plant broken engines as subclasses
class Table:
    """A blackjack table's state machine. Feed events with :meth:`handle`; read :meth:`snapshot`."""

    # Slotted (interpreted: more than 30 attributes would leave the instance's shared-key layout, and every read of
    # one a hashed lookup); the compiled class has fixed fields anyway. Every attribute __init__ sets.
    __slots__ = (
        "_dealer_hand", "_dealer_play", "_dispatch_now", "_dispatch_phase", "_event", "_leads_to",
        "_out",
        "active", "alarms", "awaiting_discards", "awaiting_peek", "awaiting_reveal", "bets", "burn_pending", "burned",
        "cards_before_round", "cards_dealt", "close_asked", "close_by", "cut_card_reached", "deal_plan", "deal_pos",
        "dealer",
        "dealer_blackjack", "dealer_held", "dealer_on_duty", "deck_opened_at", "deck_set", "devices", "handle_cents",
        "hole_at", "hole_face_down", "hole_revealed", "house_net", "insurance_declined", "insurance_open", "max_bet",
        "min_bet", "narrate", "next_alarm_id", "next_limits", "now", "order", "phase", "require_dealer",
        "reshuffle_after_round", "round", "round_open", "rounds_settled", "rules", "seen", "shuffle_due",
        "shuffle_reason", "shuffles", "spots", "third_card_dealt",
    )

    def __init__(self, rules: Rules, *, narrate: bool = True) -> None:
        self.rules = rules
        #: build public :class:`Record` effects (off on the bench, for speed)
        self.narrate = narrate
        self.phase = CLOSED
        self.round = 0
        self.round_open = False  # a round number is assigned to the bets on the layout
        self._dealer_play = dealer.FULL
        self.min_bet = rules.min_bet
        self.max_bet = rules.max_bet
        self.next_limits: tuple[int, int] | None = None  # set while wagers were in play: from the next round
        #: a close asked while a round was in play (and by whom): the table closes when that round settles
        self.close_asked = False
        self.close_by: str | None = None
        #: the dealer on duty (None: none signed in), a change held until the round in play settles (the dealer
        #: and who assigned), and whether betting opens only with a dealer on duty (controller/game/dealer_duty.py)
        self.dealer_on_duty: str | None = None
        self.dealer_held: tuple[str | None, str] | None = None
        self.require_dealer = False
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
        # the event being handled: its effects, its phase when it came, where it may lead (handle() sets them)
        self._out: list[Effect] = []
        self._event: ev.Event | None = None
        self._leads_to: frozenset[str] = frozenset()
        self._dispatch_phase = self.phase
        self._dispatch_now = _DISPATCH[self.phase]

    # ------------------------------------------------------------------ entry point

    def handle(self, event: ev.Event) -> list[Effect]:
        """Apply one event; return its effects. Refusals raise and change nothing."""
        phase = self.phase
        if phase is not self._dispatch_phase:  # the phase's dispatch, looked up again when the phase changed
            self._dispatch_now = _DISPATCH[phase]
            self._dispatch_phase = phase
        cls = type(event)
        try:  # a subscript, not .get(): interpreted, a method call costs more than the try
            handler, leads_to = self._dispatch_now[cls]
        except KeyError:
            if cls not in _HANDLERS:
                raise MalformedEvent(f"not an engine event: {event!r}") from None
            raise self._phase_refusal(event) from None
        out: list[Effect] = []
        self._out = out
        self._event = event
        self._leads_to = leads_to
        # the cards, the decisions and the wagers, most of the events, called directly (compiled: a native call, not
        # through the dispatch's function object; narrowed by their class, not a cast: interpreted, a cast is a call)
        if type(event) is _CARD_DRAWN:
            deal.on_card(self, event)
        elif type(event) is _DECISION:
            decisions.on_decision(self, event)
        elif type(event) is _BET_PLACED:
            bets.on_bet(self, event)
        elif type(event) is _NO_MORE_BETS:
            bets.on_no_more_bets(self, event)
        else:
            handler(self, event)
        # a phase set was checked by _set_phase; a phase left as it was must be one the event may leave it in
        if self.phase is phase and phase not in leads_to:
            raise TransitionNotListed(phase, event.TYPE, phase)
        return out

    def _set_phase(self, phase: str) -> None:
        """Move the table to ``phase``, which the event being handled must list (:data:`TRANSITIONS`), checked
        before the phase changes."""
        if phase == self.phase:
            return
        if phase not in self._leads_to:  # (_check_phase, inline: every phase change passes here)
            raise self._not_listed(phase)
        if phase == BETTING and self.phase in (SETTLED, SHUFFLING) and self.spots:
            self._clear_round()
        self.phase = phase
        if self.narrate:
            self._record("phase", phase=phase)

    def _check_phase(self, phase: str) -> None:
        """Raise :class:`TransitionNotListed` unless the event being handled may take the table to ``phase``: the
        handlers whose event has one destination ask it before they change anything, :meth:`_set_phase` again."""
        if phase not in self._leads_to and phase != self.phase:
            raise self._not_listed(phase)

    def _not_listed(self, new_phase: str) -> TransitionNotListed:
        """The engine bug of setting ``new_phase`` on the event being handled (its phase: the one whose transitions
        for the event are the very set handle() took)."""
        etype = "" if self._event is None else self._event.TYPE
        came = next((p for p, nxt in NEXT.items() if nxt.get(etype) is self._leads_to), self.phase)
        return TransitionNotListed(came, etype, new_phase)

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
            if self.phase == CLOSED:
                return "the table is closed"
            if self.phase == SHUFFLING:
                return "the shoe is being shuffled"
            return "bets are locked once the first card is dealt (NJ 19:47-2.3(f))"
        if etype == "rules_changed":
            return pit.RULES_BETWEEN_SHOES
        if etype == "decision" and self.awaiting_peek:
            return "the dealer peeks at the hole card before any player decision (NY 4620.5(h)(1))"
        if etype == "decision" and self.phase in (BETTING, SETTLED, DEALING, DEALER):
            return f"no player decision is taken in the {self.phase} phase"
        return f"not accepted in the {self.phase} phase"

    def _record(self, type_: str, **data: Any) -> None:
        self._out.append(Record(type_, data))

    # ------------------------------------------------------------------ opening and closing

    def _on_opened(self, e: ev.TableOpened) -> None:
        self._check_phase(SHUFFLING if self.shuffle_due else BETTING)
        self.now = e.now
        if self.deck_opened_at is None:
            self.deck_opened_at = e.now
            self.deck_set = e.deck_set
        self.rounds_settled = 0
        self.handle_cents = 0
        self.house_net = 0
        if self.narrate:
            self._record("table_opened", at=pit.iso(e.now), deck_set=self.deck_set, **pit.by(e.operator))
        self._set_phase(SHUFFLING if self.shuffle_due else BETTING)
        if self.shuffle_due:
            shoe.request_shuffle(self, self.shuffle_reason)

    def _on_closed(self, e: ev.TableClosed) -> None:
        if self.phase == BETTING and self.spots:  # (no such table is known: kept as the engine always had it)
            raise IllegalAction(_ROUND_IN_PROGRESS, rule="procedure", action="close")
        if self.phase in (DEALING, INSURANCE, PLAYERS, DEALER):
            if self.close_asked:
                raise IllegalAction(f"a close is already asked: the table closes when round {self.round} settles",
                                    rule="procedure", action="close")
            self.close_asked, self.close_by = True, e.operator  # the table service closes it at the settlement
            if self.narrate:
                self._record("close_asked", round=self.round, **pit.by(e.operator))
            return
        self._check_phase(CLOSED)
        self.now = e.now
        self.close_asked, self.close_by = False, None
        self.bets.clear()
        self._clear_round()
        if self.narrate:
            self._record("table_closed", at=pit.iso(e.now), **pit.by(e.operator))
        self._set_phase(CLOSED)
        pit.apply_next_limits(self)

    def _check_deck_age(self) -> None:
        pit.check_deck_age(self)

    # ------------------------------------------------------------------ the round

    def _start_round(self) -> None:
        self._check_phase(BETTING)
        self._clear_round()
        self.round += 1
        self.round_open = True
        self._set_phase(BETTING)

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

    def _deal(self, card: str) -> None:
        """The next card of the deal plan (NY 4620.5(g)); the dealer's second card is the hole card."""
        spot = self.deal_plan[self.deal_pos]
        self.deal_pos += 1
        if spot is None:
            self._dealer_hand.add(card)
            if self.narrate:
                hole = len(self.dealer) == 2
                self._record("card", to="dealer", card=None if hole else card, hole=hole)
        else:
            spot.hands[0].add(card)
            if self.narrate:
                self._record("card", to="spot", spot=spot.number, hand=0, card=card)
        if self.deal_pos == len(self.deal_plan):
            deal.after_deal(self)

    def _after_insurance(self) -> None:
        deal.after_insurance(self)

    def _start_players(self) -> None:
        self._set_phase(PLAYERS)
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

    # ------------------------------------------------------------------ the players' hands

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
            if not settlement.bust_waits(self.rules, self.dealer_blackjack, VALUE[self.dealer[0]]):
                self._pay(self.spots[spot_no], idx, hand, "lose", -hand.wager)
        elif hand.doubled:
            hand.status = "doubled"
        elif hand.total == 21:
            hand.status = "stood"
        elif (
            hand.split_aces
            and self.rules.split_aces_one_card
            and len(hand.cards) == 2
            and not (VALUE[card] == 1 and decisions.can_split(self, self.spots[spot_no], hand))
        ):
            hand.status = "stood"  # one card to each split ace, unless it makes a pair to resplit
        if hand.status != "active":
            self._advance()

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

    # ------------------------------------------------------------------ the dealer's hand

    def _dealer_wants_card(self) -> bool:
        hand = self._dealer_hand
        return dealer.draws(len(self.dealer), hand.total, hand.soft, self._dealer_play,
                            self.rules.dealer_hits_soft_17)

    def _dealer_turn(self) -> None:
        self._set_phase(DEALER)
        self._dealer_play = dealer.must_play(self.order)
        if self.hole_face_down:
            self.awaiting_reveal = True  # NY 4620.5(i)(1): the dealer turns up the hole card first
            self._out.append(deal.REVEAL_HOLE)
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
            self._record("hole_card", card=self.dealer[1], total=self._dealer_hand.total, soft=self._dealer_hand.soft)

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
        foreign = shoe.foreign_card(self, card)
        if foreign is not None:
            alarms.raise_alarm(self, shoe.CARD_COUNT_ALARM, foreign, halts=True)
        self.hole_face_down = False
        self.awaiting_reveal = False
        self._dealer_hand.add(card)
        self._reveal()
        if self.dealer_blackjack:  # the peek found it: the round ends on the natural
            if self._dealer_hand.total != 21:
                alarms.raise_alarm(self, "peek_mismatch",
                                   f"the peek reader reported blackjack, the hole card is {card}", halts=True)
            self._settle()
        elif not self._dealer_wants_card():
            self._finish_dealer()

    def _dealer_card(self, card: str) -> None:
        self._dealer_hand.add(card)
        if len(self.dealer) == 2:
            self.hole_revealed = True
        if self.narrate:
            self._record("card", to="dealer", card=card, hole=False, total=self._dealer_hand.total)
        if not self._dealer_wants_card():
            self._finish_dealer()

    def _finish_dealer(self) -> None:
        if len(self.dealer) >= 2:
            self.dealer_blackjack = len(self.dealer) == 2 and self._dealer_hand.total == 21
        else:
            self.dealer_blackjack = False
        for s in self.order:
            if s.insurance is not None and s.insurance_payout is None:
                decisions.settle_insurance(self)
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
        """Settle every open wager (:func:`controller.game.settlement.settle`), then what waited for the round."""
        total = self._dealer_hand.total
        dealer_bj = bool(self.dealer_blackjack)
        for spot, idx, hand, outcome, payout in settlement.settle(self.order, total, dealer_bj, self.rules):
            self._pay(spot, idx, hand, outcome, payout)
        self.rounds_settled += 1
        self.round_open = False
        self.active = None
        self._set_phase(SETTLED)
        if self.narrate:
            self._record(
                "round_settled",
                round=self.round,
                dealer={"cards": list(self.dealer), "total": total, "blackjack": dealer_bj},
                nets={str(s.number): format_money(s.net) for s in self.order},
                totals=public_view.totals(self),
                **dealer_duty.of_round(self),
            )
        dealer_duty.after_settlement(self)  # a relief held during the round, right after its settlement
        if self.next_limits is not None:
            pit.apply_next_limits(self)
        if self.cut_card_reached or self.reshuffle_after_round:
            reason = ("full reshuffle after the insufficient-cards procedure (NJ 19:47-2.15(f))"
                      if self.reshuffle_after_round else "cut card reached")
            self.shuffle_due = True
            self.shuffle_reason = reason
            shoe.request_shuffle(self, reason)

    # ------------------------------------------------------------------ what the shell reads

    @property
    def halted(self) -> str | None:
        """Why no new round may start (a device lost, an integrity alarm, decks overdue), or None."""
        return alarms.halted(self)

    def round_held(self) -> str | None:
        """Why play inside a round is held (a device lost; the round resumes on reconnect), or None."""
        return alarms.round_held(self)

    @property
    def hole_position(self) -> int | None:
        """The shoe position of the dealer's face-down hole card (never its value), or None."""
        return self.hole_at if self.hole_face_down and self.hole_at >= 0 else None

    def between_shoes(self) -> bool:
        """No shoe is being dealt (when the rules may change): see :func:`controller.game.pit.between_shoes`."""
        return pit.between_shoes(self)

    @property
    def wants_card(self) -> bool:
        """Whether the procedure now calls for a card out of the shoe."""
        return shoe.card_target(self) is not None

    @property
    def card_required(self) -> bool:
        """A card the procedure calls for without a player's say: a burn, the deal, the card owed to a
        split hand or a double, the dealer's draw. (A hit is the player's choice, not required.)"""
        return shoe.card_target(self, True) is not None

    def dealer_total(self) -> tuple[int, bool]:
        """The dealer's best total (all cards, the hole card included once read) and whether it is soft."""
        return self._dealer_hand.total, self._dealer_hand.soft

    def legal_actions(self) -> list[ev.Decision]:
        """Every player decision :meth:`handle` accepts now, each with its default amount (the python-chess
        ``legal_moves`` idea): exactly the decisions whose check passes, by the same code that refuses them.

        Insurance is offered at half the wager and a double at the full wager; where the profile allows
        less (``up_to_half``, ``double_for_less``) other amounts are legal too, within the limits
        :mod:`controller.game.legality` sets. A hit is not a decision but a card: :meth:`awaiting`
        says when the active hand may take one (``card == "hit"``).
        """
        return decisions.legal_actions(self)

    def hit_refusal(self, spot: int) -> Refusal | None:
        """Why ``spot`` may not take a card at its say now, or None: a hit is a card, not a decision, so
        :meth:`legal_actions` does not list it; the croupier asks this before it draws for a player."""
        return decisions.hit_refusal(self, spot)

    def snapshot(self) -> dict[str, Any]:
        """The public ``state`` of DESIGN.md (without ``seq`` and ``table_id``, which the service adds).

        The hole card is ``null`` until the dealer turns it; the dealer's total counts visible cards.
        """
        return public_view.snapshot(self)

    def awaiting(self) -> Awaiting:
        """What the table waits for next: the input, the card and how it is dealt, the device requests."""
        return public_view.awaiting(self)

    def alarm_list(self) -> list[dict[str, Any]]:
        """The active alarms, as published on ``alarms``."""
        return [a.to_json() for a in self.alarms.values()]


#: What handles each event (a function of the table and the event).
_HANDLERS: Final[dict[type[Any], Callable[[Table, Any], None]]] = {
    ev.TableOpened: Table._on_opened,
    ev.TableClosed: Table._on_closed,
    ev.BetPlaced: bets.on_bet,
    ev.NoMoreBets: bets.on_no_more_bets,
    ev.CardDrawn: deal.on_card,
    ev.HoleCardDealt: deal.on_hole_dealt,
    ev.CutCardReached: shoe.on_cut_card,
    ev.ShoeEmpty: shoe.on_shoe_empty,
    ev.PeekResult: deal.on_peek,
    ev.Decision: decisions.on_decision,
    ev.InsuranceClosed: decisions.on_insurance_closed,
    ev.DealerReveal: Table._on_dealer_reveal,
    ev.ShuffleStarted: shoe.on_shuffle_started,
    ev.ShuffleDone: shoe.on_shuffle_done,
    ev.DecksChanged: pit.on_decks_changed,
    ev.Tick: pit.on_tick,
    ev.DeviceFault: alarms.on_device_fault,
    ev.DeviceRestored: alarms.on_device_restored,
    ev.Irregularity: alarms.on_irregularity,
    ev.AlarmAcknowledged: alarms.on_alarm_ack,
    ev.LimitsSet: pit.on_limits,
    ev.RulesChanged: pit.on_rules_changed,
    ev.DealerAssigned: dealer_duty.on_dealer_assigned,
    ev.DealerRequired: dealer_duty.on_dealer_required,
}

# _HANDLERS and NEXT by phase, then event class: what handle() calls and where it may lead, in one lookup.
_DISPATCH: Final[dict[str, dict[type[Any], tuple[Callable[[Table, Any], None], frozenset[str]]]]] = {
    phase: {cls: (handler, nxt[cls.TYPE]) for cls, handler in _HANDLERS.items() if cls.TYPE in nxt}
    for phase, nxt in NEXT.items()
}
