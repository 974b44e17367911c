"""Each dealer's figures (DESIGN, "The dealer on duty"): rounds, hands an hour, procedure errors by code, and actual
against theoretical win with the table's own control limits, from the public records in ``seq`` order.

Who is answerable for what:

* a **round** is its dealer of record's: the ``dealer_id`` its ``no_more_bets`` carries (the dealer on duty when
  betting closed; a relief during the round takes effect at its settlement); a round whose records name none
  (no dealer on duty, or a journal from before dealers) is no dealer's (``None``);
* a **procedure error** (:func:`controller.contract.alarms.procedure_error`) is the dealer's on duty when the
  alarm was raised;
* **time on duty** (``on_duty_s``, the base of ``hands_per_hour``) is the part of the table's own pace time that
  the dealer was on duty: the live topic's time since the open (a close stops it), the report's first round's
  start to its last round's end. So the dealers' times (no dealer's included) add up to the table's.

The dealer on duty changes at each ``dealer_changed`` (``dealer``, ``previous``). Reading may begin after the
dealer of the moment signed in (the live figures start at the last open, a journal may continue an archived
part): until the first ``dealer_changed`` (its ``previous``) or the first ``no_more_bets`` (its ``dealer_id``)
says who it was, that dealer's time and errors are held apart and given to them then; never said, they are no
dealer's.

:class:`DealerFold` keeps the sums (:class:`DealerSums`, the same sums as the table's
:class:`controller.analytics.hold.Tally`); :func:`figures_json` makes one dealer's figures of them with the
table's formulas (:mod:`controller.analytics.hold`); :class:`DealerLine` adds one dealer's sums across tables,
each table's theoretical win at its own edge and its variance under its own rules, as a floor adds tables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from controller.analytics.hold import MIN_ROUNDS, Spread, win_variance, z_score
from controller.contract.alarms import procedure_error
from controller.game.money import format_money
from controller.records import cents

__all__ = ["UNKNOWN", "DealerFold", "DealerLine", "DealerSums", "figures_json", "round_sums"]


class _Unknown:
    """The dealer on duty before the records said who it was."""

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()
Duty = str | None | _Unknown


@dataclass(slots=True)
class DealerSums:
    """One dealer's sums at one table (cents, cents squared, seconds)."""

    rounds: int = 0
    hands: int = 0
    decisions: int = 0
    handle: int = 0
    house_net: int = 0
    initial: int = 0
    squares: int = 0
    pairs: int = 0
    on_duty_s: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)

    def merge(self, other: DealerSums) -> None:
        self.rounds += other.rounds
        self.hands += other.hands
        self.decisions += other.decisions
        self.handle += other.handle
        self.house_net += other.house_net
        self.initial += other.initial
        self.squares += other.squares
        self.pairs += other.pairs
        self.on_duty_s += other.on_duty_s
        for code, n in other.errors.items():
            self.errors[code] = self.errors.get(code, 0) + n


def round_sums(round_: Mapping[str, Any], handle: int, house_net: int) -> DealerSums:
    """One settled round (a :mod:`controller.records` round dict) as sums; ``handle`` and ``house_net`` are what the
    table's tally counted for it (the engine's running totals' step: :meth:`controller.analytics.hold.Tally.add`)."""
    hands = total = squares = 0
    for spot in round_["spots"].values():
        wager = cents(spot.get("wager"))
        if wager > 0:
            hands += 1
            total += wager
            squares += wager * wager
    return DealerSums(rounds=1, hands=hands, decisions=len(round_.get("decisions") or []), handle=handle,
                      house_net=house_net, initial=total, squares=squares, pairs=total * total - squares)


def _dealer_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class DealerFold:
    """The dealers' sums over public records taken in ``seq`` order (:meth:`take`), rounds folded in by the caller
    (:meth:`add_round`, with what the table's tally counted), time attributed up to a moment by :meth:`clock_to`.

    ``since``/``until``: only alarms raised within count (the report's shift; the rounds and the time are the
    caller's to choose)."""

    def __init__(self, *, since: float | None = None, until: float | None = None) -> None:
        self.since, self.until = since, until
        self.sums: dict[str | None, DealerSums] = {}
        #: the dealer on duty after the last record taken
        self.duty: Duty = UNKNOWN
        #: the dealer of record of the round in play (its ``no_more_bets``), until its settlement
        self._round_dealer: Duty = UNKNOWN
        #: time and errors of the dealer on duty before the records said who it was
        self._unknown = DealerSums()
        #: time is attributed up to ``_clock`` (None: not counting), to ``_timed`` until the first of ``_changes``
        self._clock: float | None = None
        self._timed: Duty = UNKNOWN
        self._changes: list[tuple[float, Duty]] = []

    def _of(self, dealer: str | None) -> DealerSums:
        sums = self.sums.get(dealer)
        if sums is None:
            sums = self.sums[dealer] = DealerSums()
        return sums

    def _bucket(self, dealer: Duty) -> DealerSums:
        return self._unknown if isinstance(dealer, _Unknown) else self._of(dealer)

    def _resolve(self, dealer: str | None) -> None:
        """The dealer on duty when reading began is now known: what was held apart is theirs."""
        if self._unknown.rounds or self._unknown.on_duty_s or self._unknown.errors:
            self._of(dealer).merge(self._unknown)
        self._unknown = DealerSums()
        if isinstance(self.duty, _Unknown):
            self.duty = dealer
        if isinstance(self._timed, _Unknown):
            self._timed = dealer
        self._changes = [(ts, dealer if isinstance(d, _Unknown) else d) for ts, d in self._changes]

    def take(self, body: Mapping[str, Any]) -> None:
        """One public record: a change of dealer, a round's dealer of record, an alarm."""
        kind = body.get("type")
        ts = body.get("ts")
        when = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
        if kind == "dealer_changed":
            if isinstance(self.duty, _Unknown):
                self._resolve(_dealer_id(body.get("previous")))
            self.duty = _dealer_id(body.get("dealer"))
            if when is not None:
                self._changes.append((when, self.duty))
            else:
                self._timed = self.duty
        elif kind == "no_more_bets":
            named = _dealer_id(body.get("dealer_id"))
            if isinstance(self.duty, _Unknown):
                self._resolve(named)
            self._round_dealer = named
        elif kind == "alarm":
            code = body.get("code")
            if (isinstance(code, str) and procedure_error(code, bool(body.get("halts"))) and when is not None
                    and (self.since is None or when >= self.since) and (self.until is None or when < self.until)):
                errors = self._bucket(self.duty).errors
                errors[code] = errors.get(code, 0) + 1

    @property
    def unattributed(self) -> DealerSums:
        """The time and errors of the dealer on duty when reading began, while the records have not said who."""
        return self._unknown

    def round_dealer(self) -> str | None:
        """The dealer of record of the round just settled (None: no dealer on duty, or none named)."""
        dealer = self._round_dealer
        self._round_dealer = UNKNOWN
        return None if isinstance(dealer, _Unknown) else dealer

    def add_round(self, dealer: str | None, sums: DealerSums) -> None:
        self._of(dealer).merge(sums)

    def start_clock(self, ts: float) -> None:
        """Time counts from ``ts`` (an open; the first round of a shift)."""
        if self._clock is None:
            for at, dealer in self._changes:
                if at <= ts:
                    self._timed = dealer
            self._changes = [c for c in self._changes if c[0] > ts]
            self._clock = ts

    def clock_to(self, ts: float) -> None:
        """Attribute the time up to ``ts`` to the dealers on duty in it (the changes taken since the last call)."""
        clock = self._clock
        if clock is None or ts < clock:
            return
        timed = self._timed
        for at, dealer in self._changes:
            if at > ts:
                break
            if at > clock:
                self._bucket(timed).on_duty_s += at - clock
                clock = at
            timed = dealer
        self._changes = [c for c in self._changes if c[0] > ts]
        self._bucket(timed).on_duty_s += ts - clock
        self._clock, self._timed = ts, timed

    def stop_clock(self, ts: float) -> None:
        """Time stops at ``ts`` (a close)."""
        self.clock_to(ts)
        self._clock = None

    def finish(self) -> dict[str | None, DealerSums]:
        """The sums, what was never said to be anyone's given to no dealer (the end of a report's reading)."""
        if isinstance(self.duty, _Unknown):
            self._resolve(None)
        return self.sums


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def figures_json(sums: DealerSums, *, theoretical: int | None, variance: float | None) -> dict[str, Any]:
    """One dealer's figures (money as decimal strings, as the table's): ``theoretical`` in cents and ``variance``
    in cents squared, None while the rules' theory is not known. ``win_sd`` and ``on_duty_s`` are what a screen
    needs to add this dealer's figures at several tables: ``win_z`` of the sums over the square root of the summed
    ``win_sd`` squared, ``hands_per_hour`` as the summed hands over the summed hours on duty."""
    hours = sums.on_duty_s / 3600.0
    sd = math.sqrt(variance) if variance else None
    z = z_score(sums.house_net, theoretical, variance, sums.rounds) if theoretical is not None and variance else None
    return {
        "rounds": sums.rounds, "hands": sums.hands,
        "hands_per_hour": _r6(sums.hands / hours) if hours > 0 else None,
        "procedure_errors": dict(sorted(sums.errors.items())),
        "initial_wagers": format_money(sums.initial), "actual_win": format_money(sums.house_net),
        "theoretical_win": None if theoretical is None else format_money(theoretical),
        "win_z": _r6(z), "win_sd": None if sd is None else format_money(round(sd)),
        "on_duty_s": _r6(sums.on_duty_s), "min_rounds": MIN_ROUNDS,
    }


@dataclass(slots=True)
class DealerLine:
    """One dealer's figures across tables: each table's sums added, its theoretical win at its own edge and its
    variance under its own rules (the tables' rounds are independent, so their variances add)."""

    dealer_id: str | None
    sums: DealerSums = field(default_factory=DealerSums)
    theoretical: int = 0
    variance: float = 0.0
    tables: list[str] = field(default_factory=list)

    def add(self, table_id: str, sums: DealerSums, edge: float, spread: Spread) -> None:
        self.sums.merge(sums)
        self.theoretical += round(sums.initial * edge)
        self.variance += win_variance(spread, sums.squares, sums.pairs)
        if table_id not in self.tables:
            self.tables.append(table_id)

    def to_json(self) -> dict[str, Any]:
        return {"dealer_id": self.dealer_id, "tables": sorted(self.tables),
                **figures_json(self.sums, theoretical=self.theoretical, variance=self.variance),
                "handle": format_money(self.sums.handle), "decisions": self.sums.decisions}
