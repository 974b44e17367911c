"""Hold against theoretical, and pace: the figures a pit judges a table by (DESIGN, "Table analytics").

A table's hold after 15 rounds says little: 52 % and -33 % are both ordinary noise. What says something is
how far the house's actual win lies from its theoretical win, in standard deviations of what such rounds
do. From the settled rounds (as :mod:`controller.records` rebuilds them from the journal's public records):

* ``initial_wagers``: the wagers on the spots before the deal (doubles, splits and insurance excluded).
* ``theoretical_win`` = ``initial_wagers`` x ``theoretical_edge``, the profile's basic-strategy house edge
  (the figure ``tablectl edge`` prints, :func:`controller.strategy.edge.house_edge`), to the cent.
* ``house_net`` (actual win) and ``handle`` (every wager, doubles, splits and insurance included);
  ``hold`` = ``house_net / handle``.
* ``win_z`` = (actual - theoretical) / (sigma x sqrt(sum of each hand's initial wager squared)), sigma being
  the standard deviation of one hand's net per unit of initial wager under basic strategy, measured by a
  bench run of the same profile on the real engine (:data:`SIGMA_ROUNDS` rounds, seed :data:`SIGMA_SEED`;
  about 1.15 for shoe games). ``sigma_source`` says so.
* Pace: rounds, hands (initial hands) and player decisions per hour of play, the mean time a round takes,
  and idle time (open time in no round).

Pure computation on round dicts: the report command and the live ``analytics`` topic share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from controller.game.money import format_money
from controller.game.rules import Rules, rules_digest
from controller.records import cents

#: the bench run that measures sigma (a few seconds compiled, once per set of rules and process)
SIGMA_ROUNDS = 40_000
SIGMA_SEED = 2026


@dataclass(frozen=True, slots=True)
class Spread:
    """The standard deviation of one hand's net per unit of initial wager, and where it comes from."""

    sigma: float
    source: str


@cache
def _spread_for(digest: str, rules: Rules) -> Spread:
    from controller import bench

    stats, _ = bench.run(rules, SIGMA_ROUNDS, seed=SIGMA_SEED, spots=1)
    n = stats.rounds
    mean = stats.net / stats.unit / n
    variance = max(stats.sum_sq / n - mean * mean, 0.0) * n / (n - 1)
    return Spread(math.sqrt(variance), f"bench run of {rules.name}: {n} rounds, seed {SIGMA_SEED} (digest {digest})")


def spread(rules: Rules) -> Spread:
    """Sigma for ``rules`` (measured once per process and set of rules)."""
    return _spread_for(rules_digest(rules), rules)


@cache
def _edge_for(digest: str, rules: Rules) -> float:
    from controller.strategy.edge import house_edge

    return house_edge(rules).house_edge


def theoretical_edge(rules: Rules) -> float:
    """The basic-strategy house edge of ``rules`` (what ``tablectl edge`` prints)."""
    return _edge_for(rules_digest(rules), rules)


@dataclass(frozen=True, slots=True)
class Figures:
    rounds: int
    hands: int
    decisions: int
    handle: int  # cents
    house_net: int
    initial_wagers: int
    theoretical_edge: float
    theoretical_win: int
    hold: float | None
    win_z: float | None
    sigma: float
    sigma_source: str
    started: float | None
    ended: float | None
    play_s: float
    idle_s: float
    rounds_per_hour: float | None
    hands_per_hour: float | None
    decisions_per_hour: float | None
    mean_round_s: float | None

    def to_json(self) -> dict[str, Any]:
        """Money as decimal strings (DESIGN: never a binary float), the rest as numbers."""
        out = asdict(self)
        for key in ("handle", "house_net", "initial_wagers", "theoretical_win"):
            out[key] = format_money(out[key])
        for key in ("hold", "win_z", "rounds_per_hour", "hands_per_hour", "decisions_per_hour", "mean_round_s",
                    "theoretical_edge", "sigma", "play_s", "idle_s"):
            if out[key] is not None:
                out[key] = round(out[key], 6)
        return out


#: the engine's running totals after a round: (rounds, handle cents, house net cents)
Totals = tuple[int, int, int]
NO_TOTALS: Totals = (0, 0, 0)


def totals_after(round_: Mapping[str, Any]) -> Totals:
    """The engine's running totals (since the table opened) as a settled round left them."""
    t = round_.get("totals") or {}
    return int(t.get("rounds") or 0), cents(t.get("handle")), cents(t.get("house_net"))


@dataclass(slots=True)
class Tally:
    """The sums :func:`figures` makes over rounds, kept one round at a time (the live topic and the streamed
    report fold each settled round in as it comes; :func:`tally_figures` makes the figures of them)."""

    rounds: int = 0
    hands: int = 0
    decisions: int = 0
    handle: int = 0  # cents
    house_net: int = 0
    initial: int = 0
    squares: int = 0  # sum of each hand's initial wager squared, cents squared
    play: float = 0.0
    first: float | None = None
    last: float | None = None
    before: Totals = NO_TOTALS  # the engine's totals after the last round folded in

    def add(self, round_: Mapping[str, Any]) -> None:
        """Fold in one settled round (a :mod:`controller.records` round dict)."""
        self.rounds += 1
        self.first = round_["started"] if self.first is None else self.first
        self.last = round_["ended"]
        self.play += max(0.0, round_["ended"] - round_["started"])
        self.decisions += len(round_.get("decisions") or [])
        for spot in round_["spots"].values():
            wager = cents(spot.get("wager"))
            if wager > 0:
                self.hands += 1
                self.initial += wager
                self.squares += wager * wager
        # handle and net as the engine counted them: its running totals (which start again at each open)
        now = totals_after(round_)
        if now[0] <= self.before[0]:  # the first round after an open: the totals started again
            self.handle += now[1]
            self.house_net += now[2]
        else:
            self.handle += now[1] - self.before[1]
            self.house_net += now[2] - self.before[2]
        self.before = now


def figures(rounds: Iterable[Mapping[str, Any]], rules: Rules, *, baseline: Totals = NO_TOTALS,
            sigma: Spread | None = None, opened: float | None = None, now: float | None = None) -> Figures:
    """The figures of ``rounds`` (settled rounds as :mod:`controller.records` gives them, oldest first).

    Handle and house net are the engine's own, from its running totals: ``baseline`` is what they were after
    the round before the first one given (:func:`totals_after`; the default: right after an open).
    ``opened``..``now``: the time the table was open, for idle time (default: first to last round)."""
    tally = Tally(before=baseline)
    for r in rounds:
        tally.add(r)
    return tally_figures(tally, rules, sigma=sigma, opened=opened, now=now)


def tally_figures(t: Tally, rules: Rules, *, sigma: Spread | None = None, opened: float | None = None,
                  now: float | None = None) -> Figures:
    """The figures of the rounds folded into ``t`` (see :func:`figures`)."""
    edge = theoretical_edge(rules)
    spread_ = sigma if sigma is not None else spread(rules)
    n, hands, decisions, handle, house_net, initial = t.rounds, t.hands, t.decisions, t.handle, t.house_net, t.initial
    squares, play, first, last = t.squares, t.play, t.first, t.last
    theoretical = round(initial * edge)
    begin = opened if opened is not None else first
    end = now if now is not None else last
    open_s = max(0.0, (end - begin)) if begin is not None and end is not None else 0.0
    hours = open_s / 3600.0

    def per_hour(count: int) -> float | None:
        return count / hours if hours > 0 else None

    z = (house_net - theoretical) / (spread_.sigma * math.sqrt(squares)) if squares and spread_.sigma else None
    return Figures(
        rounds=n, hands=hands, decisions=decisions, handle=handle, house_net=house_net, initial_wagers=initial,
        theoretical_edge=edge, theoretical_win=theoretical, hold=house_net / handle if handle else None,
        win_z=z, sigma=spread_.sigma, sigma_source=spread_.source, started=first, ended=last, play_s=play,
        idle_s=max(0.0, open_s - play), rounds_per_hour=per_hour(n), hands_per_hour=per_hour(hands),
        decisions_per_hour=per_hour(decisions), mean_round_s=play / n if n else None,
    )
