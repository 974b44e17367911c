"""Money is integer cents with decimal strings at the edges; cards are the contract notation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.game.cards import DECK, CardError, hand_total, is_natural, parse_card
from controller.game.money import MoneyError, format_money, format_money_fixed, parse_money


@pytest.mark.parametrize(("text", "cents"), [("7.50", 750), ("5", 500), (5, 500), ("0.05", 5), ("-2.50", -250),
                                             ("1240.00", 124000), ("3.5", 350)])
def test_parse_money(text: object, cents: int) -> None:
    assert parse_money(text) == cents


@pytest.mark.parametrize("bad", [7.5, "7.505", "seven", "", True, None, "1e3", "5,00",
                                 # digits int() reads that are not ASCII: Arabic-Indic, fullwidth, Devanagari
                                 "\u0665", "\uff15.\uff10\uff10", "\u0967\u0966"])
def test_bad_money_is_refused_with_a_reason(bad: object) -> None:
    with pytest.raises(MoneyError, match="amount"):
        parse_money(bad)


@given(st.integers(min_value=-10**10, max_value=10**10))
def test_money_round_trips(cents: int) -> None:
    assert parse_money(format_money(cents)) == cents
    assert parse_money(format_money_fixed(cents)) == cents


def test_formats() -> None:
    assert (format_money(500), format_money(750), format_money(-250)) == ("5", "7.50", "-2.50")
    assert format_money_fixed(124000) == "1240.00"


def test_cards() -> None:
    assert len(DECK) == 52 and len(set(DECK)) == 52
    assert parse_card("td") == "TD"
    for bad in ["1S", "TX", "10H", "", None, "AS "]:
        if bad == "AS ":
            assert parse_card(bad) == "AS"
            continue
        with pytest.raises(CardError):
            parse_card(bad)
    assert hand_total(["AS", "6H"]) == (17, True)
    assert hand_total(["AS", "6H", "9C"]) == (16, False)
    assert hand_total(["AS", "AD"]) == (12, True)
    assert is_natural(["AS", "KD"]) and not is_natural(["AS", "5D", "5C"])
