"""Program authentication of a running table (DESIGN.md; :mod:`controller.selfcheck`): the results taken in.

Every check's result (the start's, the periodic re-checks, a supervisor's ``selfcheck`` request) sets the
``state``'s ``software``; a mismatch halts the table with an integrity alarm naming the file, one while it is
active, which surveillance clears with a reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.game import events as ev
from controller.game.errors import GameError
from controller.selfcheck.program import ProgramCheck
from controller.selfcheck.watch import ALARM_CODE as PROGRAM_ALARM
from controller.selfcheck.watch import ALARM_SOURCE as PROGRAM_SOURCE
from controller.selfcheck.watch import ProgramWatch
from controller.selfcheck.watch import alarm_detail as program_alarm_detail
from controller.service.commands import SelfCheckCmd, accepted
from controller.service.core import TableCore

log = logging.getLogger("controller.table")


class ProgramChecks:
    """Takes the program checks' results for one table; ``watch()`` is the process's watch (None: no check)."""

    def __init__(self, core: TableCore, apply: Callable[[ev.Event], object],
                 watch: Callable[[], ProgramWatch | None]) -> None:
        self.core = core
        self._apply = apply
        self.watch = watch

    def checked(self, result: ProgramCheck) -> None:
        """Take a program check's result: ``state``'s ``software``, and on a mismatch halt the table with an
        integrity alarm naming the file (one while it is active; surveillance clears it, with a reason)."""
        core = self.core
        core.software = result.software()
        if result.unverified is not None and not result.problems():
            log.warning("program unverified", extra={"table": core.table_id, "reason": result.unverified})
        if not result.problems():
            return
        detail = program_alarm_detail(result)
        log.critical("program authentication failed", extra={"table": core.table_id, "problems": result.problems()})
        if any(alarm.code == PROGRAM_ALARM for alarm in core.table.alarms.values()):
            return
        try:
            self._apply(ev.Irregularity(PROGRAM_SOURCE, detail, halts=True))
        except GameError as err:  # the engine takes an irregularity in every phase: a bug, not the program's
            log.error("the program integrity alarm was refused", extra={"table": core.table_id, "reason": str(err)})

    async def run(self, watch: ProgramWatch) -> None:
        """The periodic re-checks, each result taken in and the table's ``state`` published again."""
        while True:
            await asyncio.sleep(watch.every_s)
            self.checked(await watch.recheck())
            self.core.publish_all()

    async def command(self, watch: ProgramWatch, command: CommandTopic, parsed: SelfCheckCmd) -> CommandResult:
        """A supervisor's request: check now, journal who asked and what was found, answer with it."""
        result = await watch.recheck()
        found = "mismatch" if result.problems() else "unverified" if result.unverified else "match"
        seq = self.core.note({"type": "program_checked", "role": command.role, "operator": parsed.operator,
                              "result": found, "build": result.build, "problems": result.problems()[:20]})
        self.checked(result)
        log.info("command applied", extra={"table": self.core.table_id, "verb": command.verb, "role": command.role,
                                           "operator": parsed.operator, "result": found})
        return accepted(parsed, seq=seq, program=found, version=result.version, build=result.build,
                        problems=result.problems()[:20])
