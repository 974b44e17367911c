"""The pit dashboard in headless Chromium against the REAL demo (``tablectl demo``).

Unlike ``test_dashboard.py`` (a scripted stand-in publisher), these start the demo as a
subprocess with a seeded shoe and two tables, either on a real Mosquitto (``--broker``, the page
served by ``tablectl dashboard`` and connected to Mosquitto's WebSockets listener) or on the
demo's own embedded broker (no ``--broker``: the demo prints the WebSockets and dashboard
addresses, which the test reads from its output). Only the command line and the MQTT contract
of DESIGN.md are relied on, plus, for the alarm, the journal the demo resumes from.

The demo is live, so the page is compared with what a separate MQTT subscriber
(:class:`BrokerWatch`) received, state by state: one call into the page reads the ``seq`` the
table view was drawn from together with everything drawn, and that must equal the ``state``
with that ``seq`` (every ``state`` the subscriber received is kept). Once the demo has stopped,
the page must show exactly the latest ``state``.
"""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.harness import (
    BrokerWatch,
    Tablectl,
    acknowledge_on_page,
    expected_table,
    money_text,
    raise_deck_change_warning,
    read_table,
    shown_table,
)
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(90)

TABLES = ("t01", "t02")
PROFILE = "house-h17"
CARD_NAMES = {"A": "ace", "T": "ten", "J": "jack", "Q": "queen", "K": "king"}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}


def demo_args(*extra: str, seed: int, speed: str, state_dir: Path) -> list[str]:
    return ["demo", "--tables", str(len(TABLES)), "--seed", str(seed), "--speed", speed, "--profile", PROFILE,
            "--state-dir", str(state_dir), "--quiet", *extra]


@dataclass(frozen=True)
class Address:
    """A broker's MQTT-over-TCP address (the embedded broker's, as the demo printed it)."""

    host: str
    port: int


@pytest.fixture
def processes(request: pytest.FixtureRequest) -> Iterator[list[Tablectl]]:
    """Every ``tablectl`` a test starts, killed at the end if still running; their output is
    added to the report of a failed test."""
    started: list[Tablectl] = []
    try:
        yield started
    finally:
        for proc in started:
            proc.close()
        for proc in started:
            request.node.add_report_section("call", " ".join(proc.args[1:4]), proc.output())


def start(processes: list[Tablectl], *args: str) -> Tablectl:
    proc = Tablectl(*args)
    processes.append(proc)
    return proc


def dashboard_on(processes: list[Tablectl], ws_url: str) -> str:
    """``tablectl dashboard`` for the broker at ``ws_url``: the page's URL."""
    dash = start(processes, "dashboard", "--port", "0", "--broker-ws", ws_url)
    url = dash.line_starting("Pit dashboard:")
    assert url.startswith("http://127.0.0.1:"), url
    return url


def open_page(page: Page, url: str) -> None:
    page.goto(url)
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")


# resolves once the table view was drawn from another ``state`` than the one with ``seq``
NEXT_REDRAW = "(seq) => document.querySelector('#table').dataset.seq !== seq"


# the ``card`` events in the page's event stream: their text and how many cards are face down
CARD_EVENTS = """() => [...document.querySelectorAll('#events li[data-type="card"]')].map(
  (li) => ({text: li.textContent, backs: li.querySelectorAll('.card.back').length}))"""


# the "last round" panel, with the ``seq`` of the state the table view was last drawn from
LAST_ROUND = """() => ({
  seq: document.querySelector('#table').dataset.seq,
  round: document.querySelector('#last-round .last-round')?.dataset.round ?? null,
  dealer: [...document.querySelectorAll('#last-round .lr-dealer .card')].map((c) => c.dataset.card),
  hands: [...document.querySelectorAll('#last-round tr[data-hand]')].map((tr) => ({
    spot: tr.dataset.spot,
    cards: [...tr.querySelectorAll('.card')].map((c) => c.dataset.card),
    outcome: tr.querySelector('.badge')?.textContent ?? null,
    payout: tr.querySelector('td.num').textContent,
  })),
})"""


@dataclass
class Followed:
    """What :func:`follow` saw of one table."""

    samples: int = 0
    hands: int = 0  # hands whose cards and wager were compared
    rounds: set[int] = field(default_factory=set)
    # round -> the dealer's part of the page, each time it was drawn with the hole card face down
    face_down: dict[int, list[str]] = field(default_factory=dict)
    up_card: dict[int, str] = field(default_factory=dict)
    turned: dict[int, str] = field(default_factory=dict)  # round -> the hole card, once turned
    settled: bool = False  # a round was settled

    def hole_rounds(self) -> set[int]:
        """Rounds seen both with the hole card face down and turned."""
        return set(self.face_down) & set(self.turned)


def follow(page: Page, watch: BrokerWatch, table: str, *, rounds: int, timeout: float = 30.0) -> Followed:
    """Compare the table view with the ``state`` it was drawn from, at every redraw, until
    ``rounds`` rounds were seen with their hole card both face down and turned, and one was
    settled; then the "last round" panel and the event stream."""
    seen = Followed()
    root = page.locator("#table")
    expect(root).to_have_attribute("data-table", table)
    expect(root).not_to_have_attribute("data-seq", "")
    deadline = time.monotonic() + timeout
    last_seq = ""
    first_seq = 0
    while len(seen.hole_rounds()) < rounds or seen.hands < 10 or not seen.settled:
        assert time.monotonic() < deadline, f"{table}: followed for {timeout} s, saw only {seen}"
        page.wait_for_function(NEXT_REDRAW, arg=last_seq, polling="raf")
        got = read_table(page)
        last_seq = got["seq"]
        state = watch.state_with_seq(table, int(last_seq))
        assert got["table"] == table and got["status"] == "online"
        want = expected_table(state)
        assert shown_table(got) == want, f"{table} seq {last_seq}, phase {state['phase']}"
        for n, hands in got["spots"].items():
            for i, hand in enumerate(hands):
                assert hand["wagerText"] == money_text(state["spots"][n]["hands"][i]["wager"]), (n, i, hand)
                seen.hands += 1
        seen.samples += 1
        first_seq = first_seq or int(last_seq)
        settled = watch.last_settled(table, upto_seq=int(last_seq))
        # (a round the page saw settle: it may have opened after an earlier one)
        seen.settled = seen.settled or (settled is not None and settled["seq"] > first_seq)
        seen.rounds.add(state["round"])
        dealer = state["dealer"]["cards"]
        if len(dealer) >= 2 and dealer[1] is None:
            assert got["hole"] == "down"
            seen.face_down.setdefault(state["round"], []).append(got["dealerHtml"])
            seen.up_card[state["round"]] = dealer[0]
        elif len(dealer) >= 2:
            assert got["hole"] == "up" and "hidden" not in got["dealer"]
            seen.turned[state["round"]] = dealer[1]
    # the last round settled, as its last ``settled`` state had it
    last = page.evaluate(LAST_ROUND)
    settled = watch.last_settled(table, upto_seq=int(last["seq"]))
    assert settled is not None, f"{table}: no round settled while followed"
    assert last["round"] == str(settled["round"])
    assert last["dealer"] == settled["dealer"]["cards"]
    assert last["hands"] == [
        {"spot": n, "cards": hand["cards"], "outcome": hand["outcome"] and hand["outcome"].replace("_", " "),
         "payout": money_text(hand["payout"], signed=True)}
        for n, spot in sorted(settled["spots"].items(), key=lambda kv: int(kv[0]))
        for hand in spot["hands"]
    ], f"{table} round {settled['round']}"
    # in the event stream too, a card dealt face down (``card`` null) is drawn face down
    cards = page.evaluate(CARD_EVENTS)
    assert any(e["backs"] for e in cards), cards
    assert not [e for e in cards if "null" in e["text"]], cards
    for round_no in seen.hole_rounds():
        hole, up = seen.turned[round_no], seen.up_card[round_no]
        name = f"{CARD_NAMES.get(hole[0], hole[0])} of {SUIT_NAMES[hole[1]]}"
        for html in seen.face_down[round_no]:
            # the face-down card carries no value; the hole card shows nowhere at the dealer's place
            assert 'data-card="hidden"' in html and 'title="hole card, face down"' in html
            if hole != up:
                assert f'data-card="{hole}"' not in html and name not in html, f"{table} round {round_no}: {hole} shown"
    return seen


def overview_matches(page: Page, watch: BrokerWatch) -> None:
    """Each tile's phase and rounds played are those of the ``state`` it was drawn from."""
    # the demo's tables may still be starting (a loaded machine: parallel workers): wait for their first state
    expect(page.locator(".tile")).to_have_count(len(TABLES), timeout=30_000)
    for table in TABLES:
        tile = page.locator(f'.tile[data-table="{table}"]')
        expect(tile).to_have_attribute("data-status", "online")
        got = tile.evaluate(
            """(t) => ({seq: t.dataset.seq, phase: t.dataset.phase,
                       rounds: t.querySelector('[data-field="rounds"]').textContent})"""
        )
        state = watch.state_with_seq(table, int(got["seq"]))
        assert (got["phase"], got["rounds"]) == (state["phase"], str(state["totals"]["rounds"])), (table, got)


def stopped_page_matches_latest_state(page: Page, watch: BrokerWatch, table: str) -> None:
    """With the demo stopped and ``table`` offline, the page shows exactly its latest ``state``."""
    watch.wait_for(table, "status", lambda s: s == "offline")
    latest: dict[str, Any] = watch.get(table, "state")
    root = page.locator("#table")
    expect(root).to_have_attribute("data-status", "offline")
    expect(root).to_have_attribute("data-stale", "true")
    expect(root).to_have_attribute("data-seq", str(latest["seq"]))
    assert shown_table(read_table(page)) == expected_table(latest)
    expect(page.locator('#table-head [data-field="stale"]')).to_contain_text("offline")


def tiles_offline(page: Page) -> None:
    page.click("a.back")
    for table in TABLES:
        tile = page.locator(f'.tile[data-table="{table}"]')
        expect(tile).to_have_attribute("data-status", "offline")
        expect(tile.locator('[data-field="status"]')).to_have_text("OFFLINE")


# ---- the demo on Mosquitto ---------------------------------------------------------------


def test_demo_on_mosquitto_cards_wagers_and_hole_card_match_the_state_then_ctrl_c_marks_it_offline(
    page: Page, mosquitto: Mosquitto, tmp_path: Path, processes: list[Tablectl]
) -> None:
    watch = BrokerWatch(mosquitto)
    try:
        demo = start(processes, *demo_args("--broker", mosquitto.url, "--no-dashboard", seed=7, speed="fast",
                                           state_dir=tmp_path / "state"))
        url = dashboard_on(processes, mosquitto.ws_url)
        open_page(page, url)
        overview_matches(page, watch)
        page.locator('.tile[data-table="t01"]').click()
        seen = follow(page, watch, "t01", rounds=2)
        assert len(seen.rounds) >= 2
        # with the tables busy (the page redraws many times a second), clicks still get through
        for _ in range(3):
            page.locator("a.back").click()
            expect(page.locator("#overview")).to_be_visible()
            page.locator('.tile[data-table="t02"]').click()
            expect(page.locator("#table")).to_have_attribute("data-table", "t02")

        demo.interrupt()
        assert demo.wait() == 0, demo.output()
        stopped_page_matches_latest_state(page, watch, "t02")
        tiles_offline(page)
    finally:
        watch.close()


def test_an_alarm_of_the_demo_is_acknowledged_from_the_page_and_kill_9_marks_the_tables_offline(
    page: Page, mosquitto: Mosquitto, tmp_path: Path, processes: list[Tablectl]
) -> None:
    state_dir = tmp_path / "state"
    first = start(processes, *demo_args("--broker", mosquitto.url, "--no-dashboard", "--rounds", "1", seed=5,
                                        speed="fast", state_dir=state_dir))
    assert first.wait() == 0, first.output()
    raise_deck_change_warning(state_dir / "t01.journal", PROFILE, minutes_left=10)

    watch = BrokerWatch(mosquitto)
    try:
        demo = start(processes, *demo_args("--broker", mosquitto.url, "--no-dashboard", seed=5, speed="realtime",
                                           state_dir=state_dir))
        alarms = watch.wait_for("t01", "alarms", lambda a: len(a) == 1)
        alarm_id = alarms[0]["id"]
        assert alarms[0]["code"] == "deck_change_due"
        url = dashboard_on(processes, mosquitto.ws_url)
        open_page(page, url)
        tile = page.locator('.tile[data-table="t01"]')
        expect(tile).to_have_attribute("data-alarms", "1")
        expect(page.locator('.tile[data-table="t02"]')).to_have_attribute("data-alarms", "0")
        tile.click()

        alarm = page.locator(f'#alarms li[data-alarm="{alarm_id}"]')
        expect(alarm).to_contain_text("must be changed in 10 min")
        acknowledge_on_page(page, alarm_id)
        watch.wait_for("t01", "alarms", lambda a: a == [])
        watch.wait_for("t01", "state", lambda s: s["alarms"] == 0)

        demo.kill()  # no clean close: the broker publishes the last wills
        expect(page.locator("#table")).to_have_attribute("data-status", "offline")
        tiles_offline(page)
        assert watch.get("t02", "status") == "offline"
    finally:
        watch.close()


# ---- the demo on its embedded broker -----------------------------------------------------


def embedded_login(demo: Tablectl) -> tuple[str, str]:
    """The dashboard user and its password, from the file the demo named (``Dashboard login: ...``)."""
    line = demo.line_starting("Dashboard login:")
    found = re.search(r"user (\S+), password in (\S+)", line)
    assert found, line
    user = found.group(1)
    return user, tomllib.loads(Path(found.group(2)).read_text(encoding="utf-8"))["users"][user]["password"]


def log_in(page: Page, url: str, login: tuple[str, str]) -> None:
    """Open the page, which asks for a login (the broker refuses anonymous clients), and log in."""
    page.goto(url)
    expect(page.locator("#login")).to_be_visible(timeout=10_000)
    page.locator("#login-user").fill(login[0])
    page.locator("#login-password").fill(login[1])
    page.locator("#login-submit").click()
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")


def test_demo_on_its_embedded_broker_serves_a_dashboard_that_follows_it(
    page: Page, tmp_path: Path, processes: list[Tablectl]
) -> None:
    demo = start(processes, *demo_args(seed=9, speed="fast", state_dir=tmp_path / "state"))
    broker_url = demo.line_starting("MQTT broker:")
    assert broker_url.endswith("(embedded)"), broker_url
    host, port = broker_url.removeprefix("mqtt://").split()[0].rsplit(":", 1)
    ws_url = demo.line_starting("MQTT over WebSockets:")
    url = demo.line_starting("Pit dashboard:")
    assert ws_url.startswith("ws://127.0.0.1:") and ws_url.endswith("/mqtt"), ws_url
    assert url.startswith("http://127.0.0.1:"), url
    login = embedded_login(demo)

    watch = BrokerWatch(Address(host, int(port)), login=login)
    try:
        log_in(page, url + "#/t02", login)
        follow(page, watch, "t02", rounds=1)
        demo.interrupt()  # the tables close (offline) before the embedded broker stops
        assert demo.wait() == 0, demo.output()
        expect(page.locator("#table")).to_have_attribute("data-status", "offline")
    finally:
        watch.close()


def test_make_demo_with_a_browser_opened_and_closed_prints_no_error_and_no_traceback(
    browser: Browser, processes: list[Tablectl]
) -> None:
    """What ``make demo`` runs (``tablectl demo``, no option): a person opens the dashboard it prints, logs in,
    closes the tab, opens it again, closes the browser's window; then Ctrl-C. Its terminal shows no ERROR and no
    traceback (amqtt logged a closed tab as a broker error with the websockets traceback)."""
    demo = start(processes, "demo")
    url = demo.line_starting("Pit dashboard:", timeout=60)
    login = embedded_login(demo)
    for _ in range(2):
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        log_in(page, url, login)
        expect(page.locator('.tile[data-table="t01"]')).to_have_attribute("data-status", "online", timeout=30_000)
        expect(page.locator('.tile[data-table="t01"]')).not_to_have_attribute("data-seq", "")
        page.close()  # the tab closed mid-stream
        context.close()
        time.sleep(1)
    demo.line_starting("t01 round    2:", timeout=60)  # the pit played on
    demo.interrupt()
    assert demo.wait(timeout=60) == 0, demo.output()
    out = demo.output()
    assert "ERROR" not in out and "Traceback" not in out and "Task exception" not in out, out
