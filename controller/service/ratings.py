"""Rated play at the table: the rating book fed from the table's own stream, and what it journals and shows.

:class:`controller.ratings.RatingBook` is pure; this module is its place in the table service
(DESIGN "Rated play", docs/ratings.md):

* the card readers' ``card_in`` / ``card_out`` are journaled as inputs of their own
  (:data:`CARD_INPUTS`: the spot and the number as read, chained like every row) with a public record whose
  number is masked (:func:`public_card_body`: ``{"type": "card_in", "spot": 3, "player": "*******614"}``, and
  ``{"type": "card_out", ...}`` likewise): the full number never reaches ``events``, ``state``, ``history`` or
  ``analytics``;
* every published record, and each card input with its full number, goes to the book in ``seq`` order
  (:meth:`TableRatings.observe`): a card input before its commit, an engine event's records right after its
  commit and state (pricing a departure takes the engine's EV, milliseconds: never on the card's path); a
  rating the book ends is journaled whole as an input row of type :data:`RATING_INPUT` (its ``rating``:
  ``to_json()``) right after the event that ended it (a start journals one a crash kept out), then
  published on ``<root>/ratings``;
* new rules (``rules_changed``: a profile changed, taken between shoes) reach the book with the ``rules`` of
  their journaled input (the public record names only the profile and a digest), so each round is priced under
  the rules it was played under;
* between rounds, once the records since the last one outweigh what the open ratings hold, the whole book is
  journaled as an input row of type :data:`CHECKPOINT_INPUT` (``seq``: the last record it has taken; ``book``:
  :meth:`RatingBook.checkpoint`), chained like every row;
* at start the book is rebuilt from the journal (:meth:`TableRatings.rebuild`): from its last checkpoint (the
  whole journal when there is none), the records after it in ``seq`` order, each card record given the full
  number of its input and each ``rules_changed`` the rules of its input (one input, one record, in the same
  order), so a rating survives a ``kill -9``: resumed, neither split nor lost, and a start reads what the open
  ratings hold, not the whole journal.

None of these inputs is the engine's: :func:`is_engine_input` tells the replay to pass them by.
A failure of the book is logged (never the number) and never stops the table: ratings are the pit's aid.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

from controller.game.rules import Rules
from controller.ratings import DEFAULT_IDLE_ROUNDS, OPEN_DEPARTURES, Rating, RatingBook, RatingInputError, masked
from controller.service import strategy_cache

log = logging.getLogger("controller.service.ratings")

#: the card readers' inputs, journaled with the full number beside the engine's inputs
CARD_INPUTS: Final = frozenset({"card_in", "card_out"})
#: a rating the book ended, journaled whole (``rating``: :meth:`Rating.to_json`)
RATING_INPUT: Final = "rating"
#: the whole book between rounds (``seq``: the last record it took; ``book``: :meth:`RatingBook.checkpoint`)
CHECKPOINT_INPUT: Final = "ratings_checkpoint"
#: inputs of the table that are not the engine's: never replayed into it
TABLE_INPUTS: Final = CARD_INPUTS | {RATING_INPUT, CHECKPOINT_INPUT}
#: the engine's input whose rules the book is given with its record (the record names only profile and digest)
RULES_INPUT: Final = "rules_changed"
#: the inputs a rebuild gives their records (the card number as read, the rules in full)
_MATCHED: Final = CARD_INPUTS | {RULES_INPUT}
#: a checkpoint is journaled once at least this many records were taken since the last one...
CHECKPOINT_RECORDS: Final = 1000
#: ... and at least this many times the departures the open ratings hold (so a checkpoint, whose size is the open
#: ratings', never adds more than a fraction to the journal, however long a rating runs)
CHECKPOINT_WEIGHT: Final = 4
#: the records after which the open ratings are republished (retained ``ratings/open``)
OPEN_AFTER: Final = CARD_INPUTS | {"round_settled", "table_closed"}


def is_engine_input(journaled: Mapping[str, Any]) -> bool:
    """Whether a journaled input row is the engine's (not a card reader's nor a closed rating)."""
    return journaled.get("type") not in TABLE_INPUTS


def card_input(kind: str, spot: int, player: str) -> dict[str, Any]:
    """The journaled input of a card in (or out) of the reader at ``spot``: the number as read."""
    if kind not in CARD_INPUTS:
        raise ValueError(f"a card input is one of {', '.join(sorted(CARD_INPUTS))}, not {kind!r}")
    return {"type": kind, "spot": spot, "player": player}


def public_card_body(kind: str, spot: int, player: str, ts: float) -> dict[str, Any]:
    """The ``events`` record of a card input: the number masked (dashboards read ``events``)."""
    return {"ts": round(ts, 3), "type": kind, "spot": spot, "player": masked(player)}


class _Journal(Protocol):
    def inputs_since(self, input_id: int = 0) -> Iterator[Any]: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[Any]: ...

    def last_input_with(self, key: str, *, within: int | None = None) -> Any: ...

    @property
    def last_seq(self) -> int: ...


class TableRatings:
    """One table's ratings: the book, fed by the core, and what the table publishes of it."""

    def __init__(self, rules: Rules, *, table_id: str, idle_rounds: int = DEFAULT_IDLE_ROUNDS) -> None:
        self.table_id = table_id
        self.book = RatingBook(rules, table_id=table_id, idle_rounds=idle_rounds)
        #: events the book refused (logged by seq and type): a rating may be short of them
        self.refused = 0
        #: each rated spot's public view as of the last event taken (made then, so a ``state`` only copies it in)
        self._view: dict[int, dict[str, Any]] = {}
        #: the input id of the checkpoint the last :meth:`rebuild` started from (0: the journal's start)
        self.rebuilt_from = 0
        self._taken = 0  # records taken since the last checkpoint

    def observe(self, bodies: Iterable[Mapping[str, Any]], *, view: bool = True) -> list[Rating]:
        """Feed the book published bodies (``seq``, ``ts``, ``type``, ...; a card event with its full number)
        in order; return the ratings they ended. ``view``: make the spots' public view for the next states."""
        closed: list[Rating] = []
        for body in bodies:
            self._taken += 1
            try:
                closed.extend(self.book.handle(dict(body)))
            except Exception as exc:  # the book is the pit's aid: never in the round's way
                self.refused += 1
                log.warning("ratings: an event was not taken", extra={
                    "table": self.table_id, "seq": body.get("seq"), "event": body.get("type"),
                    "reason": type(exc).__name__})
        if view:
            self._view = self.book.spot_view()
        return closed

    def checkpoint_row(self, seq: int) -> dict[str, Any] | None:
        """The journal's checkpoint row of the book as it stands after record ``seq``, when one is due (see
        :data:`CHECKPOINT_RECORDS`, :data:`CHECKPOINT_WEIGHT`) and no round is in play; else None."""
        held = sum(len(r.departures) for r in self.book.open_ratings())
        if self._taken < max(CHECKPOINT_RECORDS, CHECKPOINT_WEIGHT * held):
            return None
        state = self.book.checkpoint()
        if state is None:
            return None
        self._taken = 0
        return {"type": CHECKPOINT_INPUT, "seq": seq, "book": state}

    def _last_checkpoint(self, journal: _Journal) -> tuple[int, int, RatingBook] | None:
        """(input id, seq, book) of the journal's last checkpoint, or None (none, or one that does not read:
        logged, and the whole journal is read)."""
        row = journal.last_input_with("book")
        if row is None or row.event.get("type") != CHECKPOINT_INPUT:
            return None
        seq, state = row.event.get("seq"), row.event.get("book")
        try:
            if not isinstance(seq, int) or isinstance(seq, bool) or not 0 <= seq <= journal.last_seq:
                raise RatingInputError(f"ratings checkpoint: seq {seq!r} is not a record of this journal")
            if not isinstance(state, dict):
                raise RatingInputError("ratings checkpoint: no book")
            book = RatingBook.restore(state, table_id=self.table_id, idle_rounds=self.book.idle_rounds)
        except RatingInputError as exc:
            log.warning("ratings: the checkpoint at input %d is not used (%s): the ratings are read from the whole "
                        "journal instead, the same ratings, only slower", row.id, exc,
                        extra={"table": self.table_id})
            return None
        return int(row.id), seq, book

    def rebuild(self, journal: _Journal, *, checkpoint: bool = True) -> list[Rating]:
        """Feed the book the journal's stream from its last checkpoint (``checkpoint=False``, or none: from its
        start): records in ``seq`` order, each card record with the number of its input and each
        ``rules_changed`` with the rules of its input; return the ratings the stream ended (journaled the first
        time, unless a crash came between the event and the rating's row)."""
        rules, idle = self.book.rules, self.book.idle_rounds
        found = self._last_checkpoint(journal) if checkpoint else None
        after_input, after_seq, self.book = found or (0, 0, RatingBook(rules, table_id=self.table_id,
                                                                       idle_rounds=idle))
        self.rebuilt_from = after_input
        self._view = {}
        self._taken = 0
        matched = (row.event for row in journal.inputs_since(after_input) if row.event.get("type") in _MATCHED)
        ended: list[Rating] = []
        for row in journal.records(after_seq + 1):
            body = json.loads(row.body)
            kind = body.get("type")
            if kind in _MATCHED:
                journaled = next(matched, None)
                if (journaled is None or journaled.get("type") != kind
                        or (kind in CARD_INPUTS and journaled.get("spot") != body.get("spot"))):
                    log.error("ratings: the journal's %s records and inputs disagree at seq %s: "
                              "the ratings start from here", kind, body.get("seq"), extra={"table": self.table_id})
                    self.book = RatingBook(self.book.rules, table_id=self.table_id, idle_rounds=idle)
                    continue
                if kind == RULES_INPUT:
                    body["rules"] = journaled.get("rules")
                else:
                    body["player"] = journaled.get("player")
            ended.extend(self.observe((body,), view=False))
        self._view = self.book.spot_view()
        return ended

    def open_json(self) -> list[dict[str, Any]]:
        """The retained ``ratings/open``: every running rating (tracking and surveillance read it), its figures in
        full and its latest :data:`~controller.ratings.OPEN_DEPARTURES` departures (``departures_count``: all of
        them): republished after every settlement, so its size must not grow with the rating's length."""
        return [r.to_json(departures=OPEN_DEPARTURES) for r in self.book.open_ratings()]

    def add_to_state(self, state: dict[str, Any]) -> None:
        """``state.spots[n].rating`` for each spot a running rating holds (``rated: true``, the number masked), as
        of the last event the book took (the view is made there, off the card's path)."""
        view = self._view
        if not view:
            return
        spots = state.setdefault("spots", {})
        for spot, public in view.items():
            entry = spots.get(str(spot))
            if entry is None:
                entry = spots[str(spot)] = {"hands": [], "insurance": None}
            entry["rating"] = public


def for_book(bodies: Sequence[Mapping[str, Any]], seqs: Sequence[int],
             journaled: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An engine event's records as the book takes them: numbered, and a ``rules_changed`` with the ``rules`` of
    its input ``journaled`` (its public record names only the profile and a digest)."""
    taken = [{"seq": n, **body} for n, body in zip(seqs, bodies, strict=True)]
    if journaled.get("type") == RULES_INPUT:
        for body in taken:
            if body["type"] == RULES_INPUT:
                body["rules"] = journaled.get("rules")
    return taken


def rating_rows(ratings: Sequence[Rating]) -> list[dict[str, Any]]:
    """The journal's input rows of ended ratings."""
    return [{"type": RATING_INPUT, "rating": r.to_json()} for r in ratings]


def enable_ratings(core: _Core, *, idle_rounds: int = DEFAULT_IDLE_ROUNDS) -> TableRatings:
    """Rate the players at ``core``'s table (before its recovery, which rebuilds the open ratings). The dealer's
    outcomes its rules' edge and EVs are priced with are taken from what the table kept of them when that checks
    (:mod:`controller.service.strategy_cache`), else worked out now and kept."""
    strategy_cache.warm(core.rules, core.journal)
    ratings = TableRatings(core.rules, table_id=core.table_id, idle_rounds=idle_rounds)
    core.ratings = ratings
    return ratings


class _Core(Protocol):
    rules: Rules
    table_id: str
    journal: Any
    ratings: TableRatings | None
