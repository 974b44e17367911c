"""The simulated dealers' own acts at the table: signing in by badge, their pace, their procedure errors.

:class:`DealerDuty` is the part of :class:`controller.sim.crew.SimCrew` that knows who deals: the relief
schedule of :mod:`controller.sim.roster` says who is on duty for each round; the incoming dealer swipes
a badge at the console's badge reader (the way a real relief signs in), during the outgoing dealer's
last round (held by the table until it settles) or, if that swipe was not taken, between rounds; every
:data:`PIT_EVERY`-th relief the pit assigns the dealer instead (``set_dealer`` as the pit user
:data:`PIT_USER`, the way a supervisor covers a badge left in a locker); the slow dealer's pauses are
:data:`~controller.sim.roster.SLOW_PACE` times as long; and now and then (the error-prone dealer far
more often) the dealer presses a play button before the deal, a
procedure error the table flags (``irregularity:console``), and acknowledges it with the alarm button.
A dealer someone else assigns while the crew works (a supervisor's ``set_dealer``) stays at the table until the
schedule's next relief: the crew does not swipe over the pit. (The dealer a resumed demo finds on duty counts as
the crew's own, so a kill and a resume rotate the same dealers at the same rounds.)
"""

from __future__ import annotations

import json
import logging

from controller.contract.phases import ROUND_PHASES, Phase
from controller.contract.topics import CommandTopic
from controller.game.view import TableView
from controller.service.table_service import TableService
from controller.sim.roster import ReliefSchedule
from drivers.events import Button
from simulators.hardware import SimTable

log = logging.getLogger("controller.sim.crew")

#: how long the dealer waits for the table to take a swipe or an acknowledgement before trying again later
TAKEN_WITHIN_S = 2.0
#: every this many-th relief is the pit's ``set_dealer`` instead of a badge
PIT_EVERY = 5
#: the pit user who assigns dealers in the demo
PIT_USER = "pit.demo"


def round_number(table: TableView) -> int:
    """The round being dealt, or between rounds the next one."""
    return table.round if table.round_open else table.round + 1


class DealerDuty:
    """One simulated table's dealers at work (see the module docstring)."""

    def __init__(self, service: TableService, sim: SimTable, schedule: ReliefSchedule) -> None:
        self.service = service
        self.sim = sim
        self.schedule = schedule
        self._slipped = 0  # the last round a procedure error was made in
        self._held: tuple[int, str | None] | None = None  # (round, dealer) signed in during that round
        self._refused = False  # the table refused a sign-in: the crew stops rotating (said once in the log)
        self._signed: str | None = None  # the dealer this crew last signed in (at first: the one found on duty)
        self._looked = False  # whether the crew has looked at who is on duty yet
        self._kept: tuple[str, int] | None = None  # a dealer it did not sign in, and the shift they are left for

    @property
    def table(self) -> TableView:
        return self.service.table

    def dealing(self) -> str:
        """The dealer of the round being dealt (between rounds: of the next one)."""
        return self.schedule.dealer_for(round_number(self.table))

    def pace(self) -> float:
        """How many times as long as a normal dealer's the acts of the dealer dealing take."""
        return self.schedule.pace(self.dealing())

    def relief_due(self) -> tuple[str, int] | None:
        """The dealer who signs in now and the round from which they deal, or None: between rounds the next
        round's dealer if another is on duty; during a round the next round's dealer if another is coming
        (signed in now, held until it settles); None while a dealer someone else assigned works out the shift."""
        table = self.table
        if self._refused or table.phase == Phase.CLOSED or not self.sim.console.plugged:
            return None
        if table.phase in ROUND_PHASES:  # the engine holds a sign-in made now until the round settles
            coming = self._held[1] if self._held is not None and self._held[0] == table.round else table.dealer_on_duty
            round_no = table.round + 1
        else:
            coming = table.dealer_on_duty
            round_no = round_number(table)
        if not self._looked:
            self._looked, self._signed = True, coming
        wanted = self.schedule.dealer_for(round_no)
        if wanted == coming:
            return None
        shift = self.schedule.shift(round_no)
        if coming is not None and coming != self._signed:  # someone else's: left at the table for this shift
            if self._kept is None or self._kept[0] != coming:
                self._kept = (coming, shift)
            if self._kept[1] == shift:
                return None
        return wanted, round_no

    async def relieve(self) -> bool:
        """Sign the scheduled dealer in if one is due (:meth:`relief_due`); whether a sign-in was made."""
        due = self.relief_due()
        if due is None:
            return False
        dealer, round_no = due
        mark = self.service.applied
        if self.schedule.shift(round_no) % PIT_EVERY == PIT_EVERY - 1:
            result = await self.service.on_command(CommandTopic("pit", PIT_USER, "set_dealer"),
                                                   json.dumps({"dealer": dealer}).encode())
            if not result.ok:
                self._stop(f"the pit's set_dealer {dealer} was refused: {result.to_json()}")
                return True
            self._signed = dealer
            if self.table.phase in ROUND_PHASES:
                self._held = (self.table.round, dealer)
            return True
        self.sim.console.swipe(dealer)
        try:
            number, etype = await self.service.wait_input(mark, {"dealer_assigned", "irregularity"},
                                                          timeout=TAKEN_WITHIN_S)
        except TimeoutError:
            return True  # lost on the way (the console's cable): the dealer swipes again at the next look
        if etype != "dealer_assigned" and self.service.refused_input(number) == "dealer_assigned":
            self._stop(f"the badge of {dealer} was refused: {self.service.last_refusal}")
        elif etype == "dealer_assigned":
            self._signed = dealer
            if self.table.phase in ROUND_PHASES:
                self._held = (self.table.round, dealer)
        return True

    def _stop(self, why: str) -> None:
        self._refused = True
        log.warning("%s: %s; the simulated dealers stop rotating", self.service.table_id, why)

    async def slip_before_no_more_bets(self) -> None:
        """If the schedule says the dealer errs in this round: a stand pressed before the deal (the table flags
        it), then the alarm button. Once a round."""
        round_no = round_number(self.table)
        if round_no == self._slipped or not self.schedule.slips(round_no):
            return
        self._slipped = round_no
        mark = self.service.applied
        self.sim.console.tap(Button.STAND_NEXT)
        try:
            number, _ = await self.service.wait_input(mark, {"irregularity"}, timeout=TAKEN_WITHIN_S)
        except TimeoutError:
            return  # the press was lost (the console's cable out): no error made
        if self.table.phase not in (Phase.BETTING, Phase.SETTLED):
            return
        self.sim.console.tap(Button.ALARM_ACK)
        try:
            await self.service.wait_input(number, {"alarm_ack"}, timeout=TAKEN_WITHIN_S)
        except TimeoutError:
            log.info("%s: the dealer's acknowledgement of a slip was not taken", self.service.table_id)
