"""The round's transitions, as data: for each phase and event type, where the table may go (docs/state-diagram.md
is drawn from :data:`TRANSITIONS` by :mod:`controller.game.diagram`).

:meth:`Table.handle <controller.game.table.Table.handle>` refuses up front every event its phase does not list,
and checks every phase a handler sets against the event's entry here before the phase changes.

A round, in the order of the rule texts::

    betting --no more bets--> dealing --(ace up, insurance offered)--> insurance
    dealing/insurance --(peek when the up card calls for it)--> players --> dealer --> settled
    settled --(cut card reached / decks changed)--> shuffling --shuffle done--> betting

The phases are :class:`controller.contract.phases.Phase`'s; the names below are their values as literal constants
(the compiled engine compares with a literal, not an attribute of the enum class, on every event), checked against
the contract's list when this module is imported.
"""

from __future__ import annotations

from typing import Final

from controller.contract.phases import PHASES

__all__ = ["BETTING", "CLOSED", "DEALER", "DEALING", "INSURANCE", "NEXT", "PHASES", "PHASE_EVENTS", "PLAYERS",
           "SETTLED", "SHUFFLING", "TRANSITIONS"]

# Literals (compiled, a comparison with a literal is the cheapest there is), the contract's values: checked below.
CLOSED: Final = "closed"
BETTING: Final = "betting"
DEALING: Final = "dealing"
INSURANCE: Final = "insurance"
PLAYERS: Final = "players"
DEALER: Final = "dealer"
SETTLED: Final = "settled"
SHUFFLING: Final = "shuffling"
if (CLOSED, BETTING, DEALING, INSURANCE, PLAYERS, DEALER, SETTLED, SHUFFLING) != PHASES:  # pragma: no cover
    raise ImportError("controller.game.transitions names phases controller.contract.phases does not list")


def _to(*phases: str) -> frozenset[str]:
    return frozenset(phases)


#: Where each event may lead, phase by phase: (phase, event type) -> the phases the table may be in once
#: handle() has taken it, the phase itself where the event may leave it there. handle() refuses up front
#: every event its phase does not list, and raises TransitionNotListed if a handler ever moves the table
#: where the pair does not lead. One event may pass through several phases inside handle() (a last stand
#: plays the dealer's hand and settles the round): the entry lists each phase it passes through and where it
#: ends. A card or a face-down card out of the shoe is taken in every phase: dealt, burnt, or dead
#: (NY 4620.5(i)(4)) where nothing called for it.
TRANSITIONS: Final[dict[tuple[str, str], frozenset[str]]] = {
    (CLOSED, "table_opened"): _to(BETTING, SHUFFLING),  # shuffling when a shuffle is due
    (CLOSED, "table_closed"): _to(CLOSED),
    (CLOSED, "card"): _to(CLOSED),
    (CLOSED, "hole_card_dealt"): _to(CLOSED),
    (CLOSED, "decks_changed"): _to(CLOSED),  # the shuffle is due when the table opens
    (CLOSED, "shuffle_started"): _to(CLOSED),  # a closed table shuffles and stays closed: only an open opens it
    (CLOSED, "shuffle_done"): _to(CLOSED),
    (CLOSED, "rules_changed"): _to(CLOSED),
    (BETTING, "bet"): _to(BETTING),
    (BETTING, "no_more_bets"): _to(DEALING),
    (BETTING, "card"): _to(BETTING),  # the burn, or a dead card
    (BETTING, "hole_card_dealt"): _to(BETTING),
    (BETTING, "table_closed"): _to(CLOSED),  # the wagers on the layout are given back
    (BETTING, "decks_changed"): _to(SHUFFLING),
    (BETTING, "shuffle_started"): _to(SHUFFLING),  # the cut card came out between rounds
    (BETTING, "shuffle_done"): _to(BETTING),
    (BETTING, "rules_changed"): _to(BETTING),
    (DEALING, "card"): _to(DEALING, INSURANCE, PLAYERS, DEALER, SETTLED),  # the deal's last card
    (DEALING, "hole_card_dealt"): _to(DEALING, INSURANCE, PLAYERS, DEALER),
    (DEALING, "peek"): _to(PLAYERS, DEALER, SETTLED),
    (DEALING, "shoe_empty"): _to(DEALING),  # NJ 19:47-2.15(f): the discards are shuffled
    (DEALING, "shuffle_done"): _to(DEALING),  # the discards, shuffled: the round goes on
    (DEALING, "table_closed"): _to(DEALING),  # asked during a round: it closes when the round settles
    (INSURANCE, "decision"): _to(INSURANCE),  # insurance, even money or none
    (INSURANCE, "insurance_closed"): _to(DEALING, PLAYERS, DEALER, SETTLED),  # dealing: the peek
    (INSURANCE, "card"): _to(INSURANCE),
    (INSURANCE, "hole_card_dealt"): _to(INSURANCE),
    (INSURANCE, "shoe_empty"): _to(INSURANCE),
    (INSURANCE, "shuffle_done"): _to(INSURANCE),
    (INSURANCE, "table_closed"): _to(INSURANCE),  # a close asked for when the round settles
    (PLAYERS, "decision"): _to(PLAYERS, DEALER, SETTLED),
    (PLAYERS, "card"): _to(PLAYERS, DEALER, SETTLED),
    (PLAYERS, "hole_card_dealt"): _to(PLAYERS),
    (PLAYERS, "shoe_empty"): _to(PLAYERS),
    (PLAYERS, "shuffle_done"): _to(PLAYERS),
    (PLAYERS, "table_closed"): _to(PLAYERS),  # a close asked for when the round settles
    (DEALER, "dealer_reveal"): _to(DEALER, SETTLED),
    (DEALER, "card"): _to(DEALER, SETTLED),
    (DEALER, "hole_card_dealt"): _to(DEALER),
    (DEALER, "shoe_empty"): _to(DEALER),
    (DEALER, "shuffle_done"): _to(DEALER),
    (DEALER, "table_closed"): _to(DEALER),  # a close asked for when the round settles
    (SETTLED, "bet"): _to(BETTING),  # the next round's first wager
    (SETTLED, "card"): _to(SETTLED),
    (SETTLED, "hole_card_dealt"): _to(SETTLED),
    (SETTLED, "table_closed"): _to(CLOSED),
    (SETTLED, "decks_changed"): _to(SHUFFLING),
    (SETTLED, "shuffle_started"): _to(SHUFFLING),
    (SETTLED, "shuffle_done"): _to(SETTLED),
    (SETTLED, "rules_changed"): _to(SETTLED),
    (SHUFFLING, "shuffle_started"): _to(SHUFFLING),  # the shuffler reports the start the engine asked for
    (SHUFFLING, "shuffle_done"): _to(BETTING),
    (SHUFFLING, "card"): _to(SHUFFLING),
    (SHUFFLING, "hole_card_dealt"): _to(SHUFFLING),
    (SHUFFLING, "table_closed"): _to(CLOSED),
    (SHUFFLING, "decks_changed"): _to(SHUFFLING),
    (SHUFFLING, "rules_changed"): _to(SHUFFLING),
} | {
    # taken in every phase, and never moving it: the clock, the devices, alarms, the cut card, the limits, the
    # dealer on duty (a change during a round is held until it settles) and the table's need of one
    (phase, etype): _to(phase)
    for phase in PHASES
    for etype in ("tick", "device_fault", "device_restored", "irregularity", "alarm_ack", "cut_card", "set_limits",
                  "dealer_assigned", "dealer_required")
}

#: TRANSITIONS by phase, then event type (handle() looks up one phase's dict, then the event: no key tuple built).
NEXT: Final[dict[str, dict[str, frozenset[str]]]] = {
    phase: {etype: to for (at, etype), to in TRANSITIONS.items() if at == phase} for phase in PHASES
}

#: Which events each phase accepts: those its transitions list. Any other is refused.
PHASE_EVENTS: Final[dict[str, frozenset[str]]] = {phase: frozenset(nxt) for phase, nxt in NEXT.items()}
