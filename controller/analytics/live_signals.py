"""The advantage-play signals, live: each spot judged at each shoe end, for the ``analytics`` topic.

Reported, never acted on (issue 18: a live "hot shoe" alert would invite preferential shuffling, itself a
regulatory risk). :class:`SignalWatch` takes the table's public records in ``seq`` order, as
:class:`controller.analytics.live.LiveAnalytics` does, keeps the settled rounds of the shoe in play, and at
its end (the next shuffle asked for, or done) judges them with :func:`controller.analytics.advantage.shoe_signals`,
the very function ``tablectl report`` uses, over the same window of shoes. The basic strategy it needs
(a second or two of arithmetic, once per process and set of rules) is worked out off the event loop by
:func:`warm` long before the first shoe ends (a table deals a shoe in half an hour).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from controller.analytics import advantage
from controller.analytics.advantage import RULE, SpotSignal
from controller.game.rules import Rules
from controller.records import RoundBuilder

#: the flagged spots kept for the topic: the last shoes' (the window the flag judges over)
KEEP_FLAGS = 12


def warm(rules: Rules) -> None:
    """Work out the rules' basic strategy (call it on a worker thread: the shoe ends then find it ready)."""
    advantage._basic(rules)


class SignalWatch:
    """The spots flagged at the shoe ends since the table opened (``flagged()``, the topic's ``flagged_spots``).
    ``rules`` gives the rules in force (they change only between shoes).

    Shoes are numbered as the table counts its shuffles (full shuffles since the journal began: the engine's
    ``shuffles``, the shuffle-quality scores' ``shoe``, and ``tablectl report``'s numbers). The watch reads
    the records only from the table's last open, so it counts from there and :meth:`align` (after the
    first read) shifts its numbers onto the table's count; an open starts the flags again, not the count
    nor the shoe in play (a table closed and opened again mid-shoe goes on dealing it).
    """

    def __init__(self, rules: Callable[[], Rules]) -> None:
        self._rules = rules
        self.reset()

    def reset(self) -> None:
        """Forget everything: the records are read again from the last open (the count is aligned again)."""
        self._shuffles = 0
        self._aligned = False
        self._builder = RoundBuilder()
        self._shoe: int | None = None  # the shoe in play (full shuffles so far), None before the first
        self._rounds: list[dict[str, Any]] = []
        self._signals: list[SpotSignal] = []
        self._flags: list[dict[str, Any]] = []

    @property
    def shoe(self) -> int | None:
        """The number of the shoe in play (None before the first shuffle read)."""
        return self._shoe

    @property
    def signals(self) -> list[SpotSignal]:
        """The spots' signals of the last shoes judged (the flag's window), oldest first."""
        return list(self._signals)

    def align(self, shuffles: int) -> None:
        """The table counts ``shuffles`` full shuffles now: once after the records were first read (the watch
        counted only those since the last open), number every shoe as the table does."""
        if self._aligned:
            return
        self._aligned = True
        shift = shuffles - self._shuffles
        if shift == 0:
            return
        self._shuffles += shift
        self._shoe = None if self._shoe is None else self._shoe + shift
        self._signals = [replace(s, shoe=None if s.shoe is None else s.shoe + shift) for s in self._signals]
        self._flags = [{**f, "shoe": f["shoe"] + shift} if isinstance(f.get("shoe"), int) else f for f in self._flags]

    def take(self, body: Mapping[str, Any]) -> None:
        """One public record, in ``seq`` order."""
        kind = body.get("type")
        if kind == "table_opened":
            self._flags = []  # the flags since this open; the shoes, their count and window go on (as the report's)
        elif kind == "shuffle_done":
            self._judge()
            if not body.get("discards"):
                self._shuffles += 1
            self._shoe = self._shuffles
        elif kind == "shuffle_requested" and not self._builder.in_round:
            self._judge()
        done = self._builder.add(body)
        if done is not None and self._shoe is not None:
            self._rounds.append(done)

    def _judge(self) -> None:
        rounds, self._rounds = self._rounds, []
        if self._shoe is None or not rounds:
            return
        rules = self._rules()
        recent = self._signals[max(0, len(self._signals) - (RULE.window - 1) * rules.spots):] if RULE.window > 1 else []
        signals = advantage.shoe_signals(rounds, rules, shoe=self._shoe, earlier=recent)
        self._signals = (self._signals + signals)[-RULE.window * rules.spots:]
        self._flags = (self._flags + advantage.flagged_json(signals))[-KEEP_FLAGS:]

    def flagged(self) -> Sequence[Mapping[str, Any]]:
        return list(self._flags)
