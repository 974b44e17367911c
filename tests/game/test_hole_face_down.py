"""A shoe that withholds the hole card: the engine plays on the peek reader's word and the reveal."""

from __future__ import annotations

import pytest

from controller.game import events as ev
from controller.game.effects import Record, RequestPeek, RevealHole
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.table import Table
from controller.profiles import load_rules


def _dealt(profile: str, up: str, cards: tuple[str, str, str]) -> tuple[Table, list[object]]:
    t = Table(load_rules(profile, {"burn": 0}))
    t.handle(ev.TableOpened(now=0.0))
    t.handle(ev.ShuffleDone(count=t.rules.cards_in_shoe))
    t.handle(ev.BetPlaced(1, 1000))
    t.handle(ev.NoMoreBets())
    effects: list[object] = []
    for e in (ev.CardDrawn(cards[0]), ev.CardDrawn(up), ev.CardDrawn(cards[1]), ev.HoleCardDealt()):
        effects += t.handle(e)
    return t, effects


def test_hole_card_is_never_known_before_the_reveal_and_the_round_completes() -> None:
    t, effects = _dealt("house-h17", "TS", ("9C", "TS", "8D"))
    assert any(isinstance(e, RequestPeek) for e in effects)
    assert t.snapshot()["dealer"]["cards"] == ["TS", None]
    assert t.hole_at == 3, "the shoe position of the face-down card (burn 0: 4th card out)"
    t.handle(ev.PeekResult(blackjack=False))
    out_stand = t.handle(ev.Decision(1, "stand"))
    assert any(isinstance(e, RevealHole) for e in out_stand), "the shell asks the shoe to turn the hole card"
    assert t.phase == "dealer" and t.snapshot()["awaiting"] == "reveal"
    assert not t.wants_card, "no dealer card before the hole card is turned"
    with pytest.raises(MalformedEvent, match="must carry the card"):
        t.handle(ev.DealerReveal())
    out = t.handle(ev.DealerReveal(card="7H"))
    records = [e for e in out if isinstance(e, Record)]
    assert records[0].type == "hole_card" and records[0].data["card"] == "7H"
    assert t.phase == "settled"  # 17 stands
    assert t.spots[1].hands[0].outcome == "win" and t.spots[1].net == 1000


def test_peek_blackjack_waits_for_the_reveal_then_collects() -> None:
    t, _ = _dealt("house-h17", "AS", ("9C", "TS", "8D"))
    t.handle(ev.InsuranceClosed())
    assert any(isinstance(e, RevealHole) for e in t.handle(ev.PeekResult(blackjack=True)))
    assert t.phase == "dealer" and t.awaiting_reveal
    with pytest.raises(IllegalAction):
        t.handle(ev.Decision(1, "stand"))
    t.handle(ev.DealerReveal(card="KD"))
    assert t.phase == "settled" and t.spots[1].net == -1000 and not t.alarms


def test_reveal_contradicting_the_peek_raises_an_integrity_alarm() -> None:
    t, _ = _dealt("house-h17", "AS", ("9C", "TS", "8D"))
    t.handle(ev.InsuranceClosed())
    t.handle(ev.PeekResult(blackjack=True))
    t.handle(ev.DealerReveal(card="5D"))
    assert [a.code for a in t.alarms.values()] == ["peek_mismatch"] and t.halted


def test_no_record_or_snapshot_carries_a_face_down_hole_card() -> None:
    t, effects = _dealt("house-shoe-surrender", "6S", ("9C", "TS", "8D"))
    assert all(e.data.get("card") is None for e in effects if isinstance(e, Record) and e.data.get("hole"))
    assert t.snapshot()["dealer"] == {"cards": ["6S", None], "total": 6, "soft": False, "blackjack": None}
