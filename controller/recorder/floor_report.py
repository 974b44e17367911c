"""The figures of "Table analytics" for the casino floor: per table, per pit and for the whole floor, from the
recorder's database (``tablectl report --db URL``).

Per table, the shift is read exactly as ``tablectl report PATH`` reads a journal: the table's event bodies in
``seq`` order, folded by :func:`controller.analytics.shift.read_shift` (memory bounded by a shoe), under the
rules the table published with its last ``rules_changed`` event (its profile, checked against the digest
it published; a table whose rules are not a known profile's needs ``--profile``). A pit is the ``pit`` the
table's ``state`` named (``unassigned`` when none).

A pit's or the floor's figures are sums over its tables: rounds, hands, handle, house net, initial wagers,
theoretical win (each table's at its own edge); ``theoretical_edge`` is theoretical win over initial wagers,
``hold`` house net over handle, and ``win_z`` (actual minus theoretical) over the square root of the sum of
each table's variance (:func:`controller.analytics.hold.win_variance`: its hands' variances and the covariances
of the hands of each round, which share the dealer's cards): the tables' rounds are independent of each other,
so their variances add. Below :data:`controller.analytics.hold.MIN_ROUNDS` rounds in all ``win_z`` is null.
``rounds_per_hour`` and ``hands_per_hour`` are per table (the rounds over the tables' open hours
together), the pace a pit manager compares with one table's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from controller.analytics import advantage
from controller.analytics.hold import MIN_ROUNDS, Spread, win_variance, z_score
from controller.analytics.shift import Shift, read_shift
from controller.game.money import format_money
from controller.game.rules import Rules, rules_digest
from controller.recorder.store import RecorderStore, TableRecord

__all__ = ["UNASSIGNED", "RulesUnknown", "TableShift", "combine", "floor_report", "table_shift"]

#: the pit of a table whose state named none
UNASSIGNED = "unassigned"


class RulesUnknown(Exception):
    """The rules a table played under cannot be known from what it published (one line, naming the table)."""


@dataclass(frozen=True, slots=True)
class TableShift:
    """One table's shift: its pit, its rules' name and what :func:`read_shift` made of its events."""

    table_id: str
    pit: str
    profile: str
    shift: Shift

    def to_json(self) -> dict[str, Any]:
        return {"table_id": self.table_id, "pit": self.pit, "profile": self.profile, **self.shift.figures.to_json(),
                "shoes": self.shift.shoes, "flagged": advantage.flagged_json(self.shift.flagged)}


def table_rules(store: RecorderStore, table_id: str, fallback: Rules | None) -> Rules:
    """The rules of the table's last ``rules_changed`` event, as a known profile with the same digest; else
    ``fallback`` (``--profile``); else :class:`RulesUnknown`."""
    from controller.profiles import ProfileError, load_rules

    event = store.last_of_type(table_id, "rules_changed")
    if event is None:
        if fallback is not None:
            return fallback
        raise RulesUnknown(f"table {table_id}: published no rules_changed event (its journal is older than the rules "
                           "binding): give --profile")
    body = json.loads(event.body)
    name, digest = body.get("profile"), body.get("digest")
    try:
        rules = load_rules(str(name))
    except ProfileError:
        rules = None
    if rules is not None and rules_digest(rules) == digest:
        return rules
    if fallback is not None:
        return fallback
    why = "not a profile known here" if rules is None else "a profile with the table's own overrides"
    raise RulesUnknown(f"table {table_id}: its rules at seq {event.seq} ({name!r}, digest {digest}) are {why}: "
                       "give --profile")


def _bodies(store: RecorderStore, table_id: str) -> Iterator[dict[str, Any]]:
    for event in store.events(table_id):
        body = json.loads(event.body)
        if isinstance(body, dict):
            yield body


def table_shift(store: RecorderStore, record: TableRecord, *, since: float | None, until: float | None,
                profile: Rules | None) -> TableShift:
    rules = table_rules(store, record.table_id, profile)
    shift = read_shift(_bodies(store, record.table_id), rules, since=since, until=until)
    return TableShift(record.table_id, record.pit or UNASSIGNED, rules.name, shift)


def combine(shifts: list[TableShift]) -> dict[str, Any]:
    """A pit's or the floor's figures from its tables' (see the module docstring)."""
    f = [s.shift.figures for s in shifts]
    initial = sum(x.initial_wagers for x in f)
    theoretical = sum(x.theoretical_win for x in f)
    handle = sum(x.handle for x in f)
    house_net = sum(x.house_net for x in f)
    rounds, hands, decisions = sum(x.rounds for x in f), sum(x.hands for x in f), sum(x.decisions for x in f)
    variance = sum(win_variance(Spread(x.sigma, x.sigma_source, x.covariance), s.shift.squares, s.shift.pairs)
                   for x, s in zip(f, shifts, strict=True))
    open_hours = sum(x.play_s + x.idle_s for x in f) / 3600.0
    started = [x.started for x in f if x.started is not None]
    ended = [x.ended for x in f if x.ended is not None]

    def per_hour(count: int) -> float | None:
        return round(count / open_hours, 6) if open_hours > 0 else None

    return {
        "tables": len(shifts), "rounds": rounds, "hands": hands, "decisions": decisions,
        "handle": format_money(handle), "house_net": format_money(house_net),
        "initial_wagers": format_money(initial), "theoretical_win": format_money(theoretical),
        "theoretical_edge": round(theoretical / initial, 6) if initial else None,
        "hold": round(house_net / handle, 6) if handle else None,
        "win_z": round(z, 6) if (z := z_score(house_net, theoretical, variance, rounds)) is not None else None,
        "win_sd": format_money(round(math.sqrt(variance))) if variance > 0 else None, "min_rounds": MIN_ROUNDS,
        "rounds_per_hour": per_hour(rounds), "hands_per_hour": per_hour(hands),
        "started": min(started) if started else None, "ended": max(ended) if ended else None,
        "flagged": sum(len(s.shift.flagged) for s in shifts),
    }


def floor_report(store: RecorderStore, tables: list[TableRecord], *, since: float | None, until: float | None,
                 profile: Rules | None) -> dict[str, Any]:
    """Every table's figures, then each pit's, then the floor's (JSON-ready). A table the recorder holds no event
    of yet (only a state, or events past a gap) is listed under ``unrecorded``, not counted."""
    shifts = [table_shift(store, t, since=since, until=until, profile=profile) for t in tables if t.last_seq > 0]
    pits: dict[str, list[TableShift]] = {}
    for s in shifts:
        pits.setdefault(s.pit, []).append(s)
    return {"tables": {s.table_id: s.to_json() for s in shifts},
            "pits": {pit: {"table_ids": [s.table_id for s in members], **combine(members)}
                     for pit, members in sorted(pits.items())},
            "floor": combine(shifts), "unrecorded": [t.table_id for t in tables if t.last_seq == 0]}
