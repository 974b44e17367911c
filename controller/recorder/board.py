"""What the recorder publishes and when: each table's position and the active alarms (sans-I/O, ``now`` passed in).

After each commit the recorder calls :meth:`Board.changed` for the table; :meth:`Board.due` says which
tables' positions to publish now, at most one publish per table every ``interval`` seconds (a table whose
events arrive a hundred a second still gets one position every 0.2 s, and always its last one), and
whether the alarms list changed. :meth:`Board.reconnected` marks everything due again: a new connection
publishes every position and the alarms (a restarted broker may have lost its retained messages).

The alarms (``<prefix>/recorder/alarms``, retained: the list of active ones) are of two codes:

``recorder_gap``
    events beyond a gap are held; one alarm per missing range, set from the store's ``gaps()`` after each
    event of the table, cleared when the range fills.
``recorder_conflict``
    a table published a second, different body at a ``seq`` the recorder holds (or a second chain head
    at a state's ``seq``, or another rating under a ``rating_id`` it holds: ``seq`` is then the one the id
    names): the first is kept, never overwritten. It stays until the recorder restarts, or the
    table starts a new journal on purpose (its old record is then kept apart): the record itself is intact, and
    the log line names both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["DEFAULT_INTERVAL", "Alarm", "Board"]

#: at most one position per table this often (seconds)
DEFAULT_INTERVAL: Final = 0.2

AlarmCode = Literal["recorder_gap", "recorder_conflict"]


@dataclass(frozen=True, slots=True)
class Alarm:
    """One active alarm, as published: ``{"table_id", "code", "from_seq", "to_seq", "message", "ts"}``."""

    table_id: str
    code: AlarmCode
    from_seq: int
    to_seq: int
    message: str
    ts: float

    def as_dict(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "code": self.code, "from_seq": self.from_seq, "to_seq": self.to_seq,
                "message": self.message, "ts": self.ts}


def _gap_message(table_id: str, first: int, last: int) -> str:
    missing = "seq {first}" if first == last else "seqs {first} to {last}"
    return f"{table_id}: {missing.format(first=first, last=last)} missing; later events held until they come"


class Board:
    """The positions due and the alarms; the recorder's publish loop reads it, the writer changes it."""

    def __init__(self, *, interval: float = DEFAULT_INTERVAL) -> None:
        self._interval = interval
        self._dirty: set[str] = set()
        self._last: dict[str, float] = {}
        self._gaps: dict[str, dict[tuple[int, int], Alarm]] = {}
        self._conflicts: dict[tuple[str, int, str], Alarm] = {}
        self._alarms_dirty = False

    # -- the writer's side ---------------------------------------------------------------------------

    def changed(self, table_id: str) -> None:
        """The table's record changed (a commit): its position is due once its interval has passed."""
        self._dirty.add(table_id)

    def set_gaps(self, table_id: str, gaps: Sequence[tuple[int, int]], now: float) -> bool:
        """The table's missing ranges now (the store's ``gaps()``); True when the alarms changed."""
        before = self._gaps.get(table_id, {})
        after = {g: before.get(g) or Alarm(table_id, "recorder_gap", g[0], g[1], _gap_message(table_id, *g), now)
                 for g in gaps}
        if after.keys() == before.keys():
            return False
        if after:
            self._gaps[table_id] = after
        else:
            self._gaps.pop(table_id, None)
        self._alarms_dirty = True
        return True

    def has_gaps(self, table_id: str) -> bool:
        return table_id in self._gaps

    def conflict(self, table_id: str, seq: int, what: str, now: float) -> bool:
        """A second body (``what``: "event", "state head" or "rating <id>") at ``seq``; True when the alarm is
        new."""
        if (table_id, seq, what) in self._conflicts:
            return False
        message = f"{table_id}: a second, different {what} at seq {seq}; the first is kept"
        self._conflicts[(table_id, seq, what)] = Alarm(table_id, "recorder_conflict", seq, seq, message, now)
        self._alarms_dirty = True
        return True

    def forget_conflicts(self, table_id: str) -> None:
        """The table started a new record (a new journal on purpose): its old record's conflicts are not its."""
        before = len(self._conflicts)
        self._conflicts = {k: a for k, a in self._conflicts.items() if k[0] != table_id}
        self._alarms_dirty = self._alarms_dirty or len(self._conflicts) != before

    def alarms_changed(self) -> None:
        """The alarms are due again (a publish that could not be made)."""
        self._alarms_dirty = True

    def reconnected(self, tables: Iterable[str]) -> None:
        """A new connection (or a stop): ``tables`` and every position waiting, and the alarms, are due now."""
        self._dirty.update(tables)
        self._last.clear()
        self._alarms_dirty = True

    # -- the publisher's side ------------------------------------------------------------------------

    def alarms(self) -> list[Alarm]:
        """The active alarms, by table then ``from_seq``."""
        every = [a for gaps in self._gaps.values() for a in gaps.values()] + list(self._conflicts.values())
        return sorted(every, key=lambda a: (a.table_id, a.from_seq, a.code))

    def due(self, now: float) -> tuple[list[str], bool]:
        """The tables whose position to publish now (taken off the board) and whether the alarms are due."""
        ready = now + 1e-9  # a wake-up at exactly the interval counts, whatever the float rounding
        tables = sorted(t for t in self._dirty if ready - self._last.get(t, -1e18) >= self._interval)
        for t in tables:
            self._dirty.discard(t)
            self._last[t] = now
        alarms, self._alarms_dirty = self._alarms_dirty, False
        return tables, alarms

    def wait(self, now: float) -> float | None:
        """Seconds until something is due (0: now), or None when nothing waits."""
        if self._alarms_dirty:
            return 0.0
        if not self._dirty:
            return None
        return max(0.0, min(self._last.get(t, -1e18) + self._interval for t in self._dirty) - now)

    def pending(self) -> bool:
        return bool(self._dirty) or self._alarms_dirty
