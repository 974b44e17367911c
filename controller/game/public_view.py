"""The table as the public sees it: the ``state`` snapshot of DESIGN.md, what the table waits for, the totals.

Read-only: nothing here changes the table. The hole card is ``null`` until the dealer turns it; the
dealer's total counts the visible cards only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from controller.game.alarms import halted
from controller.game.awaiting import Awaiting
from controller.game.cards import VALUE
from controller.game.effects import DealingLocked, Effect, RequestPeek, RevealHole, StartShuffle
from controller.game.money import format_money, format_money_fixed
from controller.game.pit import iso
from controller.game.shoe import DEAL, INSUFFICIENT_CARDS, card_target
from controller.game.transitions import BETTING, CLOSED, INSURANCE, PLAYERS, SETTLED

if TYPE_CHECKING:
    from controller.game.table import Table


def totals(t: Table) -> dict[str, Any]:
    return {
        "rounds": t.rounds_settled,
        "handle": format_money_fixed(t.handle_cents),
        "house_net": format_money_fixed(t.house_net),
    }


def _spots(t: Table) -> dict[str, Any]:
    spots: dict[str, Any] = {}
    if t.order:
        for s in t.order:
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
        for n, (amount, player) in sorted(t.bets.items()):
            spots[str(n)] = {
                "hands": [{"cards": [], "total": 0, "soft": False, "wager": format_money(amount),
                           "status": "waiting", "outcome": None, "payout": None}],
                "insurance": None, "net": None, "player": player,
            }
    return spots


def snapshot(t: Table) -> dict[str, Any]:
    """The public ``state`` of DESIGN.md (without ``seq`` and ``table_id``, which the service adds)."""
    if t.hole_face_down:
        visible: list[str | None] = [t.dealer[0], None]
        total, soft = t.dealer_total()
    elif t.hole_revealed or len(t.dealer) < 2:
        visible = list(t.dealer)
        total, soft = t.dealer_total()
    else:
        visible = [t.dealer[0], None, *t.dealer[2:]]
        v = VALUE[t.dealer[0]]
        total, soft = (11, True) if v == 1 else (v, False)
    if not t.dealer:
        total, soft = 0, False
    due_in: float | None = None
    if t.deck_opened_at is not None and t.now is not None:
        due_in = t.deck_opened_at + t.rules.deck_change_hours * 3600.0 - t.now
    return {
        "round": t.round,
        "phase": t.phase,
        "halted": halted(t),
        "closing": t.close_asked,
        "spots": _spots(t),
        "active": None if t.active is None else {"spot": t.active[0], "hand": t.active[1]},
        "dealer": {
            "cards": visible,
            "total": total,
            "soft": soft,
            "blackjack": t.dealer_blackjack if (t.hole_revealed or t.dealer_blackjack is False) else None,
        },
        "insurance_open": t.insurance_open,
        "awaiting": awaiting_what(t),
        "shoe": {
            "decks": t.rules.decks,
            "cards_dealt": t.cards_dealt,
            "penetration": round(t.cards_dealt / t.rules.cards_in_shoe, 4),
            "cut_card_reached": t.cut_card_reached,
            "shuffle_due": t.shuffle_due,
            "shuffles": t.shuffles,
        },
        "deck_set": {
            "id": t.deck_set,
            "opened_at": iso(t.deck_opened_at),
            "change_due_in_s": None if due_in is None else int(due_in),
        },
        "limits": {"min_bet": format_money(t.min_bet), "max_bet": format_money(t.max_bet),
                   "next": None if t.next_limits is None else
                   {"min_bet": format_money(t.next_limits[0]), "max_bet": format_money(t.next_limits[1])}},
        "devices": dict(t.devices),
        "alarms": len(t.alarms),
        "totals": totals(t),
        "profile": t.rules.name,
        "burned": len(t.burned),
        # the dealer on duty (the table service adds ``since``); ``dealer`` above is the dealer's hand
        "dealer_on_duty": None if t.dealer_on_duty is None else {"id": t.dealer_on_duty},
    }


def awaiting_what(t: Table) -> str | None:
    """The snapshot's ``awaiting``: the input the table waits for next (``dealer``: a dealer to sign in, where the
    table requires one before betting opens)."""
    if t.awaiting_discards is not None:
        return "discard_shuffle"
    if t.awaiting_peek:
        return "peek"
    if t.awaiting_reveal:
        return "reveal"
    if card_target(t) is not None:
        return "card"
    if t.phase == INSURANCE:
        return "insurance_closed"
    if t.phase == PLAYERS:
        return "decision"
    if t.shuffle_due:
        return "shuffle"
    if t.phase in (BETTING, SETTLED):
        return "dealer" if t.require_dealer and t.dealer_on_duty is None else "bets"
    return None


def awaiting(t: Table) -> Awaiting:
    """What the table waits for next: the input, the card and how it is dealt, the device requests."""
    if t.phase == CLOSED:
        return Awaiting(None)
    target = card_target(t)
    requests: list[Effect] = []
    if t.awaiting_peek:
        requests.append(RequestPeek())
    if t.awaiting_reveal and t.hole_face_down:
        requests.append(RevealHole())
    if t.awaiting_discards is not None:
        requests.append(StartShuffle(t.awaiting_discards, INSUFFICIENT_CARDS))
    elif t.shuffle_due:  # asked at once (table opened, new decks) or at a settlement (cut card)
        requests.append(StartShuffle(t.rules.cards_in_shoe, t.shuffle_reason))
    requests.append(DealingLocked(t.shuffle_due and t.awaiting_discards is None))
    face_down = (
        target == DEAL
        and t.rules.hole_card != "none"
        and t.deal_plan[t.deal_pos] is None
        and len(t.dealer) == 1
    )
    return Awaiting(
        awaiting_what(t),
        card=target,
        card_required=card_target(t, True) is not None,
        face_down=face_down,
        active=t.active,
        requests=tuple(requests),
    )
