"""The table view shows each rated spot's player (masked), time, average bet and theo so far, in headless
Chromium against a real rated demo (``tablectl demo --carded 5``) on Mosquitto (DESIGN "Rated play").

At each redraw the rated spots the page shows are compared with ``state.spots[n].rating`` of the ``state`` it was
drawn from (a separate subscriber keeps every ``state``); the page never holds a full card number.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from controller.sim.carded import carded_players
from tests.e2e.harness import BrokerWatch, Tablectl, money_text
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(120)

SEED = 12
# the rated spots as the table view draws them, with the seq of the state it was drawn from
RATED = """() => ({
  seq: document.querySelector('#table').dataset.seq,
  spots: Object.fromEntries([...document.querySelectorAll('#felt .spot')].filter(
    (el) => el.querySelector('[data-field="rating"]')).map((el) => {
      const r = el.querySelector('[data-field="rating"]');
      const text = (f) => r.querySelector(`[data-field="${f}"]`).textContent;
      return [el.dataset.spot, {player: r.dataset.player, shown: text('rated-player'), time: text('rated-time'),
                                average: text('average-bet'), theo: text('theo'), skill: text('skill-theo')}];
    })),
  html: document.documentElement.outerHTML,
})"""
NEXT_REDRAW = "(seq) => document.querySelector('#table').dataset.seq !== seq"


@pytest.fixture
def processes() -> Iterator[list[Tablectl]]:
    started: list[Tablectl] = []
    try:
        yield started
    finally:
        for proc in started:
            proc.close()


def _expected(rating: dict[str, Any]) -> dict[str, Any]:
    minutes = int(float(rating["minutes"]))
    return {"player": rating["player"], "shown": f"\u2605 {rating['player']}",
            "time": f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min",
            "average": f"avg {money_text(rating['average_bet'])}",
            "theo": f"theo {money_text(rating['theoretical_loss'])}",
            "skill": f"skill {money_text(rating['skill_theoretical_loss'])}"}


def test_a_pit_sees_the_rated_players_live_masked_with_time_average_bet_and_theo(
    page: Page, mosquitto: Mosquitto, tmp_path: Path, processes: list[Tablectl]
) -> None:
    numbers = {p.number for p in carded_players(SEED, "t01", 7)}
    watch = BrokerWatch(mosquitto)
    try:
        demo = Tablectl("demo", "--tables", "1", "--seed", str(SEED), "--speed", "fast", "--carded", "5",
                        "--broker", mosquitto.url, "--no-dashboard", "--state-dir", str(tmp_path / "state"), "--quiet")
        processes.append(demo)
        dash = Tablectl("dashboard", "--port", "0", "--broker-ws", mosquitto.ws_url)
        processes.append(dash)
        url = dash.line_starting("Pit dashboard:")
        page.goto(f"{url}#/t01")
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        expect(page.locator("#table")).to_have_attribute("data-table", "t01")
        deadline = time.monotonic() + 60
        seen: set[str] = set()
        last, redraws, rounds = "", 0, set()
        while redraws < 40 or len(rounds) < 3:
            assert time.monotonic() < deadline, f"followed the table for 60 s: {redraws} redraws, rounds {rounds}"
            page.wait_for_function(NEXT_REDRAW, arg=last, polling="raf")
            got = page.evaluate(RATED)
            last = got["seq"]
            if not last:
                continue
            state = watch.state_with_seq("t01", int(last))
            want = {n: _expected(spot["rating"]) for n, spot in state["spots"].items() if "rating" in spot}
            assert got["spots"] == want, f"seq {last}"
            assert not [n for n in numbers if n in got["html"]], "a full card number on the page"
            seen |= {s["player"] for s in got["spots"].values()}
            rounds.add(state["round"])
            redraws += 1
        assert len(seen) == 5 and all(p.startswith("*") for p in seen), seen
        demo.interrupt()
        assert demo.wait() == 0, demo.output()
    finally:
        watch.close()
