"""A shift's report in one pass over a journal's public records: memory bounded by a shoe, not the shift.

``tablectl report`` once listed every record of the journal, rebuilt every round with its events, then walked
them twice (the figures, then the advantage-play signals per shoe): 319 MB and 10 s for an hour's 5,450
rounds, more than a table PC's ``MemoryMax`` for a busy shift. :func:`read_shift` takes the records as a
stream, in ``seq`` order, and folds each settled round, as it comes, into

* the figures' running sums (:class:`controller.analytics.hold.Tally`, those of the live topic; the rounds
  started within ``since``..``until``; the engine's totals of the round before ``since`` as the baseline);
* the Hi-Lo count of the shoe in play (:class:`controller.analytics.advantage.ShoeCounter`), judged at the
  shoe's end over the last shoes' window, exactly as :func:`controller.analytics.advantage.journal_signals`
  does (the same numbering, the same ``complete`` rule, the rounds outside the shift counted, never judged);
* with ``chart``, one small point per round (the sums after it), for the HTML report's chart.

It keeps the round being built and the shoe's count, the last shoes' signals (the flag's window) and the
flagged ones; every signal only with ``detail``. Reading stops at the end of the shoe in which ``until``
fell: no later round is in the shift and no later shoe holds a bet of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.analytics import advantage
from controller.analytics.advantage import RULE, FlagRule, ShoeCounter, SpotSignal
from controller.analytics.dealers import DealerFold, DealerSums, round_sums
from controller.analytics.hold import NO_TOTALS, Figures, Tally, tally_figures, totals_after
from controller.game.rules import Rules
from controller.records import RoundBuilder


@dataclass(frozen=True, slots=True)
class ChartPoint:
    """The sums after one round of the shift (the chart's x: rounds)."""

    rounds: int
    house_net: int  # cents
    initial: int  # cents
    squares: int  # cents squared
    pairs: int  # cents squared (:attr:`controller.analytics.hold.Tally.pairs`)


@dataclass(slots=True)
class Shift:
    """What :func:`read_shift` found (see the module docstring)."""

    figures: Figures
    #: the flagged spot-shoes, oldest first
    flagged: list[SpotSignal]
    #: every spot-shoe's signals (with ``detail``; else empty)
    signals: list[SpotSignal]
    #: spot-shoes judged, and the shoes they were in
    spot_shoes: int
    shoes: int
    #: the sums after each round (with ``chart``; else empty)
    points: list[ChartPoint] = field(default_factory=list)
    #: the sum of each hand's initial wager squared (cents squared): a floor report's ``win_z`` across tables
    squares: int = 0
    #: the sum over rounds of the products of two hands' initial wagers (:attr:`controller.analytics.hold.Tally.pairs`)
    pairs: int = 0
    #: each dealer's sums over the shift (None: no dealer on duty; :mod:`controller.analytics.dealers`)
    dealers: dict[str | None, DealerSums] = field(default_factory=dict)


class _Shoes:
    """The advantage-play signals of each shoe as its rounds come (see the module docstring)."""

    def __init__(self, rules: Rules, rule: FlagRule, *, detail: bool) -> None:
        self.rules, self.rule, self.detail = rules, rule, detail
        self.strategy = advantage._basic(rules)
        self.recent: deque[SpotSignal] = deque(maxlen=max(0, (rule.window - 1) * rules.spots))
        self.flagged: list[SpotSignal] = []
        self.signals: list[SpotSignal] = []
        self.spot_shoes = 0
        self.judged: set[int | None] = set()
        self.shuffles = 0
        self.counter: ShoeCounter | None = None
        self.complete = False
        self.rounds = 0

    def shuffled(self, discards: bool) -> None:
        """A ``shuffle_done``: the shoe in play ended (judged), a new one starts."""
        self.end()
        if not discards:
            self.shuffles += 1
        self.counter, self.complete, self.rounds = ShoeCounter(self.rules, self.strategy), False, 0

    def add(self, round_: Mapping[str, Any], *, keep: bool) -> None:
        if self.counter is not None:
            self.counter.add(round_, keep=keep)
            self.rounds += 1

    def end(self, *, last: bool = False) -> None:
        """Judge the shoe in play (at the journal's end only if it was complete: the next shuffle asked for)."""
        counter, self.counter = self.counter, None
        if counter is None or (last and (not self.complete or not self.rounds)):
            return
        out = counter.signals(self.shuffles, self.rule, list(self.recent) if self.rule.window > 1 else [])
        self.recent.extend(out)
        self.spot_shoes += len(out)
        if out:
            self.judged.add(self.shuffles)
        self.flagged.extend(s for s in out if s.flagged)
        if self.detail:
            self.signals.extend(out)


def read_shift(records: Iterable[Mapping[str, Any]], rules: Rules, *, since: float | None = None,
               until: float | None = None, detail: bool = False, chart: bool = False,
               rule: FlagRule = RULE) -> Shift:
    """One pass over a journal's public records (``seq`` order): the shift's figures and signals."""
    builder = RoundBuilder()
    shoes = _Shoes(rules, rule, detail=detail)
    tally: Tally | None = None
    baseline = NO_TOTALS
    points: list[ChartPoint] = []
    past = False  # a round started at or after ``until`` was seen: read on to the end of its shoe only
    dealers = DealerFold(since=since, until=until)
    for body in records:
        kind = body.get("type")
        dealers.take(body)
        if kind == "shuffle_done":
            if past:
                shoes.complete = True
                break
            shoes.shuffled(bool(body.get("discards")))
        elif kind == "shuffle_requested" and shoes.counter is not None and not builder.in_round:
            shoes.complete = True
        done = builder.add(body)
        if done is None:
            continue
        started = done["started"]
        dealer = dealers.round_dealer()
        if since is not None and started < since:
            baseline = totals_after(done)
            shoes.add(done, keep=False)
            continue
        if until is not None and started >= until:
            past = True
            shoes.add(done, keep=False)
            continue
        if tally is None:
            tally = Tally(before=baseline)
        handle, net = tally.handle, tally.house_net
        tally.add(done)
        dealers.start_clock(started)  # the dealers' time: the table's, from its first round's start to its last's end
        dealers.clock_to(done["ended"])
        dealers.add_round(dealer, round_sums(done, tally.handle - handle, tally.house_net - net))
        shoes.add(done, keep=True)
        if chart:
            points.append(ChartPoint(tally.rounds, tally.house_net, tally.initial, tally.squares, tally.pairs))
    shoes.end(last=True)
    figures = tally_figures(tally if tally is not None else Tally(before=baseline), rules)
    return Shift(figures=figures, flagged=shoes.flagged, signals=shoes.signals, spot_shoes=shoes.spot_shoes,
                 shoes=len(shoes.judged), points=points, squares=tally.squares if tally is not None else 0,
                 pairs=tally.pairs if tally is not None else 0, dealers=dealers.finish())
