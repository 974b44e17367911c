"""The soak's invariants (controller.sim.soak_check), each shown to catch what it guards, on made-up streams."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.sim.soak_check import InvariantBroken, PitChecker


def _checker(bound_s: float = 10.0) -> PitChecker:
    return PitChecker("p", decks=1, rounds=100, bound_s=bound_s, now=0.0)


def _event(c: PitChecker, seq: int, type_: str, now: float = 1.0, **data: Any) -> None:
    c.on_message("p/t01/events", json.dumps({"seq": seq, "ts": 1.0, "type": type_, **data}).encode(), now)


def _state(c: PitChecker, now: float, **fields: Any) -> None:
    state = {"seq": 1, "phase": "betting", "halted": None, "devices": {"shoe": "ok"},
             "dealer": {"cards": []}, "totals": {"rounds": 0}, **fields}
    c.on_message("p/t01/state", json.dumps(state).encode(), now)


def _settled(c: PitChecker, seq: int, nets: dict[str, str], house_net: str, handle: str, now: float = 1.0) -> None:
    _event(c, seq, "round_settled", now, round=1, nets=nets,
           totals={"rounds": 1, "handle": handle, "house_net": house_net})


def test_a_gap_in_seq_is_caught_a_repeat_with_the_same_body_is_not() -> None:
    c = _checker()
    _event(c, 1, "bet", spot=1)
    _event(c, 1, "bet", spot=1)  # a repeat after a crash: allowed
    with pytest.raises(InvariantBroken, match="seq 3 after 1"):
        _event(c, 3, "bet", spot=2)


def test_on_a_cluster_a_seq_may_come_after_later_ones_within_the_bound_and_is_counted() -> None:
    """A publish the cluster did not take as its quorum went is resent after later ones it took: the later ones
    wait and are checked in seq order once the gap fills (the soak on a NATS cluster, docs/soak.md)."""
    c = PitChecker("p", decks=1, rounds=100, bound_s=10.0, now=0.0, reorder_s=10.0)
    _event(c, 1, "bet", spot=1)
    _event(c, 3, "bet", spot=3, now=2.0)
    _event(c, 4, "bet", spot=4, now=2.0)
    c.check_progress(5.0)
    assert c.tables["t01"].top == 1 and c.events == 1
    _event(c, 2, "bet", spot=2, now=6.0)  # resent: 2, then 3 and 4 checked
    assert c.tables["t01"].top == 4 and c.events == 4 and c.reordered == 1
    _event(c, 3, "bet", spot=3, now=6.0)  # a repeat of one that waited: same body, allowed
    with pytest.raises(InvariantBroken, match="seq 4 repeated with another body"):
        _event(c, 4, "bet", spot=5, now=6.0)


def test_on_a_cluster_a_gap_not_filled_within_the_bound_is_caught() -> None:
    c = PitChecker("p", decks=1, rounds=100, bound_s=10.0, now=0.0, reorder_s=10.0)
    _event(c, 1, "bet", spot=1)
    _event(c, 3, "bet", spot=3, now=2.0)
    c.check_progress(11.0)
    with pytest.raises(InvariantBroken, match="t01: seq 2 missing, 3 and on came 11 s ago"):
        c.check_progress(13.0)


def test_on_a_cluster_a_waiting_seq_with_another_body_is_caught() -> None:
    c = PitChecker("p", decks=1, rounds=100, bound_s=10.0, now=0.0, reorder_s=10.0)
    _event(c, 1, "bet", spot=1)
    _event(c, 3, "bet", spot=3)
    with pytest.raises(InvariantBroken, match="seq 3 repeated with another body"):
        _event(c, 3, "bet", spot=4)


def test_an_older_state_sent_again_does_not_replace_a_newer_one_but_is_still_checked() -> None:
    """A cluster that could not store a retained ``state`` as its quorum went sends the older copy to a subscriber
    that subscribes again (soak --cluster 3 seed 138 ended comparing the totals of round 5 with round 36's)."""
    c = _checker()
    _state(c, 1.0, seq=40, totals={"rounds": 36})
    _state(c, 2.0, seq=12, totals={"rounds": 5})
    assert c.tables["t01"].state["totals"] == {"rounds": 36} and c.stale_states == 1
    with pytest.raises(InvariantBroken, match="hole card secret"):
        _state(c, 3.0, seq=13, phase="players", dealer={"cards": ["AS", "KD"]})


def test_a_repeat_with_another_body_is_caught() -> None:
    c = _checker()
    _event(c, 1, "bet", spot=1)
    with pytest.raises(InvariantBroken, match="repeated with another body"):
        _event(c, 1, "bet", spot=2)


def test_money_not_conserved_is_caught() -> None:
    c = _checker()
    _event(c, 1, "no_more_bets", wagers={"1": "10"})
    with pytest.raises(InvariantBroken, match="money conserved"):
        _settled(c, 2, {"1": "10"}, house_net="10.00", handle="10.00")  # the spot won 10, the house says +10


def test_money_conserved_passes_and_resets_at_table_opened() -> None:
    c = _checker()
    _event(c, 1, "no_more_bets", wagers={"1": "10"})
    _settled(c, 2, {"1": "-10"}, house_net="10.00", handle="10.00")
    _event(c, 3, "table_opened")
    _event(c, 4, "no_more_bets", wagers={"1": "5"})
    _settled(c, 5, {"1": "5"}, house_net="-5.00", handle="5.00")


def test_a_handle_below_the_wagers_is_caught() -> None:
    c = _checker()
    _event(c, 1, "no_more_bets", wagers={"1": "10", "2": "10"})
    with pytest.raises(InvariantBroken, match="less than the 2000 wagered"):
        _settled(c, 2, {"1": "0", "2": "0"}, house_net="0.00", handle="10.00")


def test_a_card_shown_more_often_than_the_decks_hold_it_is_caught() -> None:
    c = _checker()
    _event(c, 1, "card", to="spot", card="AS")
    with pytest.raises(InvariantBroken, match="AS shown 2 times"):
        _event(c, 2, "hole_card", card="AS")


def test_a_new_shoe_starts_the_count_again() -> None:
    c = _checker()
    _event(c, 1, "card", to="spot", card="AS")
    _event(c, 2, "shuffle_done", count=52)
    _event(c, 3, "card", to="spot", card="AS")


def test_the_hole_card_published_while_the_players_play_is_caught() -> None:
    c = _checker()
    _state(c, 1.0, phase="players", dealer={"cards": ["TD", None]})
    with pytest.raises(InvariantBroken, match="hole card secret"):
        _state(c, 1.1, phase="players", dealer={"cards": ["TD", "AS"]})
    _state(c, 1.2, phase="dealer", dealer={"cards": ["TD", "AS"]})  # turned: public


def test_a_table_that_can_play_and_settles_nothing_is_caught() -> None:
    c = _checker(bound_s=10.0)
    c.on_message("p/t01/status", b"online", 0.0)
    _state(c, 0.0)
    c.check_progress(9.0)
    with pytest.raises(InvariantBroken, match="settled no round for 11 s"):
        c.check_progress(11.0)


def test_a_halted_closed_or_device_lost_table_is_not_expected_to_play() -> None:
    c = _checker(bound_s=10.0)
    c.on_message("p/t01/status", b"online", 0.0)
    _state(c, 0.0, halted="integrity alarm")
    c.check_progress(50.0)
    _state(c, 50.0, phase="closed")
    c.check_progress(100.0)
    _state(c, 100.0, devices={"shoe": "lost"})
    c.check_progress(150.0)
    _state(c, 150.0)  # healthy again: the clock starts from the last unhealthy moment
    c.check_progress(159.0)
    with pytest.raises(InvariantBroken, match="progress"):
        c.check_progress(161.0)
