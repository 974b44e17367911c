"""The dealer on duty (DESIGN.md, "The dealer on duty"): who deals the table's rounds.

A dealer signs in with a badge or a pit supervisor assigns one (:class:`~controller.game.events.DealerAssigned`).
Between rounds the change takes effect at once; during a round (from no more bets to the settlement) it is held
and takes effect when the round settles, the last held change winning, so every round has one dealer of record:
the dealer on duty when betting closed, named by its ``no_more_bets`` and ``round_settled`` (``dealer_id``). A
round dealt across a relief also names the incoming dealer (``relieved_by`` on ``round_settled``, null for a
sign-out), and the change is published (``dealer_changed``) right after that round's settlement. A change to
the dealer already on duty is taken and publishes nothing.

With the table's ``require_dealer`` (:class:`~controller.game.events.DealerRequired`, journaled from the
settings), betting does not open without a dealer on duty: new wagers and no more bets are refused, and the
``state`` says why (``halted``, ``awaiting: "dealer"``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from controller.contract.dealers import check_dealer
from controller.contract.phases import ROUND_PHASES
from controller.contract.roles import check_user
from controller.game import events as ev
from controller.game.errors import MalformedEvent

if TYPE_CHECKING:
    from controller.game.table import Table

#: ``by`` of a dealer who signed in at the console's badge reader (else the pit user who assigned the dealer)
BADGE: Final = "badge"
#: why betting does not open (``state.halted``, the refusal of a wager)
NO_DEALER: Final = "no dealer on duty: betting opens when a dealer signs in (require_dealer)"


def missing(t: Table) -> str | None:
    """Why no round may start for want of a dealer (the table requires one and none is on duty), or None."""
    if t.require_dealer and t.dealer_on_duty is None:
        return NO_DEALER
    return None


def on_dealer_assigned(t: Table, e: ev.DealerAssigned) -> None:
    dealer, by = e.dealer, e.by
    if dealer is not None:
        why = check_dealer(dealer)
        if why is not None:
            raise MalformedEvent(f"dealer_assigned: {why}")
    if not isinstance(by, str) or check_user(by) is not None:
        raise MalformedEvent(f"dealer_assigned: by {by!r} is neither {BADGE!r} nor a user name")
    if t.phase not in ROUND_PHASES:
        take_effect(t, dealer, by)
        return
    held = t.dealer_held
    coming = held[0] if held is not None else t.dealer_on_duty
    if dealer == coming:
        return  # the change already coming: nothing new
    t.dealer_held = None if dealer == t.dealer_on_duty else (dealer, by)
    if t.narrate:
        t._record("dealer_pending", dealer=dealer, by=by, round=t.round)


def take_effect(t: Table, dealer: str | None, by: str) -> None:
    """``dealer`` is on duty from now (published as ``dealer_changed`` when it is another)."""
    previous = t.dealer_on_duty
    if dealer == previous:
        return
    t.dealer_on_duty = dealer
    if t.narrate:
        t._record("dealer_changed", dealer=dealer, previous=previous, by=by)


def of_round(t: Table) -> dict[str, Any]:
    """The round's dealer as its ``round_settled`` names it: ``dealer_id`` (the dealer of record), and
    ``relieved_by`` when a change was held during the round."""
    held = t.dealer_held
    if held is None:
        return {"dealer_id": t.dealer_on_duty}
    return {"dealer_id": t.dealer_on_duty, "relieved_by": held[0]}


def after_settlement(t: Table) -> None:
    """The round settled: the change held during it takes effect."""
    held = t.dealer_held
    if held is not None:
        t.dealer_held = None
        take_effect(t, held[0], held[1])


def on_dealer_required(t: Table, e: ev.DealerRequired) -> None:
    required = e.required  # a bool: the journal's JSON is checked against the field's type as it is read
    if required == t.require_dealer:
        return
    t.require_dealer = required
    if t.narrate:
        t._record("dealer_required", required=required)
