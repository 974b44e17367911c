"""Hold against theoretical, and pace: the figures a pit judges a table by (DESIGN, "Table analytics").

A table's hold after 15 rounds says little: 52 % and -33 % are both ordinary noise. What says something is
how far the house's actual win lies from its theoretical win, in standard deviations of what such rounds
do. From the settled rounds (as :mod:`controller.records` rebuilds them from the journal's public records):

* ``initial_wagers``: the wagers on the spots before the deal (doubles, splits and insurance excluded).
* ``theoretical_win`` = ``initial_wagers`` x ``theoretical_edge``, the profile's basic-strategy house edge
  (the figure ``tablectl edge`` prints, :func:`controller.strategy.edge.house_edge`), to the cent.
* ``house_net`` (actual win) and ``handle`` (every wager, doubles, splits and insurance included);
  ``hold`` = ``house_net / handle``.
* ``win_z`` = (actual - theoretical) / ``win_sd``, the standard deviation of the rounds' house net. The hands of
  a round all play against the same dealer hand, so they are not independent: a round's variance is
  ``sigma^2 x sum(w_i^2) + covariance x sum over i != j of (w_i x w_j)`` over its hands' initial wagers ``w``,
  ``sigma`` the standard deviation of one hand's net per unit of initial wager under basic strategy (doubles and
  splits inside it) and ``covariance`` that of two hands' nets in the same round per unit of wager product, both
  measured by a bench run of the same rules on the real engine with :data:`SPREAD_SPOTS` spots seated
  (:mod:`controller.bench.spread`; about 1.16 and 0.49 for shoe games): for the shipped profiles ahead, recorded
  in :data:`RECORDED` by ``benchmarks/spread_figures.py`` (100,000 rounds each); for other rules (a table's
  overrides) at first use, :data:`SIGMA_ROUNDS` rounds seeded :data:`SIGMA_SEED`. ``sigma_source`` says which.
  Below :data:`MIN_ROUNDS` rounds ``win_z`` is ``None`` (too few rounds for the normal approximation's tails:
  docs/analytics.md).
* Pace: rounds, hands (initial hands) and player decisions per hour of play, the mean time a round takes,
  and idle time (open time in no round).

Pure computation on round dicts: the report command and the live ``analytics`` topic share it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

from controller.game.money import format_money
from controller.game.rules import Rules, rules_digest
from controller.records import cents

#: the bench run that measures sigma and the covariance (a second or two compiled, once per set of rules and
#: process): 20,000 rounds of 7 spots put the covariance's standard error near 1 % (docs/analytics.md)
SIGMA_ROUNDS = 20_000
SIGMA_SEED = 2026
#: the spots seated for it (fewer when the rules have fewer)
SPREAD_SPOTS = 7
#: the figures measured ahead for the shipped profiles, by digest (``benchmarks/spread_figures.py`` writes it)
RECORDED = Path(__file__).with_name("spreads.json")
#: below this many rounds ``win_z`` is None: the normal approximation's tails are not yet what a flag assumes
MIN_ROUNDS = 10


@dataclass(frozen=True, slots=True)
class Spread:
    """The standard deviation of one hand's net per unit of initial wager, the covariance of two hands' nets in the
    same round per unit of wager product, and where they come from."""

    sigma: float
    source: str
    covariance: float = 0.0


def recorded_spreads() -> dict[str, Any]:
    """The figures :data:`RECORDED` holds (``{"profiles": {name: {"digest", "sigma", "covariance", ...}}}``)."""
    data = json.loads(RECORDED.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def _source(name: str, f: Mapping[str, Any], digest: str) -> str:
    return (f"bench run of {name}: {f['rounds']} rounds of {f['spots']} spots, seed {f['seed']}: variance "
            f"{f['variance']:.4f} +- {f['variance_se']:.4f}, covariance {f['covariance']:.4f} +- "
            f"{f['covariance_se']:.4f} (digest {digest})")


def _recorded(digest: str) -> Spread | None:
    try:
        profiles = recorded_spreads().get("profiles") or {}
    except (OSError, ValueError):
        return None
    for name, f in profiles.items():
        if isinstance(f, dict) and f.get("digest") == digest:
            where = f"; recorded in controller/analytics/{RECORDED.name} by benchmarks/spread_figures.py"
            try:
                return Spread(math.sqrt(f["variance"]), _source(name, f, digest) + where, float(f["covariance"]))
            except (KeyError, TypeError, ValueError):
                return None  # an entry cut short: measured again, as for rules not recorded
    return None


@cache
def _spread_for(digest: str, rules: Rules) -> Spread:
    from controller.bench.spread import measure

    known = _recorded(digest)
    if known is not None:
        return known
    spots = min(SPREAD_SPOTS, rules.spots)
    m = measure(rules, SIGMA_ROUNDS, seed=SIGMA_SEED, spots=spots)
    f = {"rounds": m.rounds, "spots": spots, "seed": SIGMA_SEED, "variance": m.variance,
         "variance_se": m.variance_se, "covariance": m.covariance, "covariance_se": m.covariance_se}
    return Spread(math.sqrt(m.variance), _source(rules.name, f, digest), m.covariance)


def spread(rules: Rules) -> Spread:
    """Sigma and the covariance for ``rules`` (measured once per process and set of rules)."""
    return _spread_for(rules_digest(rules), rules)


def win_variance(spread_: Spread, squares: int, pairs: int) -> float:
    """The variance of the house net of rounds whose hands' initial wagers give ``squares`` (the sum over hands of
    ``w^2``) and ``pairs`` (the sum over each round's ordered pairs of its hands ``i != j`` of ``w_i x w_j``)."""
    return spread_.sigma * spread_.sigma * squares + spread_.covariance * pairs


def z_score(house_net: int, theoretical: int, variance: float, rounds: int) -> float | None:
    """(actual - theoretical) in standard deviations; None below :data:`MIN_ROUNDS` rounds or with no variance."""
    if rounds < MIN_ROUNDS or variance <= 0:
        return None
    return (house_net - theoretical) / math.sqrt(variance)


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
    win_sd: int | None  # cents: one standard deviation of the house net (None: no wager yet)
    sigma: float
    covariance: float
    sigma_source: str
    min_rounds: int
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
        for key in ("handle", "house_net", "initial_wagers", "theoretical_win", "win_sd"):
            if out[key] is not None:
                out[key] = format_money(out[key])
        for key in ("hold", "win_z", "rounds_per_hour", "hands_per_hour", "decisions_per_hour", "mean_round_s",
                    "theoretical_edge", "sigma", "covariance", "play_s", "idle_s"):
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
    pairs: int = 0  # sum over rounds of w_i x w_j over the round's ordered pairs of hands i != j, cents squared
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
        total = squares = 0
        for spot in round_["spots"].values():
            wager = cents(spot.get("wager"))
            if wager > 0:
                self.hands += 1
                total += wager
                squares += wager * wager
        self.initial += total
        self.squares += squares
        self.pairs += total * total - squares
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
    play, first, last = t.play, t.first, t.last
    theoretical = round(initial * edge)
    begin = opened if opened is not None else first
    end = now if now is not None else last
    open_s = max(0.0, (end - begin)) if begin is not None and end is not None else 0.0
    hours = open_s / 3600.0

    def per_hour(count: int) -> float | None:
        return count / hours if hours > 0 else None

    variance = win_variance(spread_, t.squares, t.pairs)
    z = z_score(house_net, theoretical, variance, n)
    return Figures(
        rounds=n, hands=hands, decisions=decisions, handle=handle, house_net=house_net, initial_wagers=initial,
        theoretical_edge=edge, theoretical_win=theoretical, hold=house_net / handle if handle else None,
        win_z=z, win_sd=round(math.sqrt(variance)) if variance > 0 else None, sigma=spread_.sigma,
        covariance=spread_.covariance, sigma_source=spread_.source, min_rounds=MIN_ROUNDS, started=first,
        ended=last, play_s=play,
        idle_s=max(0.0, open_s - play), rounds_per_hour=per_hour(n), hands_per_hour=per_hour(hands),
        decisions_per_hour=per_hour(decisions), mean_round_s=play / n if n else None,
    )
