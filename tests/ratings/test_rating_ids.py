"""A rating's id is unique for the table's whole journal (issue #35): cards left in their readers through a
``close`` and a reopen, or idle ratings reopening at one round's wagers, never share an id."""

from __future__ import annotations

from typing import Any

from controller.game import events as ev
from controller.ratings import Rating, RatingBook
from tests.ratings.session import Session


def _feed(book: RatingBook, events: list[dict[str, Any]]) -> list[Rating]:
    closed: list[Rating] = []
    for event in events:
        closed += book.handle(event)
    return closed


def _reopen(session: Session) -> None:
    session._feed(ev.TableOpened(now=session.now + 2.0))
    session.croupier.between_rounds()


def test_cards_kept_in_through_two_closes_give_each_rating_its_own_id() -> None:
    session = Session(seed=3)
    for spot, player in ((1, "41"), (3, "43"), (5, "45")):
        session.card_in(spot, player)
    for _ in range(3):
        for _ in range(2):
            session.play_round({1: 500, 3: 500, 5: 500})
        session.close()
        _reopen(session)
    session.close()
    book = RatingBook(session.rules, table_id="t01")
    ended = _feed(book, session.events)
    assert len(ended) == 9
    ids = [r.rating_id for r in ended]
    assert len(set(ids)) == len(ids), ids
    assert all(r.rounds == 2 for r in ended)


def test_idle_ratings_reopening_at_the_same_wagers_get_their_own_ids() -> None:
    session = Session(seed=4)
    session.card_in(2, "42")
    session.card_in(4, "44")
    session.play_round({2: 500, 4: 500})
    session.play_round({6: 500})
    session.play_round({2: 500, 4: 500})  # both idle ratings ended (idle_rounds=1): two new ones, one event
    session.close()
    ended = _feed(RatingBook(session.rules, table_id="t01", idle_rounds=1), session.events)
    ids = [r.rating_id for r in ended]
    assert len(ids) == 4 and len(set(ids)) == 4, ids
    assert all(i.startswith("t01-") for i in ids)


def test_the_ids_are_the_same_when_the_same_stream_is_read_again() -> None:
    session = Session(seed=5)
    session.card_in(1, "41")
    session.card_in(2, "42")
    session.play_round({1: 500, 2: 500})
    session.close()
    _reopen(session)
    session.play_round({1: 500, 2: 500})
    session.close()
    first = [r.rating_id for r in _feed(RatingBook(session.rules, table_id="t01"), session.events)]
    again = [r.rating_id for r in _feed(RatingBook(session.rules, table_id="t01"), session.events)]
    assert first == again and len(set(first)) == 4
