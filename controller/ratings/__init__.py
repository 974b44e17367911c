"""Rated play: a player's ratings from the table's own events (pure: no I/O, no clock; times come in events).

:class:`RatingBook` takes the table's published event bodies and the card readers' ``card_in`` /
``card_out`` in ``seq`` order and returns each rating as it ends (:class:`Rating`, ``to_json()``:
DESIGN "Rated play"'s fields). :class:`Judge` prices a decision against basic strategy with the
engine's own EVs (:mod:`controller.strategy.ev`). docs/ratings.md explains every figure.
"""

from __future__ import annotations

from controller.ratings.book import DEFAULT_IDLE_ROUNDS, RatingBook, RatingInputError, UnratedPlay
from controller.ratings.costs import Judge, Judged
from controller.ratings.rating import DEPARTURES_KEPT, OPEN_DEPARTURES, Departure, Rating, masked

__all__ = [
    "DEFAULT_IDLE_ROUNDS",
    "DEPARTURES_KEPT",
    "OPEN_DEPARTURES",
    "Departure",
    "Judge",
    "Judged",
    "Rating",
    "RatingBook",
    "RatingInputError",
    "UnratedPlay",
    "masked",
]
