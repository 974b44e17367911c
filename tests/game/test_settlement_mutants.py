"""Settlement at the edges the golden scenarios leave open (issue 39's mutation run): a split spot whose first hand
busted before the dealer played still has its second hand paid, and the ``payout`` and ``round_settled`` records
name what was settled, in full (the journal, the recorder and the analytics read them)."""

from __future__ import annotations

from typing import Any

from controller.scenario import run_scenario

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
         "nets": {"1": "0"}, "totals": {"rounds": 1, "handle": "20.00", "house_net": "0.00"}},
    ]
