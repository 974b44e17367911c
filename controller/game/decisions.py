"""The players' decisions: stand, double, split, surrender, insurance and even money, and a hit's say.

Each decision is checked in full (:func:`check`, changing nothing) before it is applied, so what the table offers
(:func:`legal_actions`) is exactly what it takes. The rule checks themselves are :mod:`controller.game.legality`'s;
this module adds the turn, the phase and the halt, and applies what was allowed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from controller.game import events as ev
from controller.game import legality
from controller.game.alarms import round_held
from controller.game.cards import VALUE
from controller.game.errors import GameError, IllegalAction, MalformedEvent, refusal_error
from controller.game.hand import Hand, Spot
from controller.game.legality import Refusal
from controller.game.money import format_money
from controller.game.settlement import insurance_payout
from controller.game.transitions import INSURANCE, NEXT, PLAYERS

if TYPE_CHECKING:
    from controller.game.table import Table

# The decisions there are (ev.ACTIONS; Final: compiled, a constant, not an attribute of the events module looked up).
_ACTIONS: Final = ev.ACTIONS
#: the decisions that put money down and so carry an amount (a split only the wager, an equal amount)
_TAKE_AMOUNT: Final = ("double", "insurance", "split")
_INSURANCE_ACTIONS: Final = ("insurance", "even_money", "no_insurance")


def check(t: Table, spot_no: int, action: str, amount: int | None) -> int:
    """Raise the refusal of a decision, or return the money it puts down (a double's or insurance's amount,
    else 0). Changes nothing: :func:`legal_actions` asks it of every candidate."""
    if action not in _ACTIONS:
        raise MalformedEvent(f"spot {spot_no}: unknown action {action!r} (one of {', '.join(ev.ACTIONS)})")
    spot = t.spots.get(spot_no)
    if spot is None:
        raise IllegalAction("no wager on this spot in this round", rule="procedure", spot=spot_no, action=action)
    held = round_held(t) if t.alarms else None  # no alarm, nothing held
    if held is not None:
        raise IllegalAction(held, rule="halt", spot=spot_no, action=action)
    if amount is not None and (not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0):
        raise MalformedEvent(f"spot {spot_no}: {action} amount {amount!r} must be whole cents above zero")
    if amount is not None and action not in _TAKE_AMOUNT:  # an amount silently ignored would mislead
        raise MalformedEvent(f"spot {spot_no}: {action} takes no amount (only {', '.join(_TAKE_AMOUNT)} do)")
    if action in _INSURANCE_ACTIONS:
        return _check_insurance(t, spot, action, amount)
    if t.phase == INSURANCE:
        raise IllegalAction("insurance is open: the dealer closes it before any player decision",
                            rule="insurance", spot=spot_no, action=action)
    if action == "surrender":
        refused = legality.surrender_refusal(t.rules, spot, up_card=t.dealer[0],
                                             third_card_dealt=t.third_card_dealt, active=t.active)
        if refused is not None:
            raise refusal_error(refused, t.rules, spot.number, action)
        return 0
    active = t.active
    if active is None or active[0] != spot_no:
        turn = f"spot {active[0]} is playing" if active else "no hand is in play"
        raise IllegalAction(f"not this spot's turn ({turn})", rule="turn", spot=spot_no, action=action)
    hand = spot.hands[active[1]]
    if action == "stand":
        refused = legality.stand_refusal(hand)
    elif action == "double":
        return _check_double(t, spot, hand, amount)
    else:  # split
        refused = legality.split_refusal(t.rules, spot, hand)
        if refused is None and amount is not None:
            refused = legality.split_amount_refusal(spot.wager, amount)
    if refused is not None:
        raise refusal_error(refused, t.rules, spot_no, action)
    return 0


def _check_double(t: Table, spot: Spot, hand: Hand, amount: int | None) -> int:
    refused = legality.double_refusal(t.rules, hand)
    if refused is not None:
        raise refusal_error(refused, t.rules, spot.number, "double")
    taken = legality.double_amount(t.rules, hand.wager, amount, t.min_bet)
    if isinstance(taken, Refusal):
        raise refusal_error(taken, t.rules, spot.number, "double")
    return taken


def _check_insurance(t: Table, spot: Spot, action: str, amount: int | None) -> int:
    """The refusal of an insurance, even-money or no-insurance decision, or the insurance it takes."""
    if t.phase != INSURANCE or not t.insurance_open:
        if not t.dealer or VALUE[t.dealer[0]] != 1:
            reason = "insurance and even money are offered only when the dealer's up card is an ace"
        else:
            reason = "insurance is closed (it closes before any player receives a third card)"
        raise IllegalAction(reason, rule="insurance", spot=spot.number, action=action)
    hand = spot.hands[0]
    if spot.insurance is not None or hand.payout is not None or spot.number in t.insurance_declined:
        raise IllegalAction("this spot has already decided on insurance", rule="insurance", spot=spot.number,
                            action=action)
    if action == "no_insurance":
        return 0
    if action == "even_money":
        refused = legality.even_money_refusal(t.rules, hand)
        if refused is not None:
            raise refusal_error(refused, t.rules, spot.number, action)
        return 0
    taken = legality.insurance_amount(t.rules, spot.wager, amount, t.min_bet)
    if isinstance(taken, Refusal):
        raise refusal_error(taken, t.rules, spot.number, action)
    return taken


def on_decision(t: Table, e: ev.Decision) -> None:
    spot_no, action = e.spot, e.action
    amount = check(t, spot_no, action, e.amount)
    spot = t.spots[spot_no]
    if action in _INSURANCE_ACTIONS:
        _insurance_decision(t, spot, action, amount)
        return
    if action == "surrender":
        _surrender(t, spot)
        return
    assert t.active is not None
    idx = t.active[1]
    hand = spot.hands[idx]
    if action == "stand":
        hand.status = "stood"
        if t.narrate:
            t._record("decision", spot=spot_no, hand=idx, action="stand")
        t._advance()
    elif action == "double":
        hand.wager += amount
        hand.doubled = True
        t.handle_cents += amount
        if t.narrate:
            t._record("decision", spot=spot_no, hand=idx, action="double", amount=format_money(amount))
    else:  # split
        second = hand.cards.pop()
        hand._recount()
        new = Hand(spot.wager, [second], from_split=True)
        hand.from_split = True
        if VALUE[second] == 1:
            hand.split_aces = new.split_aces = True
        spot.hands.insert(idx + 1, new)
        t.handle_cents += spot.wager
        if t.narrate:
            t._record("decision", spot=spot_no, hand=idx, action="split", wager=format_money(spot.wager))


def can_split(t: Table, spot: Spot, hand: Hand) -> bool:
    return legality.split_refusal(t.rules, spot, hand) is None


def _surrender(t: Table, spot: Spot) -> None:
    """Apply a surrender :func:`check` allowed."""
    hand = spot.hands[0]
    was_active = t.active == (spot.number, 0)
    hand.status = "surrendered"
    if t.narrate:
        t._record("decision", spot=spot.number, hand=0, action="surrender")
    # With the dealer's blackjack already ruled out (peek), the half is returned at once;
    # otherwise it waits for the dealer's hand (house-rules-shoe-game-surrender SURRENDER).
    if t.dealer_blackjack is False or not t.rules.surrender_lost_to_blackjack:
        t._pay(spot, 0, hand, "surrender", -(hand.wager - hand.wager // 2))
    if was_active:
        t._advance()


def _insurance_decision(t: Table, spot: Spot, action: str, amount: int) -> None:
    """Apply an insurance decision :func:`check` allowed (``amount``: the insurance)."""
    hand = spot.hands[0]
    if action == "no_insurance":
        t.insurance_declined.add(spot.number)
        if t.narrate:
            t._record("decision", spot=spot.number, hand=0, action="no_insurance")
        return
    if action == "even_money":
        hand.status = "settled"
        if t.narrate:
            t._record("decision", spot=spot.number, hand=0, action="even_money")
        t._pay(spot, 0, hand, "even_money", hand.wager)
        return
    spot.insurance = amount
    t.handle_cents += amount
    if t.narrate:
        t._record("decision", spot=spot.number, hand=0, action="insurance", amount=format_money(amount))


def on_insurance_closed(t: Table, e: ev.InsuranceClosed) -> None:
    if not t.insurance_open:
        raise IllegalAction("insurance is not open", rule="insurance", action="insurance_closed")
    if t.narrate:
        t._record("insurance_closed")
    t._after_insurance()


def settle_insurance(t: Table) -> None:
    """Insurance pays 2 to 1 when the dealer has blackjack (NY 4620.5(m))."""
    bj = t.dealer_blackjack
    assert bj is not None
    for s in t.order:
        if s.insurance is not None and s.insurance_payout is None:
            s.insurance_payout = insurance_payout(s.insurance, bj)
            t.house_net -= s.insurance_payout
            if t.narrate:
                t._record("insurance_settled", spot=s.number, wager=format_money(s.insurance),
                          payout=format_money(s.insurance_payout))


def legal_actions(t: Table) -> list[ev.Decision]:
    """Every player decision the table accepts now, each with its default amount (see Table.legal_actions)."""
    if "decision" not in NEXT[t.phase] or not t.order:
        return []
    out: list[ev.Decision] = []
    for s in t.order:
        for action in ev.ACTIONS:
            try:
                check(t, s.number, action, None)
            except GameError:
                continue
            out.append(ev.Decision(spot=s.number, action=action))  # type: ignore[arg-type]
    return out


def hit_refusal(t: Table, spot: int) -> Refusal | None:
    """Why ``spot`` may not take a card at its say now, or None (see Table.hit_refusal)."""
    if spot not in t.spots and t.phase in (INSURANCE, PLAYERS):
        return Refusal("no wager on this spot in this round", "procedure")
    if t.phase != PLAYERS:
        return Refusal(f"no hit in the {t.phase} phase", "procedure")
    if t.active is None or t.active[0] != spot:
        who = f"spot {t.active[0]} is playing" if t.active else "no hand is in play"
        return Refusal(f"not this spot's turn ({who})", "turn")
    held = round_held(t) if t.alarms else None  # no alarm, nothing held
    if held is not None:
        return Refusal(held, "halt")
    return legality.hit_refusal(t.rules, t.spots[spot].hands[t.active[1]])
