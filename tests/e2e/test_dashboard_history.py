"""The table view's round history, from the retained ``<prefix>/<table>/history`` (DESIGN, "game recall").

Against the test publisher (``tests/e2e/publisher.py``: each table's history retained at start,
``t01``'s republished when its scripted round settles) and against a real demo's journal on Mosquitto:
a page opened after the rounds were played shows them at once, as ``tablectl recall --json`` has them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from controller.dashboard.server import Dashboard
from tests.e2e.harness import BrokerWatch, Publisher, money_text, tablectl_command
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(120)

# what the History panel shows, newest first
HISTORY = """() => [...document.querySelectorAll('#history tr[data-round]')].map((tr) => ({
  round: tr.dataset.round,
  dealer: [...tr.querySelectorAll('[data-field="dealer"] .card')].map((c) => c.dataset.card),
  total: tr.querySelector('[data-field="dealer-total"]').textContent.trim(),
  nets: Object.fromEntries([...tr.querySelectorAll('[data-field="nets"] [data-spot]')].map(
    (s) => [s.dataset.spot, s.textContent.split(': ')[1]])),
  time: tr.querySelector('[data-field="time"]').textContent,
}))"""


def expected_history(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The History panel's rows for a ``history`` message (newest first); times are checked apart."""
    return [{"round": str(r["round"]), "dealer": r["dealer"]["cards"],
             "total": f"{r['dealer']['total']}{' BJ' if r['dealer']['blackjack'] else ''}",
             "nets": {n: money_text(s["net"], signed=True) for n, s in r["spots"].items()}}
            for r in reversed(rounds)]


def shown(page: Page) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate(HISTORY)
    for row in rows:
        assert row.pop("time"), row  # every round shows when it ended
    return rows


def open_table(page: Page, url: str, table: str) -> None:
    page.goto(f"{url}#/{table}")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")


def test_table_view_shows_the_retained_history_at_once_and_follows_the_settlement(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    history = watch.wait_for("t01", "history", lambda h: len(h) == 3)
    open_table(page, dashboard.url, "t01")
    expect(page.locator("#history tr[data-round]")).to_have_count(3)
    assert shown(page) == expected_history(history)
    expect(page.locator("#history-count")).to_have_text("(last 3)")
    # the "last round" panel is filled from the history: no "no round settled since this page opened"
    last = page.locator("#last-round .last-round")
    expect(last).to_have_attribute("data-round", "56")
    expect(last.locator('tr[data-spot="1"][data-hand="1"]')).to_contain_text("+$10")
    expect(last.locator('tr.lr-net [data-field="net"]').first).to_have_text("+$20")
    expect(page.locator("#last-round")).not_to_contain_text("No round settled")

    for _ in range(7):  # t01's scripted round 57, to its settlement
        publisher.step()
    history = watch.wait_for("t01", "history", lambda h: h[-1]["round"] == 57)
    expect(page.locator("#history tr[data-round]").first).to_have_attribute("data-round", "57")
    assert shown(page) == expected_history(history)
    expect(page.locator("#last-round .last-round")).to_have_attribute("data-round", "57")

    # another table's view shows that table's history (the page follows one table's topic)
    page.click("a.back")
    page.locator('.tile[data-table="t02"]').click()
    expect(page.locator("#history tr[data-round]")).to_have_count(1)
    assert shown(page) == expected_history(watch.get("t02", "history"))
    expect(page.locator("#history tr[data-round]").first).to_have_attribute("data-round", "130")


def test_a_page_opened_after_a_demo_shows_its_last_rounds_as_recall_has_them(
    page: Page, dashboard: Dashboard, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    demo = subprocess.run([*tablectl_command(), "demo", "--rounds", "12", "--speed", "max", "--seed", "3",
                           "--broker", mosquitto.url, "--state-dir", str(state), "--quiet"],
                          capture_output=True, text=True, timeout=90)
    assert demo.returncode == 0, demo.stderr
    recall = subprocess.run([*tablectl_command(), "recall", str(state / "t01.journal"), "--json"],
                            capture_output=True, text=True, timeout=30)
    assert recall.returncode == 0, recall.stderr
    rounds = json.loads(recall.stdout)
    assert [r["round"] for r in rounds] == list(range(3, 13))
    open_table(page, dashboard.url, "t01")  # the demo is over: the table is offline, its history retained
    expect(page.locator("#table")).to_have_attribute("data-status", "offline")
    expect(page.locator("#history tr[data-round]")).to_have_count(10)
    assert shown(page) == expected_history(rounds)
    expect(page.locator("#last-round .last-round")).to_have_attribute("data-round", "12")
    dealer = page.locator("#last-round .lr-dealer .card").evaluate_all("(cs) => cs.map((c) => c.dataset.card)")
    assert dealer == rounds[-1]["dealer"]["cards"]
