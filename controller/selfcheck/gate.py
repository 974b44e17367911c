"""The program check before ``tablectl run`` or ``tablectl demo`` opens a device (DESIGN.md, "Program
authentication"): a mismatch stops the command (exit 2, one line naming the file); a development checkout (an
editable install, a source tree) cannot be verified, so it runs (``make demo`` works): the table logs a warning
saying so at its start, and its ``state`` says ``"verified": false`` with no build digest (the floor page marks
it). The warning is the table's log's, not a line of the command's stderr, which stays one line when a command
is refused.

The result is kept (:data:`started`) for the table's ``state`` (``software``) and its re-checks
(:mod:`controller.selfcheck.watch`), so the program is hashed once at start.
"""

from __future__ import annotations

from controller.errors import UsageError
from controller.selfcheck.program import ProgramCheck, check
from controller.selfcheck.watch import DEFAULT_EVERY_S, ProgramWatch, alarm_detail

#: the check made at this process's start (None: the command made none, e.g. a test building a table itself)
started: ProgramCheck | None = None


def check_at_start() -> ProgramCheck:
    """Check the program; :class:`UsageError` (one line naming the first file) on a mismatch."""
    global started
    result = check(dependencies_if_unverified=False)
    if result.problems():
        raise UsageError(alarm_detail(result))
    started = result
    return result


def program_watch(every_s: float = DEFAULT_EVERY_S) -> ProgramWatch | None:
    """The running table's re-checks, from the start's check (None when this process made none)."""
    if started is None:
        return None
    return ProgramWatch(started, every_s=every_s, checker=lambda: check(dependencies_if_unverified=False))
