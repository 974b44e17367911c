"""The shuffle-quality monitor at the table: the engine's inputs in, each shoe's score and its alarm out.

:class:`ShuffleWatch` reads the inputs the table service applies (the engine's own record of what left
the shoe, in order) and keeps :class:`controller.analytics.shuffle_quality.ShuffleMonitor` fed: a card read, a hole
card dealt face down and its value at the reveal, a shuffle (a new shoe: the one that ended is judged),
a discard reshuffle (NJ 19:47-2.15(f): the shoe's order stops there), new decks, another number of decks.

A shoe that fails is reported through the engine's :class:`~controller.game.events.Irregularity` input
(source :data:`ALARM_SOURCE`, not halting), so the alarm is journaled and replayed like any other and
recall shows it; while one is active, a further failing shoe raises no second alarm (its score is in
the analytics). The watch keeps no state of its own: at a start it is rebuilt from the journal's last
shoes (:meth:`ShuffleWatch.rebuild`), which also says whether the last shoe failed in an input whose
alarm a crash kept out of the journal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from cardnotation import CARDS, CardError, parse_card
from controller.analytics.shuffle_quality import KEEP, ShuffleMonitor, ShuffleScore
from controller.contract.alarms import SHUFFLE_QUALITY_ALARM
from controller.game import events as ev
from controller.journal import InputRow, Journal
from controller.service.core import engine_input
from controller.service.ratings import is_engine_input

log = logging.getLogger("controller.shuffle")

#: the source of the irregularity a failing shoe raises: the engine's alarm code is ``irregularity:<source>``
ALARM_SOURCE = "shuffle_quality"
ALARM_CODE = SHUFFLE_QUALITY_ALARM  # DESIGN's code (the Irregularity names it)
#: shoes the rebuild at a start looks for in the journal (their scores come back with it)
REBUILT_SHOES = KEEP + 2


def alarm_detail(score: ShuffleScore) -> str:
    """The alarm's message: which shoe, its score against the threshold, and the three traces."""
    return (f"shoe {score.shoe if score.shoe is not None else '?'} (deck set {score.deck_set}) failed the "
            f"shuffle-quality check: score {score.score:.1f} above {score.threshold:g} (rising sequences "
            f"z {score.rising_z:.1f}, neighbour pairs z {score.pairs_z:.1f}: {score.pairs_survived} kept where "
            f"{score.pairs_expected:.0f} expected, position correlation z {score.correlation_z:.1f}; "
            f"{score.cards} cards compared): surveillance to check the shuffler")


def _card(text: Any) -> str | None:
    if isinstance(text, str) and text in CARDS:
        return text
    try:
        return parse_card(text)
    except CardError:
        return None


class ShuffleWatch:
    """The engine's inputs in order -> the monitor (see the module docstring)."""

    def __init__(self, decks: int) -> None:
        self.monitor = ShuffleMonitor(decks)
        #: the table's shuffle count as the engine keeps it (full shuffles; a discard reshuffle is none)
        self.shuffles = 0
        self._deck_set = "A"
        self._discards_due = False
        self._handlers: dict[type[Any], Callable[[Any], ShuffleScore | None]] = {
            ev.CardDrawn: self._drawn, ev.HoleCardDealt: self._face_down, ev.DealerReveal: self._reveal,
            ev.ShoeEmpty: self._shoe_empty, ev.ShuffleDone: self._shuffled, ev.DecksChanged: self._decks_changed,
            ev.RulesChanged: self._rules_changed, ev.TableOpened: self._opened,
        }

    @property
    def types(self) -> frozenset[str]:
        """The input types it reads (a reader of a whole journal builds no event of the others)."""
        return frozenset(t.TYPE for t in self._handlers)

    def observe(self, event: ev.Event) -> ShuffleScore | None:
        """One input the engine took; the score of the shoe that ended with it, if it ended and was judged."""
        handler = self._handlers.get(type(event))
        return None if handler is None else handler(event)

    def recent(self, n: int = 10) -> list[ShuffleScore]:
        return self.monitor.recent(n)

    # -- inputs ------------------------------------------------------------------------------------

    def _drawn(self, e: ev.CardDrawn) -> None:
        self.monitor.card(_card(e.card))

    def _face_down(self, e: ev.HoleCardDealt) -> None:
        self.monitor.card(None)

    def _reveal(self, e: ev.DealerReveal) -> None:
        card = _card(e.card) if e.card is not None else None
        if card is not None:
            self.monitor.reveal(card)

    def _shoe_empty(self, e: ev.ShoeEmpty) -> None:
        self._discards_due = True

    def _shuffled(self, e: ev.ShuffleDone) -> ShuffleScore | None:
        if self._discards_due:  # the engine takes the next shuffle as the discards' (NJ 19:47-2.15(f))
            self._discards_due = False
            self.monitor.interrupt()
            return None
        self.shuffles += 1
        if e.deck_set is not None:
            self._deck_set = e.deck_set
        return self.monitor.new_shoe(self.shuffles, self._deck_set)

    def _decks_changed(self, e: ev.DecksChanged) -> None:
        self._deck_set = e.deck_set
        self.monitor.forget()

    def _rules_changed(self, e: ev.RulesChanged) -> None:
        decks = e.rules.get("decks") if isinstance(e.rules, dict) else None
        if isinstance(decks, int) and not isinstance(decks, bool) and decks != self.monitor.decks and 1 <= decks <= 8:
            self.monitor.reset(decks)

    def _opened(self, e: ev.TableOpened) -> None:
        if self.shuffles == 0:
            self._deck_set = e.deck_set

    # -- a start -------------------------------------------------------------------------------------

    def rebuild(self, journal: Journal, *, shuffles: int, decks: int) -> ShuffleScore | None:
        """Start again from the journal's last shoes (the engine now counts ``shuffles`` and plays ``decks``);
        return the last shoe's score when it failed in the journal's very last input (a shuffle whose alarm
        a crash kept out of the journal), else None."""
        rows = _last_shoes(journal, REBUILT_SHOES, self.types)
        events = [engine_input(row.event) for row in rows]
        self.monitor = ShuffleMonitor(decks, threshold=self.monitor.threshold)
        self.shuffles = shuffles - _full_shuffles(events)
        self._deck_set = "A"
        self._discards_due = False
        last: ShuffleScore | None = None
        for event in events:
            last = self.observe(event)
        failed_last = events and isinstance(events[-1], ev.ShuffleDone) and last is not None and not last.passed
        # ... in the engine's last input (what came after it, if anything, is no input of the engine's)
        if failed_last and not any(is_engine_input(row.event) for row in journal.inputs_since(rows[-1].id)):
            return last
        return None


def _full_shuffles(events: Sequence[ev.Event]) -> int:
    """The shuffles among ``events`` the engine counts (not a discard reshuffle, which follows a shoe_empty)."""
    count, discards = 0, False
    for event in events:
        if isinstance(event, ev.ShoeEmpty):
            discards = True
        elif isinstance(event, ev.ShuffleDone):
            if discards:
                discards = False
            else:
                count += 1
    return count


def _last_shoes(journal: Journal, shoes: int, types: Collection[str]) -> list[InputRow]:
    """The journal's inputs of ``types`` since the shuffle before its last ``shoes`` shuffles (all of them if it
    holds fewer): whatever tells a discard reshuffle from a full one (a ``shoe_empty`` before it) comes with them.
    Bounded: the shuffles are found from the journal's end by their ids, and only those inputs decoded."""
    shuffled = journal.last_ids_of(ev.ShuffleDone.TYPE, shoes + 1)
    return list(journal.inputs_of(types, shuffled[-1] if len(shuffled) > shoes else 0))
