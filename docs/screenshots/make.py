"""Take the dashboard screenshots in this folder: ``.venv/bin/python docs/screenshots/make.py``.

Starts a private Mosquitto (TCP and WebSockets on free loopback ports) and ``tablectl dashboard``
on it, and photographs the page in Debian's headless Chromium:

- ``overview.png`` and ``table.png``: the real demo (``tablectl demo --tables 4 --seed 3``),
  first 12 rounds at ``--speed fast``, then resumed at ``--speed realtime``; before the resume,
  t03's clock is moved to 25 minutes before its deck change, so it shows the "deck change due"
  alarm. ``table.png`` is t01 mid-round, a player to act, the hole card face down.
- ``table-rated.png``: a rated table (``tablectl demo --tables 1 --seed 12 --carded 5``, 10 rounds at
  ``--speed fast``, then resumed at ``--speed realtime``), t01 mid-round: each carded player's rating under
  the spot (masked number, time, average bet, theo and skill theo; docs/ratings.md).
- ``table-t02.png``: the browser tests' stand-in table service (``tests/e2e/publisher.py``),
  whose t02 has a split, insurance and a procedure alarm to acknowledge; ``analytics.png``: that table
  view's analytics panel (t02 beyond 3 SD of its theoretical win, a failed shoe, a flagged spot).
- ``floor.png``: the floor page (``#floor``) with 200 tables in ten pits, each table's ``analytics`` derived
  from a real demo table's (``tablectl demo --tables 1 --rounds 15 --seed 7``) by the formulas of
  docs/analytics.md (``tests/e2e/floor_page.py``), nine of them outside their control limits; the recorder's
  retained position of each table and one gap alarm (t117, seqs 4120 to 4123), as controller/recorder/board.py
  makes them, in the band at the top.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

from controller.recorder.board import Board  # noqa: E402
from tests.e2e.floor_page import Retained, two_hundred  # noqa: E402
from tests.e2e.harness import (  # noqa: E402
    CHROMIUM_ARGS,
    BrokerWatch,
    Publisher,
    Tablectl,
    find_chromium,
    raise_deck_change_warning,
)
from tests.mqtt_broker import Mosquitto  # noqa: E402

OUT = Path(__file__).resolve().parent
DEMO = ["demo", "--tables", "4", "--seed", "3", "--profile", "house-h17", "--no-dashboard", "--quiet"]
# the tables are not all in the same phase
SEVERAL_PHASES = "() => new Set([...document.querySelectorAll('.tile')].map((t) => t.dataset.phase)).size >= 3"
# t01 in the players phase with the hole card face down, a hand to act and three or more hands
MID_ROUND = """() => {
  const t = document.querySelector('#table');
  return t.dataset.table === 't01' && document.querySelector('#dealer')?.dataset.hole === 'down'
    && document.querySelector('#table-head [data-field="phase"]')?.textContent === 'players'
    && document.querySelectorAll('#felt .hand.active').length === 1
    && document.querySelectorAll('#felt .hand').length >= 3;
}"""


def demo_shots(page: Page, broker: Mosquitto, url: str, state_dir: Path) -> None:
    first = Tablectl(*DEMO, "--broker", broker.url, "--speed", "fast", "--rounds", "12", "--state-dir", str(state_dir))
    try:
        if first.wait(120) != 0:
            raise RuntimeError(f"tablectl demo failed:\n{first.output()}")
    finally:
        first.close()
    raise_deck_change_warning(state_dir / "t03.journal", "house-h17", minutes_left=25)
    demo = Tablectl(*DEMO, "--broker", broker.url, "--speed", "realtime", "--state-dir", str(state_dir))
    try:
        page.goto(url)
        page.select_option("#sort", "attention")
        expect(page.locator(".tile")).to_have_count(4)
        # a loaded machine starts the resumed demo slowly: wait for it, not the default 5 s
        expect(page.locator('.tile[data-table="t03"]')).to_have_attribute("data-alarms", "1", timeout=90_000)
        for t in ("t01", "t02", "t03", "t04"):
            expect(page.locator(f'.tile[data-table="{t}"]')).to_have_attribute("data-status", "online",
                                                                                 timeout=90_000)
        page.wait_for_function(SEVERAL_PHASES, timeout=20_000, polling=100)  # before the demo's clock ticks
        page.screenshot(path=str(OUT / "overview.png"))
        page.goto(url + "#/t01")
        page.wait_for_function(MID_ROUND, timeout=90_000, polling=100)
        page.screenshot(path=str(OUT / "table.png"), full_page=True)
        demo.interrupt()
        demo.wait()
    finally:
        demo.close()


RATED = ["demo", "--tables", "1", "--seed", "12", "--carded", "5", "--profile", "house-h17", "--no-dashboard",
         "--quiet"]
# t01 mid-round (a hand to act) with the five carded players' ratings under their spots
RATED_MID_ROUND = MID_ROUND.replace("return t.dataset.table", "return document.querySelectorAll("
                                    "'#felt [data-field=\"rating\"]').length === 5 && t.dataset.table")


def rated_shots(page: Page, broker: Mosquitto, url: str, state_dir: Path) -> None:
    first = Tablectl(*RATED, "--broker", broker.url, "--speed", "fast", "--rounds", "10", "--state-dir",
                     str(state_dir))
    try:
        if first.wait(120) != 0:
            raise RuntimeError(f"tablectl demo failed:\n{first.output()}")
    finally:
        first.close()
    demo = Tablectl(*RATED, "--broker", broker.url, "--speed", "realtime", "--state-dir", str(state_dir))
    try:
        page.goto(url + "#/t01")
        page.wait_for_function(RATED_MID_ROUND, timeout=90_000, polling=100)
        page.screenshot(path=str(OUT / "table-rated.png"), full_page=True)
        demo.interrupt()
        demo.wait()
    finally:
        demo.close()


def publisher_shots(page: Page, broker: Mosquitto, url: str) -> None:
    pub = Publisher(broker, tables="t01,t02")
    try:
        page.goto(url + "#/t02")
        expect(page.locator("#alarms button.ack")).to_have_count(1)
        expect(page.locator("#analytics-chart canvas")).not_to_have_count(0)
        page.screenshot(path=str(OUT / "table-t02.png"), full_page=True)
        page.locator("#analytics").screenshot(path=str(OUT / "analytics.png"))
    finally:
        pub.close()


def floor_shots(page: Page, broker: Mosquitto, url: str, state_dir: Path) -> None:
    template = Tablectl("demo", "--tables", "1", "--rounds", "15", "--speed", "max", "--seed", "7", "--prefix",
                        "template", "--broker", broker.url, "--state-dir", str(state_dir), "--no-dashboard", "--quiet")
    try:
        if template.wait(120) != 0:
            raise RuntimeError(f"tablectl demo failed:\n{template.output()}")
    finally:
        template.close()
    watch = BrokerWatch(broker, prefix="template")
    try:
        a0 = watch.wait_for("t01", "analytics", lambda a: a["rounds"] == 15 and a["win_z"] is not None)
        s0 = watch.wait_for("t01", "state", lambda s: True)
    finally:
        watch.close()
    pub = Retained(broker, "tables")
    try:
        now = time.time()
        board = Board()
        board.set_gaps("t117", [(4120, 4123)], now)
        for t, (s, a) in two_hundred(a0, s0, round_=0).items():
            pub.table(t, state=s, analytics=a)
            position = {"table_id": t, "seq": s["seq"], "journal_id": s.get("journal_id"), "head_seq": s["seq"],
                        "head": s.get("head"), "ts": now}
            pub.client.publish(f"tables/recorder/{t}", json.dumps(position), qos=1, retain=True).wait_for_publish(10)
        alarms = json.dumps([x.as_dict() for x in board.alarms()])
        pub.client.publish("tables/recorder/alarms", alarms, qos=1, retain=True).wait_for_publish(10)
        page.goto(url + "#floor")
        expect(page.locator("#floor tbody tr")).to_have_count(200)
        expect(page.locator("#floor-out li")).to_have_count(9)
        expect(page.locator("#floor-recorder li")).to_have_count(1)
        expect(page.locator('#floor-totals [data-field="recorder-held"]')).to_contain_text("200 tables recorded")
        page.screenshot(path=str(OUT / "floor.png"))
    finally:
        pub.close()


@contextlib.contextmanager
def dashboard_page(chromium: str, broker: Mosquitto) -> Iterator[tuple[Page, str]]:
    """``tablectl dashboard`` on ``broker``, and a page in Chromium: (page, the dashboard's URL)."""
    dash = Tablectl("dashboard", "--port", "0", "--broker-ws", broker.ws_url)
    try:
        url = dash.line_starting("Pit dashboard:")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 860})
                page.set_default_timeout(15_000)
                yield page, url
            finally:
                browser.close()
    finally:
        dash.interrupt()
        dash.wait()
        dash.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=("demo", "rated", "publisher", "floor"), help="take only these screenshots")
    only = ap.parse_args().only
    chromium = find_chromium()
    if chromium is None:
        print("make.py: Debian's chromium is not installed (make system)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="screenshots-") as tmp:
        if only in (None, "demo"):
            with Mosquitto(Path(tmp) / "mosquitto-demo") as broker, dashboard_page(chromium, broker) as (page, url):
                demo_shots(page, broker, url, Path(tmp) / "state")
        if only in (None, "rated"):
            with Mosquitto(Path(tmp) / "mosquitto-rated") as broker, dashboard_page(chromium, broker) as (page, url):
                rated_shots(page, broker, url, Path(tmp) / "rated")
        if only in (None, "publisher"):
            with Mosquitto(Path(tmp) / "mosquitto-publisher") as broker, \
                    dashboard_page(chromium, broker) as (page, url):
                publisher_shots(page, broker, url)
        if only in (None, "floor"):
            with Mosquitto(Path(tmp) / "mosquitto-floor") as broker, dashboard_page(chromium, broker) as (page, url):
                floor_shots(page, broker, url, Path(tmp) / "floor-state")
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.png')))} in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
