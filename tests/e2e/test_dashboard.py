"""The pit dashboard in headless Chromium against a real Mosquitto (WebSockets listener).

Each test gets a fresh broker, the test publisher (``tests/e2e/publisher.py``: tables ``t01``
and ``t02`` with DESIGN-shaped ``status``/``state``/``events``/``alarms``), the dashboard served
by :func:`controller.dashboard.server.serve_dashboard`, and a new page. What the page shows is
compared with the ``state`` messages as a separate MQTT subscriber received them.

Set ``DASHBOARD_SCREENSHOTS=1`` to also save the overview and a table view into
``docs/screenshots/`` (the same pictures ``docs/screenshots/make.py`` takes).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from controller.dashboard.server import Dashboard
from tests.e2e.harness import BrokerWatch, Publisher, acknowledge_on_page, expected_table, read_table, shown_table
from tests.e2e.publisher import initial_state
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(60)

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
HOLE_CARD = "7C"  # t01's hole card in the publisher's script, turned at the dealer's turn


def open_dashboard(page: Page, dash: Dashboard, hash_: str = "", query: str = "") -> None:
    page.goto(dash.url + query + hash_)
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")


def wait_seq(page: Page, table: str, seq: int) -> None:
    expect(page.locator("#table")).to_have_attribute("data-seq", str(seq))
    assert page.locator("#table").get_attribute("data-table") == table


def shot(page: Page, name: str) -> None:
    if os.environ.get("DASHBOARD_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / name), full_page=True)


# ---- the pit overview --------------------------------------------------------------------


def test_overview_lists_both_tables_with_their_figures(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    open_dashboard(page, dashboard)
    t01 = page.locator('.tile[data-table="t01"]')
    t02 = page.locator('.tile[data-table="t02"]')
    expect(t01).to_have_attribute("data-status", "online")
    expect(t02).to_have_attribute("data-status", "online")
    expect(page.locator(".tile")).to_have_count(2)
    s1 = watch.state_with_seq("t01", 1040)
    s2 = watch.state_with_seq("t02", 2210)
    for tile, state in ((t01, s1), (t02, s2)):
        expect(tile.locator('[data-field="phase"]')).to_have_text(state["phase"])
        expect(tile.locator('[data-field="rounds"]')).to_have_text(str(state["totals"]["rounds"]))
        pct = f"{round(state['shoe']['penetration'] * 100)}%"
        expect(tile.locator('[data-field="penetration"]')).to_contain_text(pct)
        expect(tile.locator('[data-field="deck"]')).to_contain_text(state["deck_set"]["id"])
    expect(t01).to_have_attribute("data-alarms", "0")
    expect(t02).to_have_attribute("data-alarms", str(len(watch.get("t02", "alarms"))))
    expect(t02.locator('[data-field="penetration"]')).to_contain_text("cut card")
    expect(t02.locator('[data-field="deck-due"]')).to_have_class("warn")  # 15 minutes to the deck change
    shot(page, "overview.png")

    # filter by text, by condition; sort
    page.fill("#filter", "t02")
    expect(page.locator(".tile")).to_have_count(1)
    expect(page.locator(".tile").first).to_have_attribute("data-table", "t02")
    page.fill("#filter", "")
    page.select_option("#show", "alarms")
    expect(page.locator(".tile")).to_have_count(1)
    expect(page.locator(".tile").first).to_have_attribute("data-table", "t02")
    page.select_option("#show", "all")
    expect(page.locator(".tile")).to_have_count(2)
    page.select_option("#sort", "alarms")
    expect(page.locator(".tile").first).to_have_attribute("data-table", "t02")
    page.select_option("#sort", "table")
    expect(page.locator(".tile").first).to_have_attribute("data-table", "t01")

    t02.click()
    expect(page.locator("#table")).to_be_visible()
    wait_seq(page, "t02", 2210)
    assert shown_table(read_table(page)) == expected_table(s2)
    expect(page.locator('.spot[data-spot="4"] [data-field="insurance"]')).to_contain_text("$12.50")
    expect(page.locator('.spot[data-spot="2"] .hand.active')).to_have_attribute("data-hand", "1")


# ---- one table through a round -----------------------------------------------------------


def test_table_view_follows_the_round_and_the_hole_card_stays_face_down_until_turned(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    open_dashboard(page, dashboard, "#/t01")
    wait_seq(page, "t01", 1040)
    turned = False
    for _ in range(8):  # the whole scripted round, then the next round's betting
        _, _, phase, seq = publisher.step().split()
        state = watch.state_with_seq("t01", int(seq))
        wait_seq(page, "t01", int(seq))
        want = expected_table(state)
        assert shown_table(read_table(page)) == want, f"phase {phase}, seq {seq}"
        expect(page.locator(f'#events li[data-seq="{seq}"]')).to_have_count(1)
        if None in state["dealer"]["cards"]:
            assert not turned
            expect(page.locator("#dealer .card.back")).to_have_count(1)
            assert f'data-card="{HOLE_CARD}"' not in page.content()
            if phase == "players":
                shot(page, "table.png")
        elif len(state["dealer"]["cards"]) >= 2:
            turned = True
            expect(page.locator("#dealer .card.back")).to_have_count(0)
            expect(page.locator(f'#dealer .card[data-card="{HOLE_CARD}"]')).to_have_count(1)
        if phase == "settled":
            for n, spot in state["spots"].items():
                hand = spot["hands"][0]
                outcome = page.locator(f'.spot[data-spot="{n}"] [data-field="outcome"]')
                expect(outcome).to_have_text(hand["outcome"])
            expect(page.locator('.spot[data-spot="1"] [data-field="payout"]')).to_have_text("+$20")
            expect(page.locator('.spot[data-spot="3"] [data-field="payout"]')).to_have_text("\u2212$25")
    assert turned
    # after the next round began, the last round's outcomes stay in their panel
    last = page.locator("#last-round .last-round")
    expect(last).to_have_attribute("data-round", "57")
    expect(last.locator('tr[data-spot="1"]')).to_contain_text("win")
    expect(last.locator('tr[data-spot="1"]')).to_contain_text("+$20")
    expect(last.locator('tr[data-spot="3"]')).to_contain_text("\u2212$25")
    expect(last.locator('tr[data-spot="6"]')).to_contain_text("push")


# ---- alarms ------------------------------------------------------------------------------


def test_an_alarm_appears_and_is_acknowledged_through_the_command_topic(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    open_dashboard(page, dashboard, "#/t01")
    wait_seq(page, "t01", 1040)
    expect(page.locator('[data-field="no-alarms"]')).to_be_visible()
    alarm_id = int(publisher.send("alarm t01", "alarm").split()[2])
    alarm = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
    expect(alarm).to_contain_text("card drawn for spot 4")
    expect(page.locator(".halted-banner")).to_contain_text("procedure alarm")
    acknowledge_on_page(page, alarm_id)
    expect(page.locator(".halted-banner")).to_have_count(0)
    assert watch.get("t01", "alarms") == []
    # and the overview agrees
    page.click("a.back")
    expect(page.locator('.tile[data-table="t01"]')).to_have_attribute("data-alarms", "0")


def test_a_refused_acknowledge_shows_the_tables_reason(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    # an alarm list the table does not know (as if another pit system cleared it meanwhile)
    ghost = '[{"id": 99, "code": "integrity", "message": "card count mismatch", "halts": true}]'
    watch.publish("tables/t02/alarms", ghost, retain=True)
    open_dashboard(page, dashboard, "#/t02")
    page.locator('#alarms li[data-alarm="99"] button.ack').click()
    result = page.locator("#ack-result")
    expect(result).to_have_attribute("data-ok", "false")
    expect(result).to_contain_text("alarm 99: refused: alarm_id: no active alarm 99")


# ---- offline and stale -------------------------------------------------------------------


def test_killing_the_service_marks_its_tables_offline_by_the_last_will(
    page: Page, dashboard: Dashboard, publisher: Publisher
) -> None:
    open_dashboard(page, dashboard)
    for t in ("t01", "t02"):
        expect(page.locator(f'.tile[data-table="{t}"]')).to_have_attribute("data-status", "online")
    publisher.kill()
    for t in ("t01", "t02"):
        tile = page.locator(f'.tile[data-table="{t}"]')
        expect(tile).to_have_attribute("data-status", "offline")
        expect(tile).to_have_class("tile is-stale is-offline" if t == "t01" else "tile is-stale is-offline has-alarms")
        expect(tile.locator('[data-field="status"]')).to_have_text("OFFLINE")
    page.locator('.tile[data-table="t01"]').click()
    expect(page.locator("#table")).to_have_attribute("data-status", "offline")
    expect(page.locator('#table-head [data-field="stale"]')).to_contain_text("offline")


def test_an_explicit_stop_marks_the_tables_offline(page: Page, dashboard: Dashboard, publisher: Publisher) -> None:
    open_dashboard(page, dashboard, "#/t01")
    expect(page.locator("#table")).to_have_attribute("data-status", "online")
    publisher.send("stop", "stopped")
    expect(page.locator("#table")).to_have_attribute("data-status", "offline")
    expect(page.locator("#table")).to_have_attribute("data-stale", "true")


def test_a_table_whose_state_stops_is_marked_stale_until_it_speaks_again(
    page: Page, dashboard: Dashboard, publisher: Publisher
) -> None:
    open_dashboard(page, dashboard, query="&stale=1")
    tile = page.locator('.tile[data-table="t01"]')
    expect(tile).to_have_attribute("data-stale", "true")  # online, but nothing new for 1 s
    expect(tile.locator('[data-field="status"]')).to_have_text("STALE")
    expect(tile).to_have_attribute("data-status", "online")
    publisher.step()
    expect(tile).to_have_attribute("data-stale", "false")


def test_losing_the_broker_marks_everything_stale(
    page: Page, dashboard: Dashboard, publisher: Publisher, mosquitto: Mosquitto
) -> None:
    open_dashboard(page, dashboard)
    expect(page.locator('.tile[data-table="t02"]')).to_have_attribute("data-stale", "false")
    mosquitto.stop()
    expect(page.locator("#conn")).not_to_have_attribute("data-state", "connected")
    expect(page.locator('.tile[data-table="t01"]')).to_have_attribute("data-stale", "true")
    expect(page.locator('.tile[data-table="t02"]')).to_have_attribute("data-stale", "true")


# ---- time in phase and idle tables -------------------------------------------------------


def publish_table(watch: BrokerWatch, table: str, *, phase: str, in_phase_s: float, status: str = "online",
                  clock_skew_s: float = 0.0) -> None:
    """Publish (retained) a quiet table's ``status`` and a ``state`` made now on a table PC whose clock
    is ``clock_skew_s`` off the browser's, the table ``in_phase_s`` seconds in ``phase``."""
    ts = time.time() + clock_skew_s
    state = {**initial_state(table), "phase": phase, "ts": ts, "phase_since": ts - in_phase_s}
    watch.publish(f"tables/{table}/status", status, retain=True)
    watch.publish(f"tables/{table}/state", json.dumps(state), retain=True)


def seconds_shown(page: Page, selector: str) -> int:
    return int(page.locator(selector).get_attribute("data-seconds") or "-1")


def test_tiles_and_the_table_view_show_the_time_in_phase_every_second_from_the_tables_clock(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    # the table PC's clock an hour ahead of the browser's: the page counts from the state's ts
    publish_table(watch, "t03", phase="shuffling", in_phase_s=30, clock_skew_s=3600)
    open_dashboard(page, dashboard)
    t01 = page.locator('.tile[data-table="t01"]')
    age = '.tile[data-table="t01"] [data-field="phase-age"]'
    expect(page.locator(age)).to_have_text(re.compile(r"^for 1\d s$"))  # in betting 12 s before its state
    expect(page.locator('.tile[data-table="t02"] [data-field="phase-age"]')).to_have_text(re.compile(r"^for 4\d s$"))
    expect(page.locator('.tile[data-table="t03"] [data-field="phase-age"]')).to_have_text(re.compile(r"^for 3\d s$"))
    # it counts on with no new state
    first, seq = seconds_shown(page, age), t01.get_attribute("data-seq")
    page.wait_for_timeout(3200)  # the page redraws every second: at least 2 s more by now
    assert seconds_shown(page, age) >= first + 2
    assert t01.get_attribute("data-seq") == seq == "1040"
    # a state in the same phase (betting) goes on counting; a new phase starts again from zero
    assert publisher.step().split()[2] == "betting"
    expect(t01).to_have_attribute("data-seq", "1043")
    assert seconds_shown(page, age) >= first + 2
    assert publisher.step().split()[2] == "players"
    expect(t01).to_have_attribute("data-seq", "1052")
    expect(page.locator(age)).to_have_text(re.compile(r"^for [0-2] s$"))
    expect(t01).to_have_attribute("data-idle", "false")
    t01.click()
    head_age = '#table-head [data-field="phase-age"]'
    expect(page.locator(head_age)).to_have_text(re.compile(r"^for \d s$"))
    shown = seconds_shown(page, head_age)
    expect(page.locator(head_age)).not_to_have_attribute("data-seconds", str(shown))  # ticking
    expect(page.locator("#table")).to_have_attribute("data-idle", "false")


def test_a_table_in_the_same_phase_for_minutes_is_marked_idle_in_words(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    publish_table(watch, "t03", phase="betting", in_phase_s=300)
    publish_table(watch, "t04", phase="players", in_phase_s=250, clock_skew_s=-600)
    open_dashboard(page, dashboard)
    t03 = page.locator('.tile[data-table="t03"]')
    t04 = page.locator('.tile[data-table="t04"]')
    expect(t03).to_have_attribute("data-idle", "true")
    expect(t03).to_have_class(re.compile(r"\bis-idle\b"))
    expect(t03.locator('[data-field="idle"]')).to_have_text("idle for 5 min: no round in progress")
    expect(t03.locator('[data-field="phase-age"]')).to_have_text(re.compile(r"^for 5 min \d\d s$"))
    expect(t04.locator('[data-field="idle"]')).to_have_text("idle for 4 min: round stalled in players")
    # visibly: the idle note in its own colour, the tile's edge dashed
    assert t03.evaluate("el => getComputedStyle(el).borderLeftStyle") == "dashed"
    idle_color = t03.locator('[data-field="idle"]').evaluate("el => getComputedStyle(el).color")
    assert idle_color != t03.evaluate("el => getComputedStyle(el).color")
    # the busy tables are not idle
    for busy in ("t01", "t02"):
        expect(page.locator(f'.tile[data-table="{busy}"]')).to_have_attribute("data-idle", "false")
        expect(page.locator(f'.tile[data-table="{busy}"] [data-field="idle"]')).to_have_count(0)
    expect(page.locator("#counts")).to_contain_text("2 idle")
    # idle tables need attention, and the filter finds them by the word
    page.fill("#filter", "idle")
    expect(page.locator(".tile")).to_have_count(2)
    page.fill("#filter", "")
    page.select_option("#show", "attention")
    expect(page.locator('.tile[data-table="t03"]')).to_have_count(1)
    expect(page.locator('.tile[data-table="t01"]')).to_have_count(0)
    t03.click()
    expect(page.locator("#table")).to_have_attribute("data-idle", "true")
    expect(page.locator('#table-head [data-field="idle"]')).to_have_text("idle for 5 min: no round in progress")
    # a new phase ends it
    publish_table(watch, "t03", phase="dealing", in_phase_s=1)
    expect(page.locator("#table")).to_have_attribute("data-idle", "false")
    expect(page.locator('#table-head [data-field="idle"]')).to_have_count(0)


def test_a_closed_or_offline_table_is_not_idle(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    publish_table(watch, "t05", phase="closed", in_phase_s=3600)
    publish_table(watch, "t06", phase="betting", in_phase_s=600, status="offline")
    open_dashboard(page, dashboard)
    t05 = page.locator('.tile[data-table="t05"]')
    t06 = page.locator('.tile[data-table="t06"]')
    expect(t05.locator('[data-field="phase-age"]')).to_have_text(re.compile(r"^for 1 h 00 min$"))
    expect(t06.locator('[data-field="phase-age"]')).to_have_text(re.compile(r"^for 10 min \d\d s$"))
    for tile in (t05, t06):
        expect(tile).to_have_attribute("data-idle", "false")
        expect(tile).not_to_have_class(re.compile(r"\bis-idle\b"))
        expect(tile.locator('[data-field="idle"]')).to_have_count(0)
    assert "idle" not in (t05.text_content() or "") + (t06.text_content() or "")
    t05.click()
    expect(page.locator("#table")).to_have_attribute("data-idle", "false")
    expect(page.locator('#table-head [data-field="idle"]')).to_have_count(0)
