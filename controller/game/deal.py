"""The deal: each card out of the shoe to where the procedure sends it, insurance offered, the peek.

NY 4620.5(g): one card to each player clockwise from the dealer's left, one to the dealer, then the second
round; the dealer's second card is the hole card (dealt face up, read by the shoe, or face down and read at its
reveal). A card the procedure did not call for is burnt as a dead card with an alarm (NY 4620.5(i)(4)); a card
after the dealer stood on the layout is the dealer drawing on a stand total (NY 4620.5(i)(2)-(3)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from controller.game import events as ev
from controller.game.alarms import raise_alarm
from controller.game.cards import VALUE, is_natural, parse_card
from controller.game.decisions import settle_insurance
from controller.game.effects import RequestPeek, RevealHole
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.shoe import BURN, CARD_COUNT_ALARM, DEAL, HIT, card_target, foreign_card
from controller.game.transitions import DEALER, DEALING, INSURANCE, SETTLED

if TYPE_CHECKING:
    from controller.game.table import Table

# Effects without a variable part: immutable, so one of each serves every request (a dataclass built is a call).
REQUEST_PEEK: Final = RequestPeek()
REVEAL_HOLE: Final = RevealHole()


def on_card(t: Table, e: ev.CardDrawn) -> None:
    card = e.card
    if card not in VALUE:
        try:
            card = parse_card(card)
        except ValueError as err:
            raise MalformedEvent(str(err)) from None
    t.cards_dealt += 1
    foreign = foreign_card(t, card)
    if foreign is not None:
        _dead(t, card, CARD_COUNT_ALARM, foreign, halts=True)
        return
    if (t.phase == DEALING and not t.burn_pending and t.awaiting_discards is None
            and t.deal_pos < len(t.deal_plan) and not t.awaiting_peek):
        t._deal(card)  # card_target's "deal", most of the cards, read here (one call, not two)
        return
    target = card_target(t)
    if target is None:
        if (t.phase in (DEALER, SETTLED) and len(t.dealer) >= 2 and t.hole_revealed
                and t.cards_dealt - 1 > t.cards_before_round):
            # the dealer's hand is still on the layout (no shuffle since): a card now is the dealer
            # drawing on a stand total (NY 4620.5(i)(2)-(3)), not only a dead card
            _dead(t, card, "dealer_drew_on_stand",
                  f"dealer drew {card} on {t._dealer_hand.total} where the rule says stand", halts=False)
        elif t.awaiting_peek:
            _dead(t, card, "dead_card", f"{card} dealt before the hole-card peek: dead card", halts=False)
        elif t.phase == INSURANCE:
            _dead(t, card, "dead_card", f"{card} dealt while insurance is open: dead card", halts=False)
        else:
            _dead(t, card, "dead_card",
                  f"{card} was not called for ({t.phase}): dead card, burnt (NY 4620.5(i)(4))", halts=False)
        return
    if target == BURN:
        t.burn_pending -= 1
        t.burned.append(card)
        if t.narrate:
            # NY 4620.5(g): burnt "without showing its face value" (the journal keeps it)
            t._record("card", to="burn", card=None)
    elif target == DEAL:
        t._deal(card)
    elif target == HIT:
        t._hit(card)
    else:
        t._dealer_card(card)


def on_hole_dealt(t: Table, e: ev.HoleCardDealt) -> None:
    target = card_target(t)
    t.cards_dealt += 1
    if target != DEAL or t.deal_plan[t.deal_pos] is not None or len(t.dealer) != 1:
        t.burned.append("??")
        if t.narrate:
            t._record("card", to="dead", card=None)
        raise_alarm(t, "dead_card", "a face-down card was not called for: dead card", halts=False)
        return
    t.deal_pos += 1
    t.hole_face_down = True
    t.hole_at = t.cards_dealt - 1
    if t.narrate:
        t._record("card", to="dealer", card=None, hole=True)
    if t.deal_pos == len(t.deal_plan):
        after_deal(t)


def _dead(t: Table, card: str, code: str, message: str, *, halts: bool) -> None:
    t.burned.append(card)
    if t.narrate:
        t._record("card", to="dead", card=card)
    raise_alarm(t, code, message, halts=halts)


def after_deal(t: Table) -> None:
    up = VALUE[t.dealer[0]]
    for s in t.order:
        h = s.hands[0]
        if h.total == 21 and len(h.cards) == 2:  # Hand.is_natural (no split yet), without a property read
            h.status = "blackjack"
    if up == 1 and t.rules.insurance != "none":
        t._set_phase(INSURANCE)
        t.insurance_open = True
        if t.narrate:
            t._record("insurance_open", even_money=t.rules.even_money)
        return
    after_insurance(t)


def after_insurance(t: Table) -> None:
    up = VALUE[t.dealer[0]]
    if t.rules.hole_card == "peek" and up in t.rules.peek_on:
        if t.phase != DEALING:
            t._set_phase(DEALING)
        t.insurance_open = False
        t.awaiting_peek = True
        t._out.append(REQUEST_PEEK)
        if t.narrate:
            t._record("peek_requested")
        return
    t.insurance_open = False
    t._start_players()


def on_peek(t: Table, e: ev.PeekResult) -> None:
    if not t.awaiting_peek:
        raise IllegalAction("no peek was requested", rule="procedure", action="peek")
    t.awaiting_peek = False
    # a face-down unread hole card: the peek reader is the only one who has seen it
    hole_bj = bool(e.blackjack) if t.hole_face_down else is_natural(t.dealer)
    if bool(e.blackjack) != hole_bj:
        raise_alarm(t, "peek_mismatch", "the peek reader disagrees with the hole card read by the shoe",
                           halts=True)
    t.dealer_blackjack = hole_bj
    if t.narrate:
        t._record("peek", blackjack=hole_bj)
    settle_insurance(t)
    if hole_bj:
        # NY 4620.5(h)(1): the dealer faces the natural and collects; ties per the option.
        if t.hole_face_down:
            t._set_phase(DEALER)
            t.awaiting_reveal = True
            t._out.append(REVEAL_HOLE)
            return
        t._reveal()
        t._settle()
    else:
        t._start_players()
