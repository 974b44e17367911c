"""The phases of a round (DESIGN.md, the ``state`` snapshot's ``phase``): defined here once.

The engine (:mod:`controller.game.table`) moves between them along its transition table
(:mod:`controller.game.transitions`, which binds them as literal constants and checks them against
:data:`PHASES`); the state model, the devices' input rules and the dashboard (through the generated JSON)
read them from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class Phase(StrEnum):
    """Where a table is in its round. A ``str``: it is the snapshot's and the journal's text as it is."""

    CLOSED = "closed"
    BETTING = "betting"
    DEALING = "dealing"
    INSURANCE = "insurance"
    PLAYERS = "players"
    DEALER = "dealer"
    SETTLED = "settled"
    SHUFFLING = "shuffling"


#: Every phase, in the order of a round (closed first): the state diagram's order.
PHASES: Final = tuple(p.value for p in Phase)
#: The phases of a round under way: cards are being dealt or played (a wager placed now is late).
ROUND_PHASES: Final = frozenset({Phase.DEALING.value, Phase.INSURANCE.value, Phase.PLAYERS.value,
                                 Phase.DEALER.value})
#: The phases between rounds: the layout takes wagers (or will, once the shuffle is done).
BETWEEN_ROUNDS: Final = frozenset({Phase.BETTING.value, Phase.SETTLED.value, Phase.SHUFFLING.value})
