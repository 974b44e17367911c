"""Wagers: the betting layout between rounds, and the layout locked into the round's spots at no more bets.

A wager is checked against the shoe (shuffled), a halt, the table limits and the profile's multi-spot rule
before anything changes; at no more bets the deal plan is laid out (NY 4620.5(g)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controller.game import events as ev
from controller.game.alarms import halted
from controller.game.dealer_duty import NO_DEALER
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.hand import Spot
from controller.game.money import format_money
from controller.game.transitions import DEALING, SETTLED

if TYPE_CHECKING:
    from controller.game.table import Table


def on_bet(t: Table, e: ev.BetPlaced) -> None:
    rules = t.rules
    spot, amount, player = e.spot, e.amount, e.player  # read once (compiled: each read of an event's is a lookup)
    if not isinstance(spot, int) or not 1 <= spot <= rules.spots:
        raise MalformedEvent(f"spot {spot!r} is not on the layout (1 to {rules.spots})")
    if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
        raise MalformedEvent(f"spot {spot}: wager {amount!r} must be whole cents, zero or more")
    if t.shuffle_due:
        raise IllegalAction("the shoe must be shuffled before the next round", rule="shuffle",
                            spot=spot, action="bet")
    why = halted(t) if t.alarms else None  # no alarm, nothing halts
    if why is not None and amount:
        raise IllegalAction(f"play is halted ({why})", rule="halt", spot=spot, action="bet")
    if amount and t.require_dealer and t.dealer_on_duty is None:
        raise IllegalAction(NO_DEALER, rule="dealer", spot=spot, action="bet")
    if amount and not t.min_bet <= amount <= t.max_bet:
        raise IllegalAction(
            f"wager {format_money(amount)} is outside the table limits "
            f"{format_money(t.min_bet)} to {format_money(t.max_bet)}",
            rule="limits",
            spot=spot,
            action="bet",
        )
    if amount and player is not None and rules.multi_spot_max_players:
        owners = {s: p for s, (_, p) in t.bets.items() if s != spot}
        players = {p for p in owners.values() if p is not None} | {player}
        if player in owners.values() and len(players) >= rules.multi_spot_max_players:
            raise IllegalAction(
                f"a player may play one spot only while fewer than {rules.multi_spot_max_players} "
                f"players are at the table ({rules.name} house rules)",
                rule="multi_spot",
                spot=spot,
                action="bet",
            )
    if t.phase == SETTLED:
        t._start_round()
    elif not t.round_open:
        t.round += 1
        t.round_open = True
    if amount:
        t.bets[spot] = (amount, player)
    else:
        t.bets.pop(spot, None)
    if t.narrate:
        t._record("bet", spot=spot, amount=format_money(amount), player=player)


def on_no_more_bets(t: Table, e: ev.NoMoreBets) -> None:
    if not t.bets:
        raise IllegalAction("no wager on the layout", rule="procedure", action="no_more_bets")
    why = halted(t) if t.alarms else None  # no alarm, nothing halts
    if why is not None:
        raise IllegalAction(f"play is halted ({why})", rule="halt", action="no_more_bets")
    if t.require_dealer and t.dealer_on_duty is None:
        raise IllegalAction(NO_DEALER, rule="dealer", action="no_more_bets")
    limit = t.rules.multi_spot_max_players
    if limit:
        owners = [p for _, p in t.bets.values() if p is not None]
        if len(set(owners)) >= limit:
            several = sorted({p for p in owners if owners.count(p) > 1})
            if several:
                raise IllegalAction(
                    f"{', '.join(several)} must play one spot: {len(set(owners))} players are at the table "
                    f"and several spots are allowed only while fewer than {limit} ({t.rules.name} house rules)",
                    rule="multi_spot", action="no_more_bets")
    t._check_phase(DEALING)  # the transition, before anything changes
    layout = list(t.bets.items())
    if len(layout) > 1:  # in spot order (a sort, even of one, is not free)
        layout.sort()
    order: list[Spot] = []
    spots: dict[int, Spot] = {}
    for n, (a, p) in layout:  # loops, not comprehensions: interpreted, a comprehension is a call
        spot = spots[n] = Spot(n, a, p)
        order.append(spot)
        t.handle_cents += a
    t.order = order
    t.spots = spots
    t.bets = {}
    # NY 4620.5(g): one card to each player clockwise from the dealer's left, one to the dealer,
    # then the second round; the dealer's second card is the hole card, or (no hole card game)
    # is dealt only at the dealer's turn.
    plan: list[Spot | None] = [*t.order, None, *t.order]
    if t.rules.hole_card != "none":
        plan.append(None)
    t.deal_plan = plan
    t.deal_pos = 0
    t.cards_before_round = t.cards_dealt
    if t.narrate:
        t._record(
            "no_more_bets", round=t.round,
            wagers={str(s.number): format_money(s.wager) for s in t.order},
            dealer_id=t.dealer_on_duty,  # the round's dealer of record (a relief now waits for its settlement)
        )
    t._set_phase(DEALING)
