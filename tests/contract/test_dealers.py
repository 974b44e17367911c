"""Dealer ids (controller/contract/dealers.py) and who may assign one (DESIGN, "The dealer on duty")."""

from __future__ import annotations

import re

import pytest

from controller.contract.dealers import DEALER_PATTERN, check_dealer
from controller.contract.page import page_contract
from controller.contract.roles import ROLES, VERBS, grants, refusal


@pytest.mark.parametrize("dealer", ["d.ames", "a", "dealer_07", "x-1", "0", "x" * 64])
def test_a_dealer_id_of_the_charset_is_taken(dealer: str) -> None:
    assert check_dealer(dealer) is None
    assert re.fullmatch(DEALER_PATTERN, dealer)


@pytest.mark.parametrize(("dealer", "needle"), [
    ("", "blank"), ("  ", "blank"), ("D.Ames", "'D'"), ("d ames", "' '"), ("x" * 65, "65 characters"),
    ("d.\u0430mes", "U+0430"),  # a Cyrillic a
    ("d.ames\n", "U+000A"), ("d/ames", "'/'"),
])
def test_any_other_dealer_id_is_refused_naming_why(dealer: str, needle: str) -> None:
    why = check_dealer(dealer)
    assert why is not None and needle in why and why.startswith("dealer id")
    assert not re.fullmatch(DEALER_PATTERN, dealer)


def test_a_dealer_id_is_a_string() -> None:
    assert "string" in (check_dealer(7) or "")  # type: ignore[arg-type]


def test_only_the_pit_sends_set_dealer() -> None:
    assert "set_dealer" in VERBS
    assert refusal("pit", "set_dealer") is None
    for role in ("surveillance", "technician"):
        assert "may not send set_dealer (only pit)" in (refusal(role, "set_dealer") or "")
    assert "sends no commands" in (refusal("dashboard", "set_dealer") or "")
    assert [name for name, role in ROLES.items() if "set_dealer" in role.verbs] == ["pit"]
    assert "tables/+/cmd/pit/s.jones/set_dealer" in grants("pit", prefix="tables", user="s.jones").writes
    assert not any(w.endswith("/set_dealer") for w in grants("surveillance", prefix="tables", user="eye").writes)


def test_the_page_reads_the_dealer_pattern_and_the_verb() -> None:
    page = page_contract()
    assert page["dealer_pattern"] == DEALER_PATTERN
    assert "set_dealer" in page["roles"]["pit"]["verbs"]
