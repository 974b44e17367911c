"""Settlement at the edges the golden scenarios leave open (issue 39's mutation run): a split spot whose first hand
busted before the dealer played still has its second hand paid, and the ``payout`` and ``round_settled`` records
name what was settled, in full (the journal, the recorder and the analytics read them)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.game import events as ev
from controller.game import settlement
from controller.game.effects import Record, StartShuffle
from controller.game.snapshot import export_state
from controller.profiles import load_rules
from controller.scenario import run_scenario
from tests.game.test_table import cards, feed, new_table, records, start

SPLIT_ONE_BUST: dict[str, Any] = {
    "profile": "house-h17", "bets": {"1": "10"}, "shoe": ["2C", "8C", "TH", "8D", "7S", "5C", "TD", "QH"],
    "actions": [{"spot": 1, "action": "split"}, {"spot": 1, "action": "hit"}, {"spot": 1, "action": "stand"}],
}


def test_a_split_hand_after_one_that_busted_is_still_paid() -> None:
    result = run_scenario(SPLIT_ONE_BUST)
    (spot,) = result["spots"].values()
    assert [(h["total"], h["outcome"], h["payout"]) for h in spot["hands"]] == [(23, "lose", "-10"), (18, "win", "10")]
    assert (spot["net"], result["house_net"]) == ("0", "0")


def test_the_settlement_records_name_each_hand_the_dealer_the_nets_and_the_totals() -> None:
    events = run_scenario(SPLIT_ONE_BUST)["events"]
    settled = [e for e in events if e["type"] in ("payout", "round_settled")]
    assert settled == [
        {"type": "payout", "spot": 1, "hand": 0, "outcome": "lose", "wager": "10", "payout": "-10"},
        {"type": "payout", "spot": 1, "hand": 1, "outcome": "win", "wager": "10", "payout": "10"},
        {"type": "round_settled", "round": 1, "dealer": {"cards": ["TH", "7S"], "total": 17, "blackjack": False},
         "nets": {"1": "0"}, "totals": {"rounds": 1, "handle": "20.00", "house_net": "0.00"},
         "dealer_id": None},  # no dealer signed in
    ]


# ---------------------------------------------------------------- what the settlement pays, case by case
# Each case below is one the golden scenarios leave open: a wager that waits for the dealer's hand (no peek, an
# ace or ten up), an odd cent, a tie under each option, the dealer at exactly 21.


def _play(profile: str, bets: dict[str, str], shoe: list[str], actions: list[tuple[int, str]] | None = None,
          rules: dict[str, Any] | None = None, amounts: dict[int, str] | None = None) -> dict[str, Any]:
    acts: list[dict[str, Any]] = []
    for i, (spot, action) in enumerate(actions or []):
        a: dict[str, Any] = {"spot": spot, "action": action}
        if amounts and i in amounts:
            a["amount"] = amounts[i]
        acts.append(a)
    return run_scenario({"profile": profile, "bets": bets, "shoe": shoe, "actions": acts, "rules": rules or {}})


def _hands(result: dict[str, Any], spot: str = "1") -> list[tuple[int, str, str]]:
    """Each hand of ``spot``: its total, outcome and payout, as the settlement shows them and, the same, as the
    ``payout`` records (the journal's and the recorder's) name that hand by its index."""
    hands = result["spots"][spot]["hands"]
    paid = sorted((e["hand"], e["outcome"], e["payout"]) for e in result["events"]
                  if e["type"] == "payout" and e["spot"] == int(spot))
    assert paid == [(i, h["outcome"], h["payout"]) for i, h in enumerate(hands)]
    return [(h["total"], h["outcome"], h["payout"]) for h in hands]


def _payouts(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in result["events"] if e["type"] in ("payout", "insurance_settled")]


def test_a_hand_that_busts_while_the_dealers_blackjack_is_still_possible_loses_when_the_dealer_has_none() -> None:
    """house-shoe-surrender (no peek, original bets only): the bust waits for the dealer's hand (a dealer
    blackjack would take the original wager only), then loses in full: _settle's ``bust`` branch, reachable."""
    result = _play("house-shoe-surrender", {"1": "10"}, ["2C", "TC", "TH", "6D", "7S", "9C"], [(1, "hit")])
    assert _hands(result) == [(25, "lose", "-10")]
    assert (result["spots"]["1"]["net"], result["house_net"]) == ("-10", "10")
    events = [e["type"] for e in result["events"]]
    assert events.index("hole_card") < events.index("payout")  # paid with the dealer's hand, not at the bust
    assert _payouts(result) == [{"type": "payout", "spot": 1, "hand": 0, "outcome": "lose", "wager": "10",
                                 "payout": "-10"}]


def test_a_doubled_hand_against_a_dealer_blackjack_loses_only_the_original_wager() -> None:
    result = _play("house-shoe-surrender", {"1": "10"}, ["2C", "6C", "TH", "5D", "AS", "TC"], [(1, "double")])
    assert result["spots"]["1"]["hands"][0]["wager"] == "20"
    assert _hands(result) == [(21, "lose", "-10")]
    assert result["house_net"] == "10"


def test_a_split_spot_against_a_dealer_blackjack_loses_its_original_wager_once() -> None:
    """Original bets only: the first hand loses the spot's wager, every other hand is returned (a push)."""
    result = _play("house-shoe-surrender", {"1": "10"}, ["2C", "8C", "TH", "8D", "AS", "5C", "9H", "TD"],
                   [(1, "split"), (1, "hit"), (1, "stand")])
    assert _hands(result) == [(22, "lose", "-10"), (18, "push", "0")]
    assert (result["spots"]["1"]["net"], result["house_net"]) == ("-10", "10")
    three = _play("house-shoe-surrender", {"1": "10"}, ["2C", "8C", "TH", "8D", "AS", "8H", "9H", "TD", "2S"],
                  [(1, "split"), (1, "split"), (1, "stand"), (1, "stand"), (1, "stand")])
    assert [h[1:] for h in _hands(three)] == [("lose", "-10"), ("push", "0"), ("push", "0")]


def test_a_doubled_hand_against_a_dealer_blackjack_loses_everything_where_the_dealer_takes_all() -> None:
    """european-6d: no hole card, the dealer's blackjack takes the doubled wager too."""
    result = _play("european-6d", {"1": "10"}, ["2C", "6C", "TH", "5D", "4S", "AS"], [(1, "double")])
    assert result["dealer"]["blackjack"] is True
    assert _hands(result) == [(15, "lose", "-20")]


def test_a_surrender_waiting_for_the_dealer_returns_half_an_odd_wager_rounded_to_the_house_or_loses_all() -> None:
    """house-shoe-surrender: surrender lost to a blackjack, so it is settled with the dealer's hand; half of
    10.01 is 5.00 returned (the cent stays lost), and a dealer blackjack takes the whole wager."""
    result = _play("house-shoe-surrender", {"1": "10.01"}, ["2C", "TC", "TH", "6D", "7S"], [(1, "surrender")])
    assert _hands(result) == [(16, "surrender", "-5.01")]
    assert result["house_net"] == "5.01"
    result = _play("house-shoe-surrender", {"1": "10.01"}, ["2C", "TC", "TH", "6D", "AS"], [(1, "surrender")])
    assert _hands(result) == [(16, "surrender", "-10.01")]


def test_a_natural_waiting_for_the_dealer_pays_3_to_2_rounded_down_or_pushes_against_his() -> None:
    result = _play("house-shoe-surrender", {"1": "10.01"}, ["2C", "AC", "TH", "KD", "7S"])
    assert _hands(result) == [(21, "blackjack", "15.01")]
    assert result["house_net"] == "-15.01"
    result = _play("house-shoe-surrender", {"1": "10"}, ["2C", "AC", "TH", "KD", "AS"])
    assert _hands(result) == [(21, "push", "0")]
    assert result["house_net"] == "0"


def test_a_natural_against_the_dealers_natural_pushes_or_loses_by_the_tie_option() -> None:
    shoe = ["2C", "AC", "TH", "KD", "AS"]
    assert _hands(_play("ny-4620", {"1": "5"}, shoe))[0][1:] == ("push", "0")
    two_to_one = {"ties": "push_naturals_only", "natural_pays": "2:1"}
    assert _hands(_play("ny-4620", {"1": "5"}, shoe, rules=two_to_one))[0][1:] == ("push", "0")
    lost = _play("ny-4620", {"1": "5"}, shoe, rules={"ties": "house_wins", "natural_pays": "2:1"})
    assert _hands(lost)[0][1:] == ("lose", "-5")
    assert lost["house_net"] == "5"


def test_ties_push_or_lose_by_the_tie_option_and_a_dealer_at_21_is_not_bust() -> None:
    tie = ["2C", "TC", "9H", "8D", "9S"]  # 18 against 18
    assert _hands(_play("ny-4620", {"1": "5"}, tie, [(1, "stand")])) == [(18, "push", "0")]
    for option in ("push_naturals_only", "house_wins"):
        rules = {"ties": option, "natural_pays": "2:1"}
        assert _hands(_play("ny-4620", {"1": "5"}, tie, [(1, "stand")], rules=rules)) == [(18, "lose", "-5")]
    # the dealer draws to exactly 21 in three cards: 20 loses, a three-card 21 pushes
    assert _hands(_play("ny-4620", {"1": "5"}, ["2C", "TC", "9H", "QD", "2S", "TS"], [(1, "stand")])) == \
        [(20, "lose", "-5")]
    assert _hands(_play("ny-4620", {"1": "5"}, ["2C", "TC", "9H", "6D", "2S", "5C", "TS"], [(1, "hit")])) == \
        [(21, "push", "0")]
    # the dealer draws to exactly 22: bust, 18 wins
    assert _hands(_play("ny-4620", {"1": "5"}, ["2C", "TC", "9H", "8D", "3S", "TS"], [(1, "stand")])) == \
        [(18, "win", "5")]
    # 19 against 18 wins, 17 against 18 loses
    assert _hands(_play("ny-4620", {"1": "5"}, ["2C", "TC", "9H", "9D", "9S"], [(1, "stand")])) == \
        [(19, "win", "5")]
    assert _hands(_play("ny-4620", {"1": "5"}, ["2C", "TC", "9H", "7D", "9S"], [(1, "stand")])) == \
        [(17, "lose", "-5")]


def test_insurance_pays_2_to_1_on_the_dealers_blackjack_and_is_lost_without_it() -> None:
    won = _play("house-shoe-surrender", {"1": "10"}, ["2C", "9C", "AH", "8D", "KS"],
                [(1, "insurance"), (1, "stand")], amounts={0: "5"})
    assert won["spots"]["1"]["insurance"] == {"wager": "5", "payout": "10"}
    assert _payouts(won)[0] == {"type": "insurance_settled", "spot": 1, "wager": "5", "payout": "10"}
    assert (won["spots"]["1"]["net"], won["house_net"]) == ("0", "0")
    lost = _play("house-shoe-surrender", {"1": "10"}, ["2C", "9C", "AH", "TD", "8S"],
                 [(1, "insurance"), (1, "stand")], amounts={0: "5"})
    assert lost["spots"]["1"]["insurance"] == {"wager": "5", "payout": "-5"}
    assert _payouts(lost)[0] == {"type": "insurance_settled", "spot": 1, "wager": "5", "payout": "-5"}
    assert (_hands(lost), lost["spots"]["1"]["net"], lost["house_net"]) == ([(19, "push", "0")], "-5", "5")



def test_only_the_insured_spot_settles_insurance_and_payouts_run_from_the_dealers_right() -> None:
    result = _play("house-shoe-surrender", {"1": "10", "2": "20"}, ["2C", "9C", "TC", "AH", "8D", "9D", "KS"],
                   [(1, "insurance"), (1, "stand"), (2, "stand")], amounts={0: "5"})
    assert _payouts(result) == [
        {"type": "insurance_settled", "spot": 1, "wager": "5", "payout": "10"},
        {"type": "payout", "spot": 2, "hand": 0, "outcome": "lose", "wager": "20", "payout": "-20"},
        {"type": "payout", "spot": 1, "hand": 0, "outcome": "lose", "wager": "10", "payout": "-10"},
    ]
    assert result["spots"]["2"]["insurance"] is None
    assert (result["spots"]["1"]["net"], result["spots"]["2"]["net"], result["house_net"]) == ("0", "-20", "20")

# ---------------------------------------------------------------- what the settlement leaves behind (the engine)


def test_the_settlement_counts_each_round_closes_it_and_applies_the_limits_that_waited_for_it() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    assert records(feed(t, ev.LimitsSet(min_bet=500, max_bet=50000)), "limits_pending")
    out = feed(t, ev.Decision(spot=1, action="stand"))  # 19 against 17
    [settled] = records(out, "round_settled")
    assert (settled["round"], settled["totals"]) == (1, {"rounds": 1, "handle": "10.00", "house_net": "-10.00"})
    assert records(out, "limits") == [{"min_bet": "5", "max_bet": "500"}]  # applied at the settlement
    assert (t.min_bet, t.max_bet) == (500, 50000)
    state = export_state(t)["table"]
    assert (state["phase"], state["round_open"], state["active"]) == ("settled", False, None)
    assert t.snapshot()["active"] is None and t.snapshot()["phase"] == "settled"
    start(t, {1: 1000}, ["3C"], ["TD", "7C", "8D", "TH"])
    out = feed(t, ev.Decision(spot=1, action="stand"))  # 18 against 17
    [settled] = records(out, "round_settled")
    assert (settled["round"], settled["totals"]) == (2, {"rounds": 2, "handle": "20.00", "house_net": "-20.00"})


def test_a_cut_card_come_out_during_a_round_asks_for_the_shuffle_at_its_settlement() -> None:
    t = new_table()
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    assert not [e for e in feed(t, ev.CutCardReached()) if isinstance(e, StartShuffle)]  # not in the round
    out = feed(t, ev.Decision(spot=1, action="stand"))
    assert [e for e in out if isinstance(e, StartShuffle)] == [StartShuffle(t.rules.cards_in_shoe, "cut card reached")]
    assert records(out, "shuffle_requested") == [{"reason": "cut card reached"}]
    assert (t.shuffle_due, t.shuffle_reason) == (True, "cut card reached")


def test_the_insufficient_cards_procedure_asks_for_a_full_reshuffle_after_the_round_and_says_why() -> None:
    """NJ 19:47-2.15(f), as tests/game/test_table.py plays it: the reason the shuffler and the record are given."""
    t = new_table("nj-hand-dealt", decks=1)
    start(t, {1: 1000}, ["2C"], ["TC", "7H", "9D", "TS"])
    feed(t, ev.Decision(spot=1, action="stand"))
    start(t, {1: 1000, 2: 1000}, [], ["8C", "8D", "6H", "5S", "4H", "3C"])
    feed(t, ev.ShoeEmpty())
    feed(t, ev.ShuffleDone(count=5))
    cards(t, "TC")
    feed(t, ev.Decision(spot=1, action="stand"))
    cards(t, "TS")
    out = cards(t, "7H", "2C")
    reason = "full reshuffle after the insufficient-cards procedure (NJ 19:47-2.15(f))"
    assert [e for e in out if isinstance(e, StartShuffle)] == [StartShuffle(52, reason)]
    assert [e.data for e in out if isinstance(e, Record) and e.type == "shuffle_requested"] == [{"reason": reason}]
    assert (t.shuffle_due, t.shuffle_reason) == (True, reason)


@pytest.mark.parametrize("dealer_blackjack, up, waits", [
    (None, 10, True), (None, 1, True),  # not yet ruled out, a ten or an ace up: the bust waits for the hand
    (False, 10, False), (False, 1, False),  # peeked, none: the bust loses at once
    (True, 10, True),  # the blackjack known: the original wager only, still settled with the dealer's hand
    (None, 2, False), (None, 9, False),  # no blackjack possible under a 2 or a 9
])
def test_a_bust_waits_only_where_a_dealer_blackjack_not_yet_ruled_out_takes_the_original_wager_only(
        dealer_blackjack: bool | None, up: int, waits: bool) -> None:
    """house-shoe-surrender (BLACKJACK: "the Player can only lose his original wager"); under a rule where a dealer
    blackjack takes every bet (european-6d) a bust never waits."""
    assert settlement.bust_waits(load_rules("house-shoe-surrender"), dealer_blackjack, up) is waits
    assert settlement.bust_waits(load_rules("european-6d"), dealer_blackjack, up) is False
