"""The page's contract (controller/web/contract.json) is what controller/contract defines, and says it the same way."""

from __future__ import annotations

import json

import pytest

from controller.contract.alarms import ALARM_KINDS, alarm_kind
from controller.contract.page import PAGE_CONTRACT, page_contract, page_contract_text
from controller.contract.phases import BETWEEN_ROUNDS, PHASES, ROUND_PHASES
from controller.contract.roles import COMMAND_ROLES, ROLES


def test_the_committed_file_is_up_to_date() -> None:
    assert PAGE_CONTRACT.read_text(encoding="utf-8") == page_contract_text(), (
        "controller/web/contract.json is out of date: run `python -m controller.contract` and commit it")


def test_it_holds_the_phases_the_roles_and_the_kinds() -> None:
    page = page_contract()
    assert page["phases"] == list(PHASES)
    assert set(page["round_phases"]) == ROUND_PHASES and set(page["between_rounds"]) == BETWEEN_ROUNDS
    assert page["alarm_kinds"] == list(ALARM_KINDS)
    assert list(page["roles"]) == list(COMMAND_ROLES)
    for name, role in page["roles"].items():
        assert set(role["verbs"]) == ROLES[name].verbs and set(role["alarm_kinds"]) == ROLES[name].alarm_kinds
        assert role["reason_required"] is ROLES[name].reason_required
    json.dumps(page)  # JSON as it is


def _page_kind(rules: dict[str, object], code: str, halts: bool) -> str:
    """contract.js alarmKind for an alarm that carries neither ``kind`` nor ``integrity`` (an older table)."""
    assert isinstance(rules["halting_integrity_prefixes"], list) and isinstance(rules["integrity_codes"], list)
    assert isinstance(rules["device_codes"], list)
    if code.startswith(str(rules["journal_prefix"])):
        return "journal"
    if (halts and any(code.startswith(p) for p in rules["halting_integrity_prefixes"])) or code in rules[
            "integrity_codes"]:
        return "integrity"
    if code.startswith(str(rules["device_prefix"])) or code in rules["device_codes"]:
        return "device"
    return "procedure"


@pytest.mark.parametrize("code", ["journal_write", "journal_witness", "integrity_card_count", "peek_mismatch",
                                  "irregularity:shoe", "irregularity:card_reader", "irregularity:program",
                                  "device_lost:shoe", "clock_jump", "shuffle_quality", "deck_change_due",
                                  "deck_change_overdue", "dead_card", "insufficient_cards"])
@pytest.mark.parametrize("halts", [False, True])
def test_the_pages_rule_gives_each_alarm_the_kind_the_table_gives_it(code: str, halts: bool) -> None:
    assert _page_kind(page_contract()["alarm_kind_rules"], code, halts) == alarm_kind(code, halts)
