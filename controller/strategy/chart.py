"""Basic strategy derived from the exact EVs, and the fast decision function the bench plays.

The chart is *total-dependent*: for each row (hard total, soft total, pair) and dealer up card,
every action's EV is averaged over the two-card hands making that row, weighted by how often
they are dealt against that up card, and the actions are ranked best first. A cell keeps the
whole ranking, so "double, else hit" (``Dh``) or "surrender, else stand" (``Rs``) fall out of
one table: :meth:`BasicStrategy.decide` returns the first action of the ranking that is allowed.
Hands of three or more cards use the hit/stand order of the row of their total.

``decide`` is a single list lookup (the ranking is pre-resolved for all eight combinations of
the three "allowed" flags), so the bench can call it millions of times a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

from mypy_extensions import mypyc_attr

from controller.game.rules import Rules
from controller.strategy.ev import (
    Context,
    deal_probability,
    player_hand_values,
    same_rank_fraction,
    situation_ev,
)

Choice = Literal["hit", "stand", "double", "split", "surrender"]

#: Dealer up cards in chart column order (value 1 = ace, shown last).
UP_CARDS: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)
HARD_ROWS: tuple[int, ...] = tuple(range(4, 22))
SOFT_ROWS: tuple[int, ...] = tuple(range(12, 22))
PAIR_ROWS: tuple[int, ...] = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)

# Final: constants of the compiled decide() (a plain module global is a dict lookup there)
HARD: Final = 0
SOFT: Final = 1
PAIR: Final = 2
_KINDS: Final = 3
_TOTALS: Final = 32
_UPS: Final = 11

LEGEND: dict[str, str] = {
    "H": "hit",
    "S": "stand",
    "Dh": "double, else hit",
    "Ds": "double, else stand",
    "P": "split",
    "Rh": "surrender, else hit",
    "Rs": "surrender, else stand",
    "Rp": "surrender, else split",
}


def up_label(up: int) -> str:
    """Column heading of an up-card value: ``2``..``10``, ``A``."""
    return "A" if up == 1 else str(up)


def pair_label(v: int) -> str:
    return "A,A" if v == 1 else "T,T" if v == 10 else f"{v},{v}"


@mypyc_attr(native_class=False)  # compiled, a frozen dataclass would neither pickle nor copy
@dataclass(frozen=True, slots=True)
class Cell:
    """One chart cell: the actions allowed for a two-card hand of that row, best first, with the
    dealt-weighted average EV of each."""

    ranking: tuple[str, ...]
    evs: tuple[tuple[str, float], ...]

    @property
    def code(self) -> str:
        """The usual chart code (``H``, ``S``, ``Dh``, ``Ds``, ``P``, ``Rh``, ``Rs``, ``Rp``)."""
        first = self.ranking[0]
        if first in ("hit", "stand"):
            return "H" if first == "hit" else "S"
        if first == "split":
            return "P"
        rest = next(a for a in self.ranking[1:] if a in ("hit", "stand", "split"))
        head = "D" if first == "double" else "R"
        return head + {"hit": "h", "stand": "s", "split": "p"}[rest]


def _rank(evs: dict[str, float]) -> Cell:
    order = sorted(evs, key=lambda a: (-evs[a], a))
    return Cell(tuple(order), tuple((a, evs[a]) for a in order))


def _row_hands(kind: int, row: int) -> list[tuple[int, int]]:
    """Two-card hands (values, ``i <= j``) of one chart row."""
    hands = player_hand_values()
    if kind == PAIR:
        return [(row, row)]
    if kind == SOFT:
        return [(1, j) for (i, j) in hands if i == 1 and j != 1 and j != 10 and 11 + j == row] or (
            [(1, 1)] if row == 12 else []
        )
    found = [(i, j) for (i, j) in hands if i != 1 and i != j and i + j == row]
    if not found:
        found = [(i, j) for (i, j) in hands if i != 1 and i + j == row]
    return found


class BasicStrategy:
    """The total-dependent basic strategy of one rule set, with a fast :meth:`decide`.

    ``cells``: the chart of ``rules`` computed before (a pickled strategy, as the bench hands it to spawned
    workers), else it is computed here."""

    def __init__(self, rules: Rules, cells: dict[tuple[int, int, int], Cell] | None = None) -> None:
        self.rules = rules
        self.ctx = Context.of(rules)
        if cells is None:
            cells = {}
            for up in UP_CARDS:
                for kind, rows in ((HARD, HARD_ROWS), (SOFT, SOFT_ROWS), (PAIR, PAIR_ROWS)):
                    for row in rows:
                        cells[(kind, row, up)] = self._cell(kind, row, up)
        self.cells = cells
        table: list[str] = ["stand"] * (_KINDS * _TOTALS * _UPS * 8)
        for (kind, row, up), cell in self.cells.items():
            for flags in range(8):
                allowed = {"hit", "stand"}
                if flags & 1:
                    allowed.add("double")
                if flags & 2:
                    allowed.add("split")
                if flags & 4:
                    allowed.add("surrender")
                table[((kind * _TOTALS + row) * _UPS + up) * 8 + flags] = next(
                    a for a in cell.ranking if a in allowed
                )
        self._table = table

    def __reduce__(self) -> tuple[type[BasicStrategy], tuple[Rules, dict[tuple[int, int, int], Cell]]]:
        # pickled with its chart, not recomputed (compiled, the class cannot be made without calling __init__)
        return (BasicStrategy, (self.rules, self.cells))

    def _cell(self, kind: int, row: int, up: int) -> Cell:
        hands = _row_hands(kind, row)
        if not hands:  # hard 21 / soft 21: nothing to decide
            return Cell(("stand", "hit"), (("stand", 1.0), ("hit", -1.0)))
        total_w = 0.0
        sums: dict[str, float] = {}
        for i, j in hands:
            w = deal_probability(self.ctx.decks, i, j, up)
            acts = situation_ev(self.ctx, i, j, up).actions()
            if kind != PAIR:
                acts.pop("split", None)
            total_w += w
            for a, ev in acts.items():
                sums[a] = sums.get(a, 0.0) + w * ev
        return _rank({a: s / total_w for a, s in sums.items()})

    def decide(
        self,
        total: int,
        soft: bool,
        is_pair: bool,
        can_double: bool,
        can_split: bool,
        can_surrender: bool,
        up: int,
    ) -> str:
        """The basic-strategy action for a hand: ``total`` (best total), ``soft``, whether it is a
        two-card pair (A,A is a soft 12 pair), what the table allows now, and the up-card value
        (1 = ace). Returns ``"hit"``, ``"stand"``, ``"double"``, ``"split"`` or ``"surrender"``."""
        if is_pair:
            kind, row = PAIR, (1 if soft else total >> 1)
        else:
            kind, row = (SOFT if soft else HARD), total
        return self._table[
            ((kind * _TOTALS + row) * _UPS + up) * 8 + can_double + (can_split << 1) + (can_surrender << 2)
        ]

    def cell(self, kind: int, row: int, up: int) -> Cell:
        return self.cells[(kind, row, up)]

    def chart(self) -> dict[str, dict[str, list[str]]]:
        """The chart as codes: ``{"hard": {"16": ["S", ...]}, "soft": ..., "pairs": ..., "surrender": ...}``;
        columns in :data:`UP_CARDS` order."""
        out: dict[str, dict[str, list[str]]] = {"hard": {}, "soft": {}, "pairs": {}, "surrender": {}}
        for row in range(5, 21):
            out["hard"][str(row)] = [self.cells[(HARD, row, up)].code for up in UP_CARDS]
        for row in range(13, 21):
            out["soft"][f"A,{row - 11}"] = [self.cells[(SOFT, row, up)].code for up in UP_CARDS]
        for v in PAIR_ROWS:
            out["pairs"][pair_label(v)] = [self.cells[(PAIR, v, up)].code for up in UP_CARDS]
        if self.rules.surrender != "none":
            for kind, rows, label in ((HARD, range(5, 21), str), (PAIR, PAIR_ROWS, pair_label)):
                for row in rows:
                    marks = [
                        "R" if self.cells[(kind, row, up)].ranking[0] == "surrender" else "." for up in UP_CARDS
                    ]
                    if "R" in marks:
                        name = label(row) if kind == PAIR else f"hard {row}"
                        out["surrender"][name] = marks
        return out


@lru_cache(maxsize=64)
def basic_strategy(rules: Rules) -> BasicStrategy:
    """Cached :class:`BasicStrategy` for ``rules`` (``Rules`` is frozen and hashable)."""
    return BasicStrategy(rules)


def tens_pair_fraction(rules: Rules) -> float:
    """Share of ten-value pairs that may be split (all of them when splitting by value)."""
    return 1.0 if rules.split_by == "value" else same_rank_fraction(rules.decks)
