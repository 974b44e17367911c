"""The simulated dealers' own acts at the table: signing in by badge, their pace, their procedure errors.

:class:`DealerDuty` is the part of :class:`controller.sim.crew.SimCrew` that knows who deals: the relief
schedule of :mod:`controller.sim.roster` says who is on duty for each round; the incoming dealer swipes
a badge at the console's badge reader (the way a real relief signs in), during the outgoing dealer's
last round (held by the table until it settles) or, if that swipe was not taken, between rounds; the
slow dealer's pauses are :data:`~controller.sim.roster.SLOW_PACE` times as long; and now and then
(the error-prone dealer far more often) the dealer presses a play button before the deal, a
procedure error the table flags (``irregularity:console``), and acknowledges it with the alarm button.
"""

from __future__ import annotations

import logging

from controller.contract.phases import Phase
from controller.game.view import TableView
from controller.service.table_service import TableService
from controller.sim.roster import ReliefSchedule
from drivers.events import Button
from simulators.hardware import SimTable

log = logging.getLogger("controller.sim.crew")

#: how long the dealer waits for the table to take a swipe or an acknowledgement before trying again later
TAKEN_WITHIN_S = 2.0


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

    @property
    def table(self) -> TableView:
        return self.service.table

    def dealing(self) -> str:
        """The dealer of the round being dealt (between rounds: of the next one)."""
        return self.schedule.dealer_for(round_number(self.table))

    def pace(self) -> float:
        """How many times as long as a normal dealer's the acts of the dealer dealing take."""
        return self.schedule.pace(self.dealing())

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
