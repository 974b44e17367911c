"""The dealers of a simulated table: its roster, who is on duty for each round, their pace and their slips.

Each demo table has a crew file, ``<state-dir>/crew/<table>.toml`` (written with the defaults of
:func:`default_roster` when the demo finds none, read at every start: edit it and resume)::

    [crew]
    dealers = ["a.ames", "b.baker", "c.chen", "d.diaz"]  # badge ids, in the order they relieve each other
    relief_minutes = 20          # simulated minutes on duty before the next dealer relieves
    slow = "b.baker"             # this dealer takes longer over every act (SLOW_PACE times as long)
    error_prone = "c.chen"       # this dealer makes procedure errors more often (ERROR_PRONE_RATE a round)

The schedule runs on a **simulated clock**, not the machine's: every round takes a seeded 14 to 20
simulated seconds (the demo's realtime pace), the slow dealer's :data:`SLOW_PACE` times as long, and once
the dealer on duty has dealt ``relief_minutes`` of it, the next one of the roster takes over (after the
first, in turn, round and round). Like every choice of the demo's people it is a function of the seed,
the table and the round alone (:meth:`ReliefSchedule.dealer_for`), so a demo at any speed, killed and
resumed or not, rotates its dealers at the same rounds.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.errors import UsageError
from drivers.badge import check_badge

#: simulated seconds of a round at a normal dealer's pace (the demo's realtime pace: a round every 15 to 20 s)
ROUND_SECONDS: Final = (14.0, 20.0)
#: how much longer the slow dealer takes over each act (and so each round)
SLOW_PACE: Final = 1.6
#: the chance a round sees a procedure error by its dealer: the error-prone one, everyone else
ERROR_PRONE_RATE: Final = 0.12
ERROR_RATE: Final = 0.01
#: the default relief, in simulated minutes (a pit relieves every 20 to 60)
RELIEF_MINUTES: Final = 20.0
#: the names the default rosters are drawn from, four a table in turn
_NAMES: Final = ("a.ames", "b.baker", "c.chen", "d.diaz", "e.evans", "f.fox", "g.garcia", "h.hale", "i.ito",
                 "j.jones", "k.kim", "l.lopez", "m.moss", "n.ng", "o.ortiz", "p.park", "q.quinn", "r.reyes",
                 "s.sato", "t.tran", "u.uribe", "v.vance", "w.wu", "x.xu", "y.young", "z.zhang")
#: dealers a default roster has
ROSTER_SIZE: Final = 4


@dataclass(frozen=True, slots=True)
class Roster:
    """A table's dealers (see the module docstring)."""

    dealers: tuple[str, ...]
    relief_minutes: float = RELIEF_MINUTES
    slow: str | None = None
    error_prone: str | None = None

    def __post_init__(self) -> None:
        if not self.dealers:
            raise ValueError("dealers: at least one badge id")
        for dealer in self.dealers:
            check_badge(dealer)
        if len(set(self.dealers)) != len(self.dealers):
            raise ValueError("dealers: each badge id once")
        if not 1 <= self.relief_minutes <= 480:
            raise ValueError(f"relief_minutes {self.relief_minutes:g}: between 1 and 480")
        for key in ("slow", "error_prone"):
            dealer = getattr(self, key)
            if dealer is not None and dealer not in self.dealers:
                raise ValueError(f"{key} {dealer!r} is not one of the dealers")

    def to_toml(self) -> str:
        """The crew file's text."""
        names = ", ".join(f'"{d}"' for d in self.dealers)
        lines = ["# The dealers of this simulated table (controller/sim/roster.py): badge ids in the order they",
                 "# relieve each other, a relief every relief_minutes of the simulated clock.",
                 "[crew]", f"dealers = [{names}]", f"relief_minutes = {self.relief_minutes:g}"]
        lines += [f'{key} = "{getattr(self, key)}"' for key in ("slow", "error_prone") if getattr(self, key)]
        return "\n".join(lines) + "\n"


def default_roster(table_id: str) -> Roster:
    """Four dealers of their own for table ``t<N>``; the second is slow, the third error-prone."""
    number = int(table_id.lstrip("t") or 0)
    first = (number - 1) * ROSTER_SIZE
    dealers = []
    for i in range(first, first + ROSTER_SIZE):
        lap = i // len(_NAMES)
        dealers.append(_NAMES[i % len(_NAMES)] + (str(lap + 1) if lap else ""))
    return Roster(tuple(dealers), slow=dealers[1], error_prone=dealers[2])


def parse_roster(data: dict[str, Any], where: str) -> Roster:
    """The roster of a crew file's data; UsageError (one line naming ``where``) if it is not one."""
    crew = data.get("crew")
    if not isinstance(crew, dict) or set(data) != {"crew"}:
        raise UsageError(f"{where}: one [crew] section, nothing else")
    unknown = set(crew) - {"dealers", "relief_minutes", "slow", "error_prone"}
    if unknown:
        raise UsageError(f"{where}: [crew] has no key {sorted(unknown)[0]!r}")
    dealers = crew.get("dealers")
    if not isinstance(dealers, list) or not all(isinstance(d, str) for d in dealers):
        raise UsageError(f"{where}: [crew] dealers must be a list of badge ids")
    relief = crew.get("relief_minutes", RELIEF_MINUTES)
    if isinstance(relief, bool) or not isinstance(relief, int | float):
        raise UsageError(f"{where}: [crew] relief_minutes must be a number")
    for key in ("slow", "error_prone"):
        if not isinstance(crew.get(key, ""), str):
            raise UsageError(f"{where}: [crew] {key} must be a badge id")
    try:
        return Roster(tuple(dealers), float(relief), crew.get("slow"), crew.get("error_prone"))
    except ValueError as e:
        raise UsageError(f"{where}: [crew] {e}") from None


def crew_file(state_dir: Path, table_id: str) -> Path:
    """Where a demo table's crew file is."""
    return state_dir / "crew" / f"{table_id}.toml"


def table_roster(state_dir: Path, table_id: str) -> Roster:
    """The roster of a demo table from its crew file, written with :func:`default_roster` first if there is none."""
    path = crew_file(state_dir, table_id)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(default_roster(table_id).to_toml(), encoding="utf-8")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"{path}: {e}") from None
    return parse_roster(data, str(path))


class ReliefSchedule:
    """Who deals each round of one table, on the simulated clock (see the module docstring)."""

    def __init__(self, roster: Roster, *, seed: int, table_id: str) -> None:
        self.roster = roster
        self.seed = seed
        self.table_id = table_id
        self._dealers: list[int] = []  # the roster index of the dealer of round n + 1
        self._shifts: list[int] = []  # the shift (0: the first dealer's first) that deals round n + 1
        self._clock = 0.0  # simulated seconds at the end of the last round worked out
        self._shift_began = 0.0
        self._on = 0

    def _rng(self, *key: object) -> random.Random:
        return random.Random(f"{self.seed}:{self.table_id}:crew:" + ":".join(map(str, key)))

    def pace(self, dealer: str | None) -> float:
        """How many times as long as a normal dealer ``dealer`` takes over an act."""
        return SLOW_PACE if dealer is not None and dealer == self.roster.slow else 1.0

    def round_seconds(self, round_no: int, dealer: str) -> float:
        """How long round ``round_no`` takes ``dealer`` on the simulated clock."""
        return self._rng("round", round_no).uniform(*ROUND_SECONDS) * self.pace(dealer)

    def dealer_for(self, round_no: int) -> str:
        """The dealer on duty for round ``round_no`` (1-based)."""
        relief = self.roster.relief_minutes * 60.0
        dealers = self.roster.dealers
        while len(self._dealers) < round_no:
            shift = self._shifts[-1] if self._shifts else 0
            if self._dealers and self._clock - self._shift_began >= relief:
                self._on = (self._on + 1) % len(dealers)
                self._shift_began = self._clock
                shift += 1
            self._dealers.append(self._on)
            self._shifts.append(shift)
            self._clock += self.round_seconds(len(self._dealers), dealers[self._on])
        return dealers[self._dealers[round_no - 1]] if round_no >= 1 else dealers[0]

    def shift(self, round_no: int) -> int:
        """Which shift deals round ``round_no``: 0 the first dealer's first, 1 the relief after it, ..."""
        self.dealer_for(round_no)
        return self._shifts[round_no - 1] if round_no >= 1 else 0

    def slips(self, round_no: int) -> bool:
        """Whether the dealer of round ``round_no`` makes a procedure error in it (the error-prone one more often)."""
        dealer = self.dealer_for(round_no)
        rate = ERROR_PRONE_RATE if dealer == self.roster.error_prone else ERROR_RATE
        return self._rng("slip", round_no).random() < rate
