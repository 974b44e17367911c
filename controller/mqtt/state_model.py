"""A pydantic model of the ``state`` snapshot (DESIGN.md, a contract): for dashboards, labs and tests.

Extra fields are allowed (DESIGN: "add fields freely, rename none"); the named ones are
checked for presence and type, so a renamed or missing field fails validation.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from controller.contract.dealers import DEALER_PATTERN
from controller.contract.phases import Phase

MoneyText = str
Card = str


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class HandState(_Open):
    cards: list[Card]
    total: int
    soft: bool
    wager: MoneyText
    status: str
    outcome: str | None
    payout: MoneyText | None


class InsuranceState(_Open):
    wager: MoneyText
    payout: MoneyText | None


class SpotState(_Open):
    hands: list[HandState]
    insurance: InsuranceState | None


class Active(_Open):
    spot: int
    hand: int


class DealerState(_Open):
    cards: list[Card | None]
    total: int
    blackjack: bool | None


class ShoeState(_Open):
    decks: int
    cards_dealt: int
    penetration: float = Field(ge=0.0, le=1.0)
    cut_card_reached: bool


class DeckSetState(_Open):
    id: str
    opened_at: str | None
    change_due_in_s: int | None


class Limits(_Open):
    min_bet: MoneyText
    max_bet: MoneyText


class Totals(_Open):
    rounds: int
    handle: MoneyText
    house_net: MoneyText


class Software(_Open):
    """The program the table runs (DESIGN "Program authentication"; docs/selfcheck.md)."""

    version: str
    build: str | None  # the build digest; None: unverified, or the program does not match its RECORD
    verified: bool = False


class DealerOnDuty(_Open):
    """The dealer on duty (DESIGN "The dealer on duty"): ``state.dealer`` stays the dealer's hand."""

    id: str = Field(pattern=DEALER_PATTERN)
    #: since when (epoch seconds, the table's clock, like ``phase_since``; None: not known)
    since: float | None


class StateSnapshot(_Open):
    seq: int = Field(ge=0)
    table_id: str
    round: int
    phase: Phase
    halted: str | None
    spots: dict[str, SpotState]
    active: Active | None
    dealer: DealerState
    shoe: ShoeState
    deck_set: DeckSetState
    limits: Limits
    devices: dict[str, str]
    alarms: int
    totals: Totals
    #: when this snapshot was made (epoch seconds, the table PC's clock)
    ts: float
    #: when the table entered its current ``phase`` (epoch seconds, same clock; ``ts - phase_since``
    #: is the time in phase, whatever the reader's clock says)
    phase_since: float
    #: the id of the journal the table keeps: the retained state witnesses it at the next start (docs/journal.md)
    journal_id: str | None = None
    #: the chain hash (hex) of the journal's record at ``seq`` (None: none there yet): what the central recorder keeps
    #: to witness the journal at the next start; an HMAC under the journal's key, it reveals nothing (docs/journal.md)
    head: str | None = None
    #: the pit the table stands in (its setting ``pit``; None: none set): the floor groups tables by it
    pit: str | None = None
    #: the program it runs (``tablectl run`` and ``demo``; None: a table built without the start's check)
    software: Software | None = None
    #: the dealer on duty (None: none signed in)
    dealer_on_duty: DealerOnDuty | None
