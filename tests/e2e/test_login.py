"""The dashboard logs in to a broker that enforces the roles (DESIGN.md, "Operators and roles").

A Mosquitto configured by ``tablectl broker-config`` refuses anonymous clients; a real table
(the table service of the demo, simulated devices) publishes as ``t01`` with its generated
password. The page shows a login form (user, password, role); the ``dashboard`` user sees the pit but
no acknowledge button; surveillance acknowledges an integrity alarm with a reason on its own topic and
it clears, journaled under its name; a pit user sees no button for it, and one who claims the
surveillance role is dropped by the broker (nothing cleared, nothing journaled as anyone); a wrong
password gets a clear message. The password stays out of the address and of localStorage.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from controller.dashboard.server import Dashboard, serve_dashboard
from controller.game import events as ev
from controller.profiles import load_rules
from controller.service.table_service import THEORY_WAIT_S
from controller.sim.demo import DemoTable
from tests.mqtt.pit_broker import PIT, PREFIX, SURVEILLANCE, TECHNICIAN, Broker
from tests.service.test_table_service import _opts

WAIT_MS = 10000


class RunningTable:
    """A demo table (``t01``) playing on its own event loop in a thread, logged in as ``t01``."""

    def __init__(self, pit: Broker, state: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="table", daemon=True)
        self.thread.start()
        url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
        opts = _opts(load_rules("house-h17"), rounds=None, seed=6, prefix=PREFIX, speed="realtime")
        state.mkdir(parents=True, exist_ok=True)
        import io

        self.table = DemoTable("t01", opts, state, url, io.StringIO())
        self.task: asyncio.Future[Any] = asyncio.run_coroutine_threadsafe(self.table.run(), self.loop)

    def call(self, fn: Any, *args: Any) -> Any:
        async def run() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def raise_integrity_alarm(self) -> int:
        self.call(self.table.service.apply, ev.Irregularity("shoe", "a card left the shoe unread: test", halts=True))
        return int(self.call(lambda: max(self.table.core.table.alarms)))

    def alarms(self) -> list[int]:
        return list(self.call(lambda: list(self.table.core.table.alarms)))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)

        async def closing() -> None:
            await asyncio.sleep(0.1)
            await self.table.close()

        try:
            # a stop waits (bounded) for the profile's theoretical figures when the last analytics lacked them
            # (THEORY_WAIT_S), then drains the publisher: on a loaded machine that alone passed 20 s in CI
            asyncio.run_coroutine_threadsafe(closing(), self.loop).result(THEORY_WAIT_S + 45)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


@pytest.fixture
def table(pit: Broker, tmp_path: Path) -> Iterator[RunningTable]:
    t = RunningTable(pit, tmp_path / "state")
    try:
        yield t
    finally:
        t.close()


@pytest.fixture
def dash(pit: Broker) -> Iterator[Dashboard]:
    d = serve_dashboard(0, f"ws://127.0.0.1:{pit.ws_port}", PREFIX)
    try:
        yield d
    finally:
        d.stop()


def _login(page: Page, dash: Dashboard, user: str, password: str, role: str | None = None) -> None:
    page.goto(dash.url)
    expect(page.locator("#login")).to_be_visible(timeout=WAIT_MS)  # the anonymous connection was refused
    page.locator("#login-user").fill(user)
    page.locator("#login-password").fill(password)
    if role is not None:
        page.locator("#login-role").select_option(role)
    page.locator("#login-submit").click()


def _no_secret_kept(page: Page, password: str) -> None:
    assert password not in page.url
    assert password not in page.evaluate("JSON.stringify(Object.assign({}, localStorage, sessionStorage))")
    assert password not in page.locator("#login-password").input_value()


def test_the_dashboard_user_sees_the_pit_but_no_acknowledge_button(
        page: Page, pit: Broker, table: RunningTable, dash: Dashboard) -> None:
    _login(page, dash, "dashboard-2", pit.password("dashboard-2"))  # a screen's user: read-only whatever is chosen
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    expect(page.locator('.tile[data-table="t01"]')).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#user")).to_contain_text("dashboard-2 (read-only)")
    alarm_id = table.raise_integrity_alarm()
    page.locator('.tile[data-table="t01"]').click()
    expect(page.locator(f'#alarms li[data-alarm="{alarm_id}"]')).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#alarms button[data-ack]")).to_have_count(0)
    expect(page.locator("#alarms input[data-reason]")).to_have_count(0)
    expect(page.locator("#pit-commands")).to_be_hidden()
    _no_secret_kept(page, pit.password("dashboard-2"))


def test_surveillance_acknowledges_an_integrity_alarm_with_a_reason(
        page: Page, pit: Broker, table: RunningTable, dash: Dashboard) -> None:
    alarm_id = table.raise_integrity_alarm()
    _login(page, dash, SURVEILLANCE, pit.password(SURVEILLANCE), "surveillance")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    expect(page.locator("#user")).to_contain_text(f"{SURVEILLANCE} (surveillance)")
    page.locator('.tile[data-table="t01"]').click()
    item = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
    expect(item).to_be_visible(timeout=WAIT_MS)
    button = item.locator("button[data-ack]")
    expect(button).to_be_enabled()
    button.click()  # no reason typed: the page says one is needed, nothing is sent
    expect(page.locator("#ack-result")).to_contain_text("reason")
    assert alarm_id in table.alarms()
    item.locator("input[data-reason]").fill("card re-read at the shoe")
    item.locator("button[data-ack]").click()
    expect(page.locator("#ack-result")).to_have_attribute("data-ok", "true", timeout=WAIT_MS)
    expect(page.locator(f'#alarms li[data-alarm="{alarm_id}"]')).to_have_count(0, timeout=WAIT_MS)
    assert alarm_id not in table.alarms()
    rows = table.call(lambda: [r.event for r in table.table.journal.inputs_since(0)])
    assert {"type": "alarm_ack", "alarm_id": alarm_id, "operator": SURVEILLANCE,
            "reason": "card re-read at the shoe"} in rows
    _no_secret_kept(page, pit.password(SURVEILLANCE))


def test_a_pit_user_cannot_clear_an_integrity_alarm_even_claiming_surveillance(
        page: Page, pit: Broker, table: RunningTable, dash: Dashboard) -> None:
    alarm_id = table.raise_integrity_alarm()
    _login(page, dash, PIT, pit.password(PIT), "pit")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    page.locator('.tile[data-table="t01"]').click()
    item = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
    expect(item).to_be_visible(timeout=WAIT_MS)
    expect(item.locator("button[data-ack]")).to_have_count(0)  # not his role's kind of alarm
    expect(item.locator('[data-field="ack-by"]')).to_contain_text("surveillance")
    # the same person logs in again claiming surveillance: the page sends on cmd/surveillance/s.jones,
    # which the broker's ACL drops; the table never hears it
    page.evaluate("location.hash = ''")
    _login(page, dash, PIT, pit.password(PIT), "surveillance")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    page.locator('.tile[data-table="t01"]').click()
    item = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
    item.locator("input[data-reason]").fill("trust me")
    item.locator("button[data-ack]").click()
    expect(page.locator("#ack-result")).to_have_attribute("data-ok", "false", timeout=WAIT_MS)
    expect(page.locator("#ack-result")).to_contain_text("no answer")
    assert alarm_id in table.alarms()
    rows = table.call(lambda: [r.event for r in table.table.journal.inputs_since(0)])
    assert not any(r.get("operator") == PIT for r in rows)


def test_a_pit_user_sets_limits_in_his_own_name_and_a_technician_has_no_pit_commands(
        page: Page, pit: Broker, table: RunningTable, dash: Dashboard) -> None:
    _login(page, dash, PIT, pit.password(PIT), "pit")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    page.locator('.tile[data-table="t01"]').click()
    expect(page.locator("#pit-commands")).to_be_visible(timeout=WAIT_MS)
    page.locator("#limits-min").fill("50")
    page.locator("#limits-max").fill("10")
    page.locator("#limits-set").click()
    result = page.locator("#cmd-result")
    expect(result).to_have_attribute("data-ok", "false", timeout=WAIT_MS)
    expect(result).to_contain_text("set_limits: refused: max_bet: must not be below min_bet (50)")
    page.locator("#limits-min").fill("10")
    page.locator("#limits-max").fill("1000")
    page.locator("#limits-set").click()
    expect(result).to_have_attribute("data-ok", "true", timeout=WAIT_MS)
    expect(result).to_contain_text("set_limits accepted")
    rows = table.call(lambda: [r.event for r in table.table.journal.inputs_since(0)])
    assert any(r["type"] == "set_limits" and r["operator"] == PIT and r["max_bet"] == 100000 for r in rows)
    refusals = table.call(lambda: [r.body for r in table.table.journal.records(1) if "command_refused" in r.body])
    assert len(refusals) == 1 and f'"user":"{PIT}"' in refusals[0] and "below min_bet" in refusals[0]
    # a technician sends no pit commands: the panel is not there
    page.evaluate("location.hash = ''")
    _login(page, dash, TECHNICIAN, pit.password(TECHNICIAN), "technician")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    page.locator('.tile[data-table="t01"]').click()
    expect(page.locator("#table")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#pit-commands")).to_be_hidden()


def test_a_wrong_password_gets_a_clear_message(page: Page, pit: Broker, dash: Dashboard) -> None:
    _login(page, dash, SURVEILLANCE, "not-the-password", "surveillance")
    error = page.locator("#login-error")
    expect(error).to_be_visible(timeout=WAIT_MS)
    expect(error).to_contain_text("Wrong user name or password")
    expect(page.locator("#login")).to_be_visible()
    # and then the right one works
    page.locator("#login-password").fill(pit.password(SURVEILLANCE))
    page.locator("#login-submit").click()
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=WAIT_MS)
    expect(page.locator("#login")).to_be_hidden()
    _no_secret_kept(page, pit.password(SURVEILLANCE))


def test_a_user_name_outside_the_charset_is_refused_on_the_page(page: Page, pit: Broker, dash: Dashboard) -> None:
    _login(page, dash, "S.Jones", pit.password(PIT), "pit")
    expect(page.locator("#login-error")).to_contain_text("a-z 0-9 . _ -")
    expect(page.locator("#login")).to_be_visible()
