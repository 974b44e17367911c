"""A running table's program re-checks (DESIGN.md, "Program authentication"): on a period (setting
``selfcheck_every_s``) and on a supervisor's ``selfcheck`` command; the table service halts the table with an
integrity alarm when one fails (:meth:`controller.service.table_service.TableService.program_checked`).

The check hashes every program file and its dependencies' (about a second), so it runs on a worker thread: the
table goes on dealing while it runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from controller.contract.alarms import irregularity
from controller.selfcheck.program import ProgramCheck, check

#: the period of the running table's re-checks unless its settings say otherwise (``selfcheck_every_s``)
DEFAULT_EVERY_S = 3600.0
#: the alarm's source (its code is ``irregularity:program``: an integrity alarm, surveillance clears it)
ALARM_SOURCE = "program"
ALARM_CODE = irregularity(ALARM_SOURCE)


class ProgramWatch:
    """The last result (from the start's check) and the re-checks."""

    def __init__(self, first: ProgramCheck, *, every_s: float = 0.0,
                 checker: Callable[[], ProgramCheck] = check) -> None:
        self.last = first
        self.every_s = every_s  # 0: no periodic re-check
        self._checker = checker
        self._lock = asyncio.Lock()

    async def recheck(self) -> ProgramCheck:
        """Check again (one at a time: a request during a periodic check waits for it, then checks anew)."""
        async with self._lock:
            self.last = await asyncio.to_thread(self._checker)
            return self.last


def alarm_detail(result: ProgramCheck) -> str:
    """The integrity alarm's text: the first file named, how many more."""
    problems = result.problems()
    more = f" (and {len(problems) - 1} more: tablectl selfcheck names each)" if len(problems) > 1 else ""
    return f"program authentication failed: {problems[0]}{more}" if problems else "program authentication failed"
