"""The engine's procedure, event by event (controller/game/table.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controller.contract.topics import compact_json
from controller.game import events as ev
from controller.game.effects import AlarmCleared, AlarmRaised, DealingLocked, Effect, Record, RequestPeek, StartShuffle
from controller.game.errors import IllegalAction, MalformedEvent
from controller.game.rules import Rules, RulesFormatError, rules_digest, rules_from_json, rules_to_json
from controller.game.table import Table
from controller.profiles import load_rules

T0 = 1_790_000_000.0  # an epoch second, passed in (the core reads no clock)


def new_table(profile: str = "nj-shoe", **overrides: Any) -> Table:
    t = Table(load_rules(profile, overrides))
    t.handle(ev.TableOpened(now=T0))
    t.handle(ev.ShuffleDone(count=t.rules.cards_in_shoe))
    return t


def feed(t: Table, *events: ev.Event) -> list[Effect]:
    out: list[Effect] = []
    for e in events:
        out.extend(t.handle(e))
    return out


def cards(t: Table, *cs: str) -> list[Effect]:
    return feed(t, *(ev.CardDrawn(c) for c in cs))


def start(t: Table, bets: dict[int, int], burn: list[str], deal: list[str]) -> list[Effect]:
    """Bets, burn card(s), no more bets, the deal."""
    out = feed(t, *(ev.BetPlaced(spot=s, amount=a) for s, a in bets.items()))
    out += cards(t, *burn)
    out += feed(t, ev.NoMoreBets())
    out += cards(t, *deal)
    return out


def alarms(effects: list[Effect]) -> list[AlarmRaised]:
    return [e for e in effects if isinstance(e, AlarmRaised)]


def records(effects: list[Effect], type_: str) -> list[dict[str, Any]]:
    return [e.data for e in effects if isinstance(e, Record) and e.type == type_]


def refused(t: Table, event: ev.Event, text: str = "", exc: type[Exception] = IllegalAction) -> str:
    before = t.snapshot()
    with pytest.raises(exc) as info:
        t.handle(event)
    assert t.snapshot() == before
    assert text in str(info.value), str(info.value)
    return str(info.value)


# ---------------------------------------------------------------- deal order and burn


def test_deal_order_burn_then_spots_from_the_left_dealer_up_second_round_hole() -> None:
    t = new_table()  # nj-shoe burns 1
    out = start(t, {3: 1000, 1: 1000}, ["2C"], ["AS", "KD", "7H", "5C", "9D", "TS"])
    assert t.burned == ["2C"]
    assert t.spots[1].hands[0].cards == ["AS", "5C"]
    assert t.spots[3].hands[0].cards == ["KD", "9D"]
    assert t.dealer == ["7H", "TS"]
    dealt = [(r["to"], r.get("spot"), r["card"]) for r in records(out, "card")]
    assert dealt == [("burn", None, None), ("spot", 1, "AS"), ("spot", 3, "KD"), ("dealer", None, "7H"),
                     ("spot", 1, "5C"), ("spot", 3, "9D"), ("dealer", None, None)]


def test_no_hole_card_game_deals_the_dealer_one_card() -> None:
    t = new_table("european-6d")
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "8D"])
    assert t.dealer == ["7H"]
    assert t.phase == "players"
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.wants_card and t.card_required  # the dealer's second card comes now
    cards(t, "QS")
    assert t.phase == "settled" and t.dealer == ["7H", "QS"]


def test_european_surrender_closes_when_the_first_player_splits_and_is_dealt_further_cards() -> None:
    """european-6deck SURRENDER: "Players can only Surrender before the third card has been dealt to the first
    player". A split first player holds three cards once his first split hand is dealt its new card, though no
    hand of his has three."""
    t = new_table("european-6d")
    start(t, {1: 1000, 2: 1000}, ["2C"], ["8C", "TC", "6D", "8H", "6H"])
    feed(t, ev.Decision(spot=1, action="split"))
    assert ev.Decision(2, "surrender") in t.legal_actions(), "split, but no third card dealt yet: the window is open"
    cards(t, "3S")  # the first player's third card, on his first split hand
    assert [h.cards for h in t.spots[1].hands] == [["8C", "3S"], ["8H"]]
    assert ev.Decision(2, "surrender") not in t.legal_actions()
    refused(t, ev.Decision(spot=2, action="surrender"), "surrender closes when the first player receives a third card")


# ---------------------------------------------------------------- dead cards and dealer errors


def test_dead_card_during_insurance_is_burnt_with_an_alarm() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "AH", "9D", "7S"])
    assert t.phase == "insurance"
    out = cards(t, "5C")
    assert t.burned == ["2C", "5C"]
    assert t.spots[1].hands[0].cards == ["TC", "9D"] and t.dealer == ["AH", "7S"]
    [alarm] = alarms(out)
    assert alarm.code == "dead_card" and not alarm.halts
    assert records(out, "card") == [{"to": "dead", "card": "5C"}]
    assert t.halted is None


def test_card_no_one_called_for_is_dead_ny_4620_5_i_4() -> None:
    """A split ace that draws an ace waits for the split-again decision: a card now was not called for."""
    t = new_table("ny-4620")  # resplit aces, one card to each split ace
    start(t, {1: 500}, ["2C"], ["AC", "9H", "AD", "8S"])
    feed(t, ev.Decision(spot=1, action="split"))
    cards(t, "AH")
    assert t.spots[1].hands[0].cards == ["AC", "AH"] and not t.wants_card
    assert ev.Decision(1, "split") in t.legal_actions() and t.hit_refusal(1) is not None
    out = cards(t, "5C")
    assert [a.code for a in alarms(out)] == ["dead_card"]
    assert "NY 4620.5(i)(4)" in alarms(out)[0].message
    assert t.spots[1].hands[0].cards == ["AC", "AH"] and t.burned == ["2C", "5C"]
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.active == (1, 1) and t.card_required


def test_dealer_drawing_on_a_stand_total_raises_an_alarm() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled" and t.dealer == ["7H", "TS"]  # 17 stands (S17)
    out = cards(t, "4C")
    [alarm] = alarms(out)
    assert alarm.code == "dealer_drew_on_stand" and "17" in alarm.message
    assert t.dealer == ["7H", "TS"] and "4C" in t.burned
    assert t.spots[1].hands[0].payout == 1000  # the settlement stands


def test_card_after_a_new_shuffle_is_not_blamed_on_the_dealer() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.CutCardReached(), ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled" and t.shuffle_due
    feed(t, ev.ShuffleDone(count=416))  # the dealer's hand went into the shuffler
    out = cards(t, "4C")
    assert [a.code for a in alarms(out)] == ["dead_card"]


# ---------------------------------------------------------------- wagers locked, peek, insurance window


def test_bets_locked_once_dealing_starts_nj_19_47_2_3_f() -> None:
    t = new_table()
    feed(t, ev.BetPlaced(spot=1, amount=1000), ev.BetPlaced(spot=1, amount=2000))  # changed before the deal
    cards(t, "2C")
    feed(t, ev.NoMoreBets())
    refused(t, ev.BetPlaced(spot=1, amount=500), "NJ 19:47-2.3(f)")
    refused(t, ev.BetPlaced(spot=2, amount=1000), "locked")
    cards(t, "TC")
    refused(t, ev.BetPlaced(spot=1, amount=0), "locked")
    assert t.spots[1].wager == 2000


def test_peek_comes_before_any_player_decision() -> None:
    t = new_table()
    out = start(t, {1: 1000, 2: 1000}, ["2C"], ["TC", "9C", "KH", "6D", "9D", "7S"])
    assert any(isinstance(e, RequestPeek) for e in out)
    assert t.awaiting_peek and t.phase == "dealing"
    refused(t, ev.Decision(spot=1, action="stand"), "peeks at the hole card before any player decision")
    assert not t.wants_card
    out = cards(t, "5C")  # a card before the peek is a dead card
    assert alarms(out)[0].code == "dead_card" and t.spots[1].hands[0].cards == ["TC", "6D"]
    out = feed(t, ev.PeekResult(blackjack=False))
    assert records(out, "peek") == [{"blackjack": False}]
    assert t.phase == "players" and t.active == (1, 0)
    feed(t, ev.Decision(spot=1, action="stand"))


def test_peek_result_that_contradicts_the_hole_card_halts() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "KH", "6D", "7S"])
    out = feed(t, ev.PeekResult(blackjack=True))
    assert [a.code for a in alarms(out)] == ["peek_mismatch"]
    assert t.halted is not None
    assert t.dealer_blackjack is False  # settled by the cards the shoe read


def test_peek_without_request_is_refused() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "6D", "7S"])
    refused(t, ev.PeekResult(blackjack=False))


def test_insurance_closes_before_a_third_card() -> None:
    t = new_table()
    start(t, {1: 1000, 2: 1000}, ["2C"], ["TC", "9C", "AH", "6D", "9D", "7S"])
    assert t.phase == "insurance" and not t.wants_card
    refused(t, ev.Decision(spot=1, action="stand"), "insurance is open")
    feed(t, ev.Decision(spot=1, action="insurance", amount=500))
    out = feed(t, ev.InsuranceClosed())
    assert any(isinstance(e, RequestPeek) for e in out)
    refused(t, ev.Decision(spot=2, action="insurance", amount=500))
    feed(t, ev.PeekResult(blackjack=False))
    assert t.spots[1].insurance_payout == -500  # lost and collected at once
    cards(t, "5C")  # spot 1's third card
    refused(t, ev.Decision(spot=2, action="insurance", amount=500), "insurance is closed")
    refused(t, ev.InsuranceClosed(), "not accepted in the players phase")


# ---------------------------------------------------------------- shoe integrity and lifecycle


def test_card_seen_more_often_than_the_decks_hold_halts() -> None:
    t = new_table("nj-hand-dealt", decks=1)
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))
    out = feed(t, ev.BetPlaced(spot=1, amount=1000), ev.NoMoreBets())
    out += cards(t, "TC")  # the second ten of clubs from a one-deck game
    [alarm] = alarms(out)
    assert alarm.code == "integrity_card_count" and alarm.halts
    assert t.halted is not None and "TC" in t.burned
    assert t.spots[1].hands[0].cards == []


def test_shuffle_count_and_composition_mismatch_alarm() -> None:
    t = Table(load_rules("european-6d"))
    t.handle(ev.TableOpened(now=T0))
    out = t.handle(ev.ShuffleDone(count=311))
    [alarm] = alarms(out)
    assert alarm.code == "integrity_shuffle_count" and alarm.halts and "312" in alarm.message
    refused(t, ev.BetPlaced(spot=1, amount=1000), "halted")
    t2 = Table(load_rules("european-6d"))
    t2.handle(ev.TableOpened(now=T0))
    comp = {r: 24 for r in "A23456789TJQK"}
    comp["Q"] = 25
    out = t2.handle(ev.ShuffleDone(count=312, composition=comp))
    assert [a.code for a in alarms(out)] == ["integrity_shuffle_composition"]
    t3 = Table(load_rules("european-6d"))
    t3.handle(ev.TableOpened(now=T0))
    assert alarms(t3.handle(ev.ShuffleDone(count=312, composition={r: 24 for r in "A23456789TJQK"}))) == []


def test_cut_card_finishes_the_round_then_reshuffles() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H"])
    out = feed(t, ev.CutCardReached())
    assert not any(isinstance(e, StartShuffle) for e in out)  # the round goes on
    cards(t, "9D", "TS")
    out = feed(t, ev.Decision(spot=1, action="stand"))
    shuffles = [e for e in out if isinstance(e, StartShuffle)]
    assert len(shuffles) == 1 and shuffles[0].cards == 416
    assert DealingLocked(True) in out
    assert t.shuffle_due
    refused(t, ev.BetPlaced(spot=1, amount=1000), "shuffled")
    out = feed(t, ev.ShuffleStarted(), ev.ShuffleDone(count=416))
    assert DealingLocked(False) in out
    assert t.phase == "betting" and t.cards_dealt == 0 and not t.cut_card_reached


def test_deck_change_warning_overdue_halt_and_decks_changed() -> None:
    t = new_table("nj-hand-dealt")  # 19:46-1.18(g)4: every four hours
    assert alarms(feed(t, ev.Tick(now=T0 + 3 * 3600))) == []
    out = feed(t, ev.Tick(now=T0 + 4 * 3600 - 20 * 60))
    [warn] = alarms(out)
    assert warn.code == "deck_change_due" and not warn.halts
    assert t.halted is None
    assert alarms(feed(t, ev.Tick(now=T0 + 4 * 3600 - 10 * 60))) == []  # raised once
    out = feed(t, ev.Tick(now=T0 + 4 * 3600))
    [over] = alarms(out)
    assert over.code == "deck_change_overdue" and over.halts
    assert AlarmCleared(warn.alarm_id, "deck_change_due") in out
    assert t.halted is not None
    refused(t, ev.BetPlaced(spot=1, amount=1000), "halted")
    refused(t, ev.AlarmAcknowledged(alarm_id=over.alarm_id), "decks are changed")
    out = feed(t, ev.DecksChanged(now=T0 + 4 * 3600 + 60, deck_set="B"))
    assert AlarmCleared(over.alarm_id, "deck_change_overdue") in out
    assert any(isinstance(e, StartShuffle) for e in out)
    assert t.halted is None and t.phase == "shuffling"
    feed(t, ev.ShuffleDone(count=104))
    feed(t, ev.BetPlaced(spot=1, amount=1000))
    assert t.snapshot()["deck_set"]["id"] == "B"


def test_deck_overdue_does_not_stop_the_round_in_progress() -> None:
    t = new_table("nj-hand-dealt")
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Tick(now=T0 + 5 * 3600))
    assert t.halted is not None
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled"
    refused(t, ev.BetPlaced(spot=1, amount=1000), "halted")


def test_nj_insufficient_cards_procedure() -> None:
    """NJ 19:47-2.15(f): discards shuffled and cut, one burnt, the round completed, then a full reshuffle."""
    t = new_table("nj-hand-dealt", decks=1)
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))  # round 1: 5 cards to the discards
    start(t, {1: 1000, 2: 1000}, [], ["8C", "8D", "6H", "5S", "4H", "3C"])
    out = feed(t, ev.ShoeEmpty())
    [alarm] = alarms(out)
    assert alarm.code == "insufficient_cards" and not alarm.halts
    [shuffle] = [e for e in out if isinstance(e, StartShuffle)]
    assert shuffle.cards == 5
    assert not t.wants_card and t.snapshot()["awaiting"] == "discard_shuffle"
    out = feed(t, ev.ShuffleDone(count=5))
    assert AlarmCleared(alarm.alarm_id, "insufficient_cards") in out
    assert t.card_required  # the first card is burnt
    cards(t, "TC")  # the reshuffled discards are 2C TC 7H 9D TS
    assert t.burned == ["TC"]
    feed(t, ev.Decision(spot=1, action="stand"))  # 13 stands
    cards(t, "TS")  # spot 2: 12 + 10 = 22
    assert t.phase == "dealer"
    out = cards(t, "7H", "2C")  # dealer 6 + 3 + 7 + 2 = 18
    assert t.phase == "settled" and t.dealer == ["6H", "3C", "7H", "2C"]
    assert any(isinstance(e, StartShuffle) and e.cards == 52 for e in out)  # full reshuffle before the next round
    assert t.shuffle_due
    assert t.spots[1].hands[0].payout == -1000 and t.spots[2].hands[0].payout == -1000


def test_insufficient_cards_discard_count_mismatch_halts() -> None:
    t = new_table("nj-hand-dealt", decks=1)
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))
    start(t, {1: 1000}, [], ["8C", "6H", "5S", "3C"])
    feed(t, ev.ShoeEmpty())
    out = feed(t, ev.ShuffleDone(count=4))
    assert [a.code for a in alarms(out)] == ["integrity_shuffle_count"]


def test_insufficient_cards_counts_a_dead_card_of_the_round_among_the_discards() -> None:
    """NJ 19:47-2.15(f) "all of the cards in the discard rack": a card burnt as dead this round is there too."""
    t = new_table("nj-hand-dealt", decks=1)
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))  # round 1: 5 cards to the discards
    start(t, {1: 1000, 2: 1000}, [], ["8C", "8D", "TH", "5S", "4H", "3C"])
    assert t.snapshot()["awaiting"] == "peek"
    [dead] = alarms(cards(t, "9S"))  # dealt before the peek: dead, burnt
    assert dead.code == "dead_card" and t.burned == ["9S"]
    out = feed(t, ev.ShoeEmpty())
    [shuffle] = [e for e in out if isinstance(e, StartShuffle)]
    assert shuffle.cards == 6
    [alarm] = alarms(out)
    assert "shuffle the 6 discards (6 on the table stay)" in alarm.message
    out = feed(t, ev.ShuffleDone(count=6))
    assert not [a for a in alarms(out) if a.code == "integrity_shuffle_count"]


def test_shoe_empty_without_discards_is_refused() -> None:
    t = new_table(burn=0)
    start(t, {1: 1000}, [], ["TC", "7H"])
    refused(t, ev.ShoeEmpty(), "no discards")


# ---------------------------------------------------------------- devices and alarms


def test_device_fault_holds_the_round_and_restore_resumes() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "6S"])
    out = feed(t, ev.DeviceFault(device="console", reason="USB unplugged"))
    [alarm] = alarms(out)
    assert alarm.code == "device_lost:console" and alarm.halts
    assert t.snapshot()["devices"]["console"] == "lost" and t.halted == "device lost: console"
    refused(t, ev.Decision(spot=1, action="stand"), "round held")
    refused(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id), "when the device is back")
    assert feed(t, ev.DeviceFault(device="console", reason="again")) == []  # not raised twice
    out = feed(t, ev.DeviceRestored(device="console"))
    assert AlarmCleared(alarm.alarm_id, "device_lost:console") in out
    assert t.halted is None
    feed(t, ev.Decision(spot=1, action="stand"))
    cards(t, "5D")  # dealer 7 + 6 + 5 = 18
    assert t.phase == "settled"


def test_device_fault_between_rounds_halts_new_rounds() -> None:
    t = new_table()
    feed(t, ev.BetPlaced(spot=1, amount=1000))
    feed(t, ev.DeviceFault(device="chips", reason="bus timeout"))
    refused(t, ev.NoMoreBets(), "halted")
    refused(t, ev.BetPlaced(spot=2, amount=1000), "halted")
    feed(t, ev.DeviceRestored(device="chips"))
    cards(t, "2C")
    feed(t, ev.NoMoreBets())
    refused(t, ev.DeviceFault(device="toaster", reason="?"), exc=MalformedEvent)


def test_alarm_acknowledge() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "AH", "9D", "7S"])
    [alarm] = alarms(cards(t, "5C"))
    assert t.snapshot()["alarms"] == 1
    out = feed(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id))
    assert out[0] == AlarmCleared(alarm.alarm_id, "dead_card")
    assert t.snapshot()["alarms"] == 0 and t.alarm_list() == []
    refused(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id), "no active alarm")


def test_integrity_alarm_halts_until_acknowledged() -> None:
    t = Table(load_rules("nj-shoe"))
    t.handle(ev.TableOpened(now=T0))
    [alarm] = alarms(t.handle(ev.ShuffleDone(count=415)))
    refused(t, ev.BetPlaced(spot=1, amount=1000), "halted")
    # DESIGN "Operators and roles": cleared only by a named operator giving a reason
    refused(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id), "names the operator and gives a reason")
    refused(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id, operator="s.jones"), "gives a reason")
    refused(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id, reason="recounted"), "names the operator")
    out = feed(t, ev.AlarmAcknowledged(alarm_id=alarm.alarm_id, operator="s.jones", reason="deck recounted: 416"))
    assert records(out, "alarm_cleared") == [{"id": alarm.alarm_id, "code": "integrity_shuffle_count",
                                              "by": "acknowledge", "operator": "s.jones",
                                              "reason": "deck recounted: 416"}]
    feed(t, ev.BetPlaced(spot=1, amount=1000))


# ---------------------------------------------------------------- house rules: several spots, limits


def test_multi_spot_only_while_fewer_than_four_players() -> None:
    """house-rules-h17-table: one hand at a time unless there are less than four players at the table."""
    t = new_table("house-h17")
    feed(t, ev.BetPlaced(1, 1000, "ann"), ev.BetPlaced(2, 1000, "bob"), ev.BetPlaced(3, 1000, "cy"))
    feed(t, ev.BetPlaced(4, 1000, "ann"))  # three players: ann may play two spots
    assert sorted(t.bets) == [1, 2, 3, 4]
    t2 = new_table("house-h17")
    feed(t2, *(ev.BetPlaced(n, 1000, p) for n, p in ((1, "ann"), (2, "bob"), (3, "cy"), (4, "dee"))))
    refused(t2, ev.BetPlaced(5, 1000, "ann"), "fewer than 4 players")
    feed(t2, ev.BetPlaced(5, 1000, "eve"))
    t3 = new_table("nj-shoe")  # no such house rule: several spots always
    feed(t3, *(ev.BetPlaced(n, 1000, p) for n, p in ((1, "ann"), (2, "bob"), (3, "cy"), (4, "dee"), (5, "ann"))))
    assert len(t3.bets) == 5


def test_table_limits_and_set_limits() -> None:
    t = new_table("ny-4620")  # 4620.5(f)(2): maximum $5
    refused(t, ev.BetPlaced(spot=1, amount=501), "outside the table limits 1 to 5")
    refused(t, ev.BetPlaced(spot=1, amount=99), "outside the table limits")
    refused(t, ev.BetPlaced(spot=8, amount=100), "not on the layout", exc=MalformedEvent)
    refused(t, ev.LimitsSet(min_bet=300, max_bet=200), "not above maximum")
    out = feed(t, ev.LimitsSet(min_bet=200, max_bet=400))
    assert records(out, "limits") == [{"min_bet": "2", "max_bet": "4"}]
    assert t.snapshot()["limits"] == {"min_bet": "2", "max_bet": "4", "next": None}
    refused(t, ev.BetPlaced(spot=1, amount=500), "2 to 4")
    feed(t, ev.BetPlaced(spot=1, amount=400))
    # wagers on the layout: the new limits are for the next round; the wager in play keeps its own
    out = feed(t, ev.LimitsSet(min_bet=100, max_bet=300))
    assert records(out, "limits_pending") == [{"min_bet": "1", "max_bet": "3", "from_round": 2}]
    assert t.snapshot()["limits"] == {"min_bet": "2", "max_bet": "4", "next": {"min_bet": "1", "max_bet": "3"}}
    feed(t, ev.BetPlaced(spot=2, amount=200))
    refused(t, ev.BetPlaced(spot=3, amount=100), "2 to 4")
    out = feed(t, ev.TableClosed(now=0.0))  # the round never dealt: its wagers go back, the limits apply
    assert records(out, "limits") == [{"min_bet": "1", "max_bet": "3"}]
    assert t.snapshot()["limits"]["next"] is None


def test_limits_set_during_a_round_apply_from_the_next_round() -> None:
    """A supervisor changing limits mid-round means the next round (issue 15): taken, applied at the settlement."""
    t = new_table("house-h17", burn=0)
    feed(t, ev.BetPlaced(1, 500), ev.NoMoreBets(), *(ev.CardDrawn(c) for c in ("TC", "9D", "7S")),
         ev.HoleCardDealt())
    assert t.phase in ("players", "dealing")
    out = feed(t, ev.LimitsSet(min_bet=1000, max_bet=100000))
    assert records(out, "limits_pending") == [{"min_bet": "10", "max_bet": "1000", "from_round": 2}]
    assert (t.min_bet, t.max_bet) == (t.rules.min_bet, t.rules.max_bet)
    if t.phase == "dealing":
        feed(t, ev.PeekResult(blackjack=False))
    out = feed(t, ev.Decision(1, "stand"), ev.DealerReveal("TH"))
    assert t.phase == "settled"
    assert records(out, "limits") == [{"min_bet": "10", "max_bet": "1000"}]
    refused(t, ev.BetPlaced(1, 500), "outside the table limits 10 to 1000")


def test_out_of_turn_and_foreign_spot_refused() -> None:
    t = new_table()
    start(t, {1: 1000, 2: 1000}, ["2C"], ["TC", "9C", "7H", "6D", "9D", "7S"])
    refused(t, ev.Decision(spot=2, action="stand"), "not this spot's turn (spot 1 is playing)")
    refused(t, ev.Decision(spot=5, action="stand"), "no wager on this spot")
    refused(t, ev.Decision(spot=1, action="split"), "not a pair")
    refused(t, ev.Decision(spot=1, action="stand", amount=-1), exc=MalformedEvent)
    refused(t, ev.Decision(spot=1, action="dance"), exc=MalformedEvent)  # type: ignore[arg-type]
    refused(t, ev.CardDrawn("ZZ"), exc=MalformedEvent)


def test_snapshot_hides_the_hole_card_until_turned() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "9H", "9D", "QS"])
    snap = t.snapshot()
    assert snap["dealer"]["cards"] == ["9H", None] and snap["dealer"]["total"] == 9
    assert "QS" not in repr(snap)
    out = feed(t, ev.Decision(spot=1, action="stand"))
    assert records(out, "hole_card")[0]["card"] == "QS"
    assert t.snapshot()["dealer"]["cards"] == ["9H", "QS"]


def test_close_and_reopen() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "9H"])
    feed(t, ev.TableClosed(now=T0 + 10))  # asked during the round: for when it settles (issue #35)
    assert t.close_asked and t.phase != "closed"
    refused(t, ev.TableClosed(now=T0 + 11), "a close is already asked: the table closes when round 1 settles")
    cards(t, "9D", "QS")
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled" and t.close_asked  # the table service closes it now (its own input)
    feed(t, ev.TableClosed(now=T0 + 20))
    assert t.phase == "closed" and not t.close_asked
    refused(t, ev.BetPlaced(spot=1, amount=1000), "closed")
    feed(t, ev.TableOpened(now=T0 + 30))
    assert t.phase == "betting" and t.snapshot()["totals"]["rounds"] == 0


# ---------------------------------------------------------------- events on the wire


def _example(cls: type[Any]) -> Any:
    values: dict[str, Any] = {
        "now": T0 + 0.5, "deck_set": "B", "spot": 3, "amount": 1250, "player": "ann", "card": "TD",
        "blackjack": True, "action": "double", "count": 312, "composition": {"A": 24}, "device": "shoe",
        "reason": "crc errors", "alarm_id": 7, "min_bet": 500, "max_bet": 50000,
        "source": "chips", "detail": "chips moved on spot 3 after no more bets", "halts": False,
        "operator": "s.jones", "rules": rules_to_json(Rules(name="ny", decks=8)), "code": "shuffle_quality",
        "dealer": "d.ames", "by": "badge", "required": True,
    }
    return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})


@pytest.mark.parametrize("type_", sorted(ev.EVENT_TYPES))
def test_event_json_round_trip(type_: str) -> None:
    import json

    cls = ev.EVENT_TYPES[type_]
    event = _example(cls)
    data = ev.to_json(event)
    assert data["type"] == type_
    back = ev.from_json(json.loads(json.dumps(data)))
    assert back == event and type(back) is cls
    default = cls(**{f.name: getattr(event, f.name) for f in dataclasses.fields(cls)
                     if f.default is dataclasses.MISSING})
    assert ev.from_json(ev.to_json(default)) == default


@pytest.mark.parametrize("type_", sorted(ev.EVENT_TYPES))
def test_an_events_json_is_what_asdict_gives_and_shares_nothing_with_it(type_: str) -> None:
    """``to_json`` reads plain fields as they are (issue #40): the same dict, and so the same journaled bytes, as
    ``dataclasses.asdict``; a field holding a dict is still copied, not shared."""
    event = _example(ev.EVENT_TYPES[type_])
    for _ in range(2):  # the first call learns the class, the second uses what it learned
        data = ev.to_json(event)
        assert data == {**dataclasses.asdict(event), "type": type_}
        assert compact_json(data) == compact_json({**dataclasses.asdict(event), "type": type_})
        for name, value in data.items():
            if isinstance(value, dict):
                assert value is not getattr(event, name)


def test_event_from_json_errors() -> None:
    with pytest.raises(ev.EventFormatError, match="unknown event type"):
        ev.from_json({"type": "teleport"})
    with pytest.raises(ev.EventFormatError, match="unexpected fields"):
        ev.from_json({"type": "card", "card": "TD", "suit": "D"})
    with pytest.raises(ev.EventFormatError):
        ev.from_json({"type": "card"})
    with pytest.raises(ev.EventFormatError):
        ev.from_json(["card"])  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [
    {"type": "bet", "spot": "1", "amount": 500}, {"type": "bet", "spot": 1, "amount": "5"},
    {"type": "bet", "spot": True, "amount": 500}, {"type": "bet", "spot": 1, "amount": 5.0},
    {"type": "decision", "spot": 1, "action": "fold"},
    {"type": "decision", "spot": 1, "action": "double", "amount": "x"},
    {"type": "card", "card": 10}, {"type": "peek", "blackjack": 1}, {"type": "table_opened", "now": "noon"},
    {"type": "shuffle_done", "count": 312, "composition": [1, 2]},
    {"type": "shuffle_done", "count": 312, "composition": {"A": "24"}}, {"type": "rules_changed", "rules": "house-h17"},
])
def test_an_event_of_the_wrong_field_types_is_refused_by_name_on_either_engine(data: dict[str, object]) -> None:
    """A journal or scenario row whose fields have the wrong types: one EventFormatError naming the event,
    never an engine that takes it (pure) or a TypeError out of it (compiled)."""
    with pytest.raises(ev.EventFormatError, match=f"^{data['type']}: "):
        ev.from_json(data)


def test_a_whole_number_of_seconds_is_a_time() -> None:
    event = ev.from_json({"type": "table_opened", "now": 0})
    assert event == ev.TableOpened(now=0.0) and type(event.now) is float  # type: ignore[union-attr]


def test_european_insurance_minimum_follows_the_table_minimum_in_force() -> None:
    """european-6deck INSURANCE: 'no less than half the minimum bet on the table' (the limits the pit set)."""
    t = Table(load_rules("european-6d"))
    t.handle(ev.TableOpened(now=T0))
    t.handle(ev.ShuffleDone(count=312))
    feed(t, ev.LimitsSet(min_bet=1000, max_bet=50000))
    start(t, {1: 2000}, ["2C"], ["TC", "AH", "9D"])
    assert t.phase == "insurance"
    refused(t, ev.Decision(spot=1, action="insurance", amount=250), "half the table minimum (5)")
    feed(t, ev.Decision(spot=1, action="insurance", amount=500))
    t2 = Table(load_rules("european-6d"))
    t2.handle(ev.TableOpened(now=T0))
    t2.handle(ev.ShuffleDone(count=312))
    feed(t2, ev.LimitsSet(min_bet=100, max_bet=50000))
    start(t2, {1: 2000}, ["2C"], ["TC", "AH", "9D"])
    feed(t2, ev.Decision(spot=1, action="insurance", amount=50))
    assert t2.spots[1].insurance == 50


def test_irregularity_raises_an_alarm_and_changes_no_wager() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "9H", "9D", "QS"])
    before = t.snapshot()
    out = feed(t, ev.Irregularity(source="chips", detail="chips moved on spot 1 after no more bets"))
    alarm = records(out, "alarm")[0]
    assert alarm["code"] == "irregularity:chips" and alarm["halts"] is False
    after = t.snapshot()
    assert after["spots"] == before["spots"] and after["phase"] == before["phase"] and after["alarms"] == 1
    feed(t, ev.AlarmAcknowledged(alarm_id=alarm["id"]))
    assert t.snapshot()["alarms"] == 0
    refused(t, ev.Irregularity(source="", detail="x"), exc=MalformedEvent)


@pytest.mark.parametrize(("code", "halts", "integrity"), [
    ("integrity_card_count", True, True), ("integrity_shuffle_count", True, True),
    ("integrity_shuffle_composition", True, True), ("peek_mismatch", True, True), ("journal_break", True, True),
    ("irregularity:shoe", True, True), ("irregularity:chips", False, False), ("dead_card", False, False),
    ("deck_change_due", False, False), ("device_lost:shoe", True, False), ("shuffle_quality", False, True),
])
def test_which_alarms_halt_for_integrity(code: str, halts: bool, integrity: bool) -> None:
    from controller.contract.alarms import needs_supervisor

    assert needs_supervisor(code, halts) is integrity


def test_a_halting_irregularity_needs_operator_and_reason_a_minor_one_does_not() -> None:
    t = new_table()
    minor = records(feed(t, ev.Irregularity(source="chips", detail="sensor dirty")), "alarm")[0]
    major = records(feed(t, ev.Irregularity(source="shoe", detail="a card left unread", halts=True)), "alarm")[0]
    assert major["integrity"] is True and minor["integrity"] is False
    refused(t, ev.AlarmAcknowledged(alarm_id=major["id"]), "halts for integrity")
    out = feed(t, ev.AlarmAcknowledged(alarm_id=minor["id"]))  # the dealer's button
    assert records(out, "alarm_cleared") == [{"id": minor["id"], "code": "irregularity:chips", "by": "acknowledge"}]
    feed(t, ev.AlarmAcknowledged(alarm_id=major["id"], operator="pit-7", reason="card re-read: 7H"))
    assert not t.alarms


def test_command_records_show_the_operator() -> None:
    t = Table(load_rules("house-h17"))
    out = feed(t, ev.TableOpened(now=T0, operator="s.jones"))
    assert records(out, "table_opened")[0]["operator"] == "s.jones"
    out = feed(t, ev.LimitsSet(min_bet=1000, max_bet=60000, operator="s.jones"))
    assert records(out, "limits") == [{"min_bet": "10", "max_bet": "600", "operator": "s.jones"}]
    out = feed(t, ev.DecksChanged(now=T0 + 1, deck_set="B", operator="a.li"))
    assert records(out, "decks_changed")[0]["operator"] == "a.li"
    out = feed(t, ev.DecksChanged(now=T0 + 2, deck_set="A"))  # the console's button: nobody named
    assert "operator" not in records(out, "decks_changed")[0]
    out = feed(t, ev.TableClosed(now=T0 + 3, operator="s.jones"))
    assert records(out, "table_closed")[0]["operator"] == "s.jones"


def test_journal_rows_written_before_operators_still_replay() -> None:
    """Rows journaled before the operator field: the command events load with operator None, and an
    acknowledgement of an integrity alarm (taken then without a reason) replays as it was taken."""
    assert ev.from_json({"type": "set_limits", "min_bet": 500, "max_bet": 5000}) == ev.LimitsSet(500, 5000)
    assert ev.from_json({"type": "table_opened", "now": T0, "deck_set": "A"}) == ev.TableOpened(T0, "A")
    assert ev.from_json({"type": "table_closed", "now": T0}) == ev.TableClosed(T0)
    assert ev.from_json({"type": "decks_changed", "now": T0, "deck_set": "B"}) == ev.DecksChanged(T0, "B")
    old_ack = ev.from_json({"type": "alarm_ack", "alarm_id": 1})
    assert isinstance(old_ack, ev.AlarmAcknowledged) and old_ack.operator == ev.LEGACY_OPERATOR and old_ack.reason
    new_button = ev.from_json(ev.to_json(ev.AlarmAcknowledged(alarm_id=1)))
    assert new_button == ev.AlarmAcknowledged(alarm_id=1), "a console press journaled now stays a console press"
    t = Table(load_rules("nj-shoe"))
    t.handle(ev.TableOpened(now=T0))
    [alarm] = alarms(t.handle(ev.ShuffleDone(count=415)))
    t.handle(ev.from_json({"type": "alarm_ack", "alarm_id": alarm.alarm_id}))
    assert not t.alarms


# ---------------------------------------------------------------- the rules in force (bound to the journal)


def test_rules_round_trip_as_json_and_refuse_what_is_not_rules() -> None:
    import json

    rules = load_rules("house-shoe-surrender")
    assert rules_from_json(json.loads(json.dumps(rules_to_json(rules)))) == rules
    assert rules_digest(rules_from_json(rules_to_json(rules))) == rules_digest(rules)
    with pytest.raises(RulesFormatError, match="decks: a whole number"):
        rules_from_json({"decks": "6"})
    with pytest.raises(RulesFormatError, match="unknown fields"):
        rules_from_json({"jokers": True})
    # a journal's rules of the wrong shape: one line naming the field, on either engine (never a TypeError)
    for field, value in [("natural_pays", [3, 2, 1]), ("natural_pays", [3, "2"]), ("max_hands_by_spots", [[6]]),
                         ("max_hands_by_spots", [["6", 3]]), ("citations", [["decks", 6]]), ("citations", "x")]:
        with pytest.raises(RulesFormatError, match=f"^{field}: "):
            rules_from_json({field: value})


def test_rules_change_only_between_shoes() -> None:
    t = new_table()
    two = rules_to_json(Rules(name="two", decks=2))
    start(t, {1: 1000}, ["2C"], ["TC", "9H"])
    refused(t, ev.RulesChanged(rules=rules_to_json(Rules(name="other", min_bet=1000))), "only between shoes")
    cards(t, "9D", "QS")
    feed(t, ev.Decision(spot=1, action="stand"))
    assert t.phase == "settled" and not t.between_shoes(), "cards of this shoe are out"
    refused(t, ev.RulesChanged(rules=rules_to_json(Rules(name="other"))), "only between shoes")
    feed(t, ev.TableClosed(now=T0 + 20))
    assert t.between_shoes()
    out = feed(t, ev.RulesChanged(rules=two, operator="s.jones"))
    assert t.rules == Rules(name="two", decks=2)
    assert records(out, "rules_changed") == [{"profile": "two", "digest": rules_digest(t.rules),
                                              "operator": "s.jones"}]
    assert t.shuffle_due, "another number of decks: a new shoe"
    feed(t, ev.TableOpened(now=T0 + 30))
    assert t.phase == "shuffling"
    refused(t, ev.RulesChanged(rules=rules_to_json(Rules(name="six"))), "decks changes")  # open: not the decks
    feed(t, ev.RulesChanged(rules=rules_to_json(Rules(name="two-b", decks=2, min_bet=1000))))
    assert (t.min_bet, t.max_bet) == (1000, 50000), "the profile's limits, the pit had set none"
    refused(t, ev.RulesChanged(rules={"decks": "x"}), "rules_changed: decks", exc=MalformedEvent)


def test_a_closed_table_shuffled_stays_closed_until_it_is_opened() -> None:
    """A shuffler run while the table is closed (a technician's test) must not open the table: it went
    closed -> shuffling -> betting and took bets with no table_opened."""
    t = new_table()
    feed(t, ev.DecksChanged(now=T0 + 5))  # new decks: a shuffle is due
    feed(t, ev.TableClosed(now=T0 + 10))
    assert t.phase == "closed" and t.shuffle_due
    feed(t, ev.ShuffleStarted(), ev.ShuffleDone(count=t.rules.cards_in_shoe))
    assert t.phase == "closed" and not t.shuffle_due
    refused(t, ev.BetPlaced(spot=1, amount=1000), "closed")
    feed(t, ev.TableOpened(now=T0 + 20))
    assert t.phase == "betting", "opened on the shoe shuffled while closed"


def test_a_shuffle_quality_alarm_keeps_its_design_code_does_not_halt_and_only_surveillance_clears_it() -> None:
    """DESIGN "Table analytics": a failing shoe "raises the alarm with code shuffle_quality (it does not halt
    play; surveillance decides)": the dealer's console button does not clear it."""
    t = new_table()
    [alarm] = alarms(feed(t, ev.Irregularity("shuffle_quality", "shoe 3 fails: score 9.1", code="shuffle_quality")))
    assert alarm.code == "shuffle_quality" and not alarm.halts and t.halted is None
    refused(t, ev.AlarmAcknowledged(alarm.alarm_id), "(shuffle_quality) is surveillance's to judge")
    feed(t, ev.AlarmAcknowledged(alarm.alarm_id, operator="surveillance-1", reason="shuffler serviced"))
    assert t.alarms == {}
    refused(t, ev.Irregularity("console", "x", code="anything_else"), "alarm code is one of", MalformedEvent)
    [plain] = alarms(feed(t, ev.Irregularity("console", "a button out of turn")))
    assert plain.code == "irregularity:console"
