"""Procedure details: cut card between rounds, the shuffler's own start report, several spots per player."""

from __future__ import annotations

import pytest

from controller.game import events as ev
from controller.game.effects import StartShuffle
from controller.game.errors import IllegalAction
from controller.game.table import Table
from controller.profiles import load_rules


def _open(profile: str = "house-h17") -> Table:
    t = Table(load_rules(profile, {"burn": 0}))
    t.handle(ev.TableOpened(now=0.0))
    t.handle(ev.ShuffleStarted())  # the shuffler reports the start the engine asked for
    t.handle(ev.ShuffleDone(count=t.rules.cards_in_shoe))
    return t


def test_shuffle_started_is_accepted_while_shuffling() -> None:
    t = _open()
    assert t.phase == "betting" and t.shuffles == 1


def test_cut_card_with_wagers_down_shuffles_after_that_round() -> None:
    t = _open()
    t.handle(ev.BetPlaced(1, 1000))
    out = t.handle(ev.CutCardReached())
    assert not any(isinstance(e, StartShuffle) for e in out) and not t.shuffle_due
    t.handle(ev.NoMoreBets())
    for card in ["TS", "9D", "KC", "8H"]:
        t.handle(ev.CardDrawn(card))
    out = t.handle(ev.Decision(1, "stand"))
    assert t.phase == "settled" and t.shuffle_due
    assert any(isinstance(e, StartShuffle) for e in out)
    with pytest.raises(IllegalAction, match="shuffled before the next round"):
        t.handle(ev.BetPlaced(1, 1000))


def test_cut_card_after_settlement_requests_the_shuffle_at_once() -> None:
    t = _open()
    t.handle(ev.BetPlaced(1, 1000))
    t.handle(ev.NoMoreBets())
    for card in ["TS", "9D", "KC", "8H"]:
        t.handle(ev.CardDrawn(card))
    t.handle(ev.Decision(1, "stand"))
    out = t.handle(ev.CutCardReached())
    assert t.shuffle_due and any(isinstance(e, StartShuffle) for e in out)


def test_a_fourth_player_ends_multi_spot_play_house_h17() -> None:
    t = _open("house-h17")
    t.handle(ev.BetPlaced(1, 1000, player="p1"))
    t.handle(ev.BetPlaced(2, 1000, player="p1"))  # fewer than four players: allowed
    for spot, player in ((3, "p2"), (4, "p3"), (5, "p4")):
        t.handle(ev.BetPlaced(spot, 1000, player=player))
    before = t.snapshot()
    with pytest.raises(IllegalAction, match="p1 must play one spot: 4 players"):
        t.handle(ev.NoMoreBets())
    assert t.snapshot() == before
    t.handle(ev.BetPlaced(2, 0, player="p1"))
    t.handle(ev.NoMoreBets())
    assert t.phase == "dealing"
