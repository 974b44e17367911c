"""The page's contract.js in a browser: the phases, roles and alarm kinds controller/contract defines, read from
contract.json; an alarm without a published ``kind`` gets the kind the table's own alarm_kind gives it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page

from controller.contract.alarms import alarm_kind
from controller.contract.page import page_contract
from controller.dashboard.server import Dashboard, serve_dashboard

CODES = ("journal_write", "journal_witness", "integrity_card_count", "peek_mismatch", "irregularity:shoe",
         "irregularity:card_reader", "irregularity:program", "device_lost:shoe", "clock_jump", "shuffle_quality",
         "deck_change_due", "deck_change_overdue", "dead_card", "insufficient_cards")


@pytest.fixture(scope="module")
def served() -> Iterator[Dashboard]:
    d = serve_dashboard(0, "ws://127.0.0.1:9", "tables")
    try:
        yield d
    finally:
        d.stop()


def test_contract_js_reads_the_contract_and_kinds_alarms_as_the_table_does(served: Dashboard, page: Page) -> None:
    page.goto(served.url)  # the page itself (its broker is not there: the module is what is read)
    got = page.evaluate("""async (codes) => {
        const c = await import("/contract.js");
        const kinds = [];
        for (const code of codes) for (const halts of [false, true]) kinds.push(c.alarmKind({ code, halts }));
        return { contract: c.CONTRACT, between: [...c.BETWEEN_ROUNDS], settled: c.PHASE.SETTLED,
                 roles: c.ROLES, user: [c.USER_NAME.test("s.jones"), c.USER_NAME.test("S.Jones")],
                 published: c.alarmKind({ code: "dead_card", halts: false, kind: "integrity" }), kinds };
    }""", list(CODES))
    contract = page_contract()
    assert got["contract"] == contract and got["roles"] == contract["roles"]
    assert got["between"] == contract["between_rounds"] and got["settled"] == "settled"
    assert got["user"] == [True, False]
    assert got["published"] == "integrity", "the kind a table publishes is taken as it is"
    assert got["kinds"] == [alarm_kind(code, halts) for code in CODES for halts in (False, True)]
