"""The program check before ``tablectl run`` or ``tablectl demo`` opens a device (DESIGN.md, "Program
authentication"): a mismatch stops the command (exit 2, one line naming the file); a development checkout (an
editable install, a source tree) cannot be verified, so it runs with a warning saying so (``make demo`` works).

The result is kept (:data:`started`) for the table's ``state`` (``software``) and its re-checks
(:mod:`controller.selfcheck.watch`), so the program is hashed once at start.
"""

from __future__ import annotations

import sys

from controller.cli import UsageError
from controller.selfcheck.program import ProgramCheck, check

#: the check made at this process's start (None: the command made none, e.g. a test building a table itself)
started: ProgramCheck | None = None


def check_at_start(command: str) -> ProgramCheck:
    """Check the program; :class:`UsageError` (one line naming the first file) on a mismatch."""
    global started
    result = check()
    problems = result.problems()
    if problems:
        more = f" (and {len(problems) - 1} more: tablectl selfcheck names each)" if len(problems) > 1 else ""
        raise UsageError(f"program authentication failed: {problems[0]}{more}")
    if result.unverified is not None:
        print(f"tablectl {command}: warning: program unverified: {result.unverified}", file=sys.stderr)
    started = result
    return result
