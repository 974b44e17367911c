"""Recall's printed round names who dealt it (surveillance's first question about a disputed round, #37)."""

from __future__ import annotations

from controller.reports.recall import dealt_text


def test_a_round_names_its_dealer_of_record() -> None:
    assert dealt_text({"dealer_id": "d.ames"}) == "d.ames"


def test_a_round_dealt_across_a_relief_names_both_dealers() -> None:
    assert dealt_text({"dealer_id": "d.ames", "relieved_by": "b.baker"}) == \
        "d.ames, relieved at its settlement by b.baker"
    assert dealt_text({"dealer_id": "d.ames", "relieved_by": None}) == "d.ames, signed out at its settlement"


def test_a_round_with_no_dealer_on_duty_says_so_and_an_older_round_says_nothing() -> None:
    assert dealt_text({"dealer_id": None}) == "no dealer on duty"
    assert dealt_text({"round": 3}) is None  # journaled before tables knew their dealer: no line at all
