"""The table's time: elapsed monotonic time carried on from the journal, the wall clock watched, never followed.

The engine has no clock (DESIGN, "Layers"): the service passes ``now`` in, and that ``now`` is also the ``ts``
of every journaled row. A wall clock can be set back or jumped forward (by hand, a bad NTP source, an insider
with a shell): followed blindly, journal times would go back and the deck set's age with them, pushing a deck
change hours out. So the table's time is the wall clock's at the start, plus the monotonic time elapsed since:

* it never goes back, and durations (deck-set age, the deck change due time, time in phase) are monotonic;
* :meth:`TableClock.check` compares it with the wall clock; a wall clock that went back (more than
  :data:`BACK_TOLERANCE_S`) or jumped forward past ``jump_s`` (setting ``clock_jump_s``) is a :class:`ClockJump`,
  which the service journals as the ``clock_jump`` alarm (:data:`controller.contract.alarms.CLOCK_ALARM`) together with
  the new offset between the two clocks;
* across a restart the journal carries it on (:meth:`TableClock.resume`): the last journaled ``ts`` and the last
  journaled offset. A restart counts the time it was down by the wall clock (the only one that ran), corrected by
  that offset; a wall clock behind the journal's last time is a jump back (alarmed), and the table's time goes on
  from the journal's. A forward jump while the table was down cannot be told from downtime: only a running table
  alarms one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

#: a wall clock behind the table's time by more than this has gone back (NTP slews the monotonic clock and the
#: wall clock alike, so they do not drift apart: only a step moves them apart)
BACK_TOLERANCE_S = 1.0
#: the default bound of a forward jump (setting ``clock_jump_s``)
JUMP_S = 60.0


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class ClockJump:
    """The wall clock moved against the table's time: by ``moved_s`` (negative: back) at table time ``at``."""

    moved_s: float
    at: float
    wall: float
    #: the table's time minus the wall clock's from now on (journaled with the alarm: a restart reads it back)
    offset: float
    at_start: bool = False

    def message(self) -> str:
        way = "back" if self.moved_s < 0 else "forward"
        when = "while the table was down" if self.at_start else "while the table ran"
        return (f"the wall clock went {way} {abs(self.moved_s):.0f} s {when} (wall clock {_iso(self.wall)}, "
                f"table time {_iso(self.at)}): journal times and the deck change keep the monotonic count; "
                "check the PC's time source")


class TableClock:
    """The table's time (see the module docstring); call it for ``now``. ``wall`` and ``mono`` are the seams."""

    def __init__(self, *, wall: Callable[[], float] = time.time, mono: Callable[[], float] = time.monotonic,
                 jump_s: float = JUMP_S) -> None:
        if jump_s <= 0:
            raise ValueError(f"clock_jump_s must be more than 0, not {jump_s}")
        self.wall = wall
        self.mono = mono
        self.jump_s = jump_s
        self._base = wall()
        self._mono0 = mono()
        #: the table's time minus the wall clock's, as last accepted (at the start, or at the last jump)
        self.offset = 0.0

    def __call__(self) -> float:
        return self._base + (self.mono() - self._mono0)

    def resume(self, last_ts: float | None, offset: float | None) -> ClockJump | None:
        """Carry the table's time on from the journal: its last ``ts`` and the last offset journaled with a
        clock alarm. A wall clock that puts the table before ``last_ts`` is a jump back (returned), and the
        table's time resumes at ``last_ts``."""
        wall, self._mono0 = self.wall(), self.mono()
        self.offset = offset or 0.0
        self._base = wall + self.offset
        if last_ts is None or self._base >= last_ts - BACK_TOLERANCE_S:
            self._base = max(self._base, last_ts or self._base)
            return None
        moved = self._base - last_ts
        self._base = last_ts
        self.offset = last_ts - wall
        return ClockJump(moved, last_ts, wall, self.offset, at_start=True)

    def check(self) -> ClockJump | None:
        """Whether the wall clock moved against the table's time since the offset was last accepted (then the
        new offset is accepted, so one step is one jump)."""
        wall = self.wall()
        now = self()
        offset = now - wall
        moved = self.offset - offset  # positive: the wall clock gained on the table's time
        if moved < -BACK_TOLERANCE_S or moved > self.jump_s:
            self.offset = offset
            return ClockJump(moved, now, wall, offset)
        return None
