"""The floor page shows each table's build and marks a mixed floor (DESIGN.md, "Program authentication"; issue 36):
each table's retained ``state`` carries ``software`` (version, build digest); the page shows every table's build
and marks the tables whose build differs from the most common one, and the unverified ones. Headless Chromium on
the session's Mosquitto, tables published as a table publishes them."""

from __future__ import annotations

import copy

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.floor_page import Json, Retained, dashboard_for, open_floor
from tests.mqtt_broker import Mosquitto

pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("floor-page")]

CERTIFIED, OTHER = "a1" * 32, "b2" * 32
STATE: Json = {"seq": 1, "table_id": "t01", "round": 0, "phase": "betting", "halted": None, "spots": {},
               "active": None, "dealer": {"cards": [], "total": 0, "blackjack": None},
               "limits": {"min_bet": "5", "max_bet": "500"}, "alarms": 0, "pit": "pit 1",
               "totals": {"rounds": 0, "handle": "0.00", "house_net": "0.00"}}


def _state(table: str, build: str | None, *, software: bool = True) -> Json:
    s = copy.deepcopy(STATE)
    s["table_id"] = table
    if software:
        s["software"] = {"version": "0.1.0", "build": build, "verified": build is not None}
    return s


def test_the_floor_page_shows_each_build_and_marks_a_mixed_floor(page: Page, mosquitto_session: Mosquitto) -> None:
    prefix = "floorbuilds"
    plan = {"t01": CERTIFIED, "t02": CERTIFIED, "t03": OTHER, "t04": CERTIFIED, "t05": None}
    pub = Retained(mosquitto_session, prefix)
    try:
        for table, build in plan.items():
            pub.table(table, state=_state(table, build))
        pub.table("t06", state=_state("t06", None, software=False))  # an older table: says nothing of its program
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            open_floor(page, dash.url)
            floor = page.locator("#floor")
            expect(floor).to_have_attribute("data-tables", "6")
            expect(floor).to_have_attribute("data-builds", "2")
            for table in ("t01", "t02", "t04"):
                row = page.locator(f'#floor tr[data-table="{table}"]')
                expect(row).to_have_attribute("data-build", "")
                expect(row.locator('[data-field="build"]')).to_have_text(f"build {CERTIFIED[:12]}")
                expect(row.locator('[data-field="build"]')).to_have_attribute("title", f"0.1.0: {CERTIFIED}")
            odd = page.locator('#floor tr[data-table="t03"]')
            expect(odd).to_have_attribute("data-build", "differs")
            expect(odd.locator('[data-field="build"]')).to_have_text(f"build {OTHER[:12]} differs")
            expect(odd.locator('[data-field="build"]')).to_have_class("floor-build badge bad")
            expect(page.locator('#floor tr[data-table="t05"]')).to_have_attribute("data-build", "unverified")
            expect(page.locator('#floor tr[data-table="t05"] [data-field="build"]')).to_have_text("build unverified")
            expect(page.locator('#floor tr[data-table="t06"] [data-field="build"]')).to_have_count(0)
            # t03 is upgraded to the certified build: the mark goes
            pub.table("t03", state=_state("t03", CERTIFIED))
            expect(odd).to_have_attribute("data-build", "")
            expect(floor).to_have_attribute("data-builds", "1")
    finally:
        pub.clear([*plan, "t06"])
        pub.close()
