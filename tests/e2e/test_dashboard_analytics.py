"""The dashboard's analytics (docs/analytics.md), from the retained ``<prefix>/<table>/analytics``.

Against the test publisher (``tests/e2e/publisher.py``: ``t01`` inside its control limits, ``t02`` beyond
3 SD with a failed shoe and a flagged spot, ``t01`` republished when its round 57 settles) and against a real
demo on Mosquitto: the pit bar's totals and its count of tables outside their control limits, each tile's
hold-against-theoretical bar, and the table view's chart (uPlot, with its data), figures, pace, shuffle scores
and flagged spots, every number compared with the message as a separate subscriber received it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from controller.dashboard.server import Dashboard
from controller.game.money import parse_money
from tests.e2e.harness import BrokerWatch, Publisher, money_text, tablectl_command
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(180)

LIMIT_SD, WARN_SD, BAR_SD = 3, 2, 4


def open_page(page: Page, url: str, hash_: str = "") -> None:
    page.goto(url + hash_)
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")


def pct(x: float, digits: int) -> str:
    return f"{x * 100:.{digits}f}%"


def z_text(z: float) -> str:
    return f"{'−' if z < 0 else '+'}{abs(z):.2f} SD"


def zone(z: float) -> str:
    return "out" if abs(z) > LIMIT_SD else "warn" if abs(z) > WARN_SD else "ok"


def chart_columns(series: list[dict[str, Any]]) -> list[list[float | None]]:
    """What the chart must plot: rounds; actual win; theoretical win; theoretical +/-2 SD; +/-3 SD (dollars)."""
    cols: list[list[float | None]] = [[] for _ in range(7)]
    for p in series:
        theo, sd = parse_money(p["theoretical_win"]) / 100, parse_money(p["sd"]) / 100
        for i, v in enumerate((p["round"], parse_money(p["house_net"]) / 100, theo,
                               theo + 2 * sd, theo - 2 * sd, theo + 3 * sd, theo - 3 * sd)):
            cols[i].append(v)
    return cols


def plotted(page: Page) -> list[list[float | None]]:
    data: list[list[float | None]] = page.evaluate("() => window.pitDashboard.chart.plot.data.map((c) => [...c])")
    return data


def assert_columns(got: list[list[float | None]], want: list[list[float | None]]) -> None:
    assert len(got) == len(want) and all(len(g) == len(w) for g, w in zip(got, want, strict=True)), (got, want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-6)


def expect_tile_bar(page: Page, table: str, a: dict[str, Any]) -> None:
    tile = page.locator(f'.tile[data-table="{table}"]')
    bar = tile.locator('[data-field="hold-vs-theo"]')
    expect(bar).to_have_attribute("data-zone", zone(a["win_z"]))
    expect(tile).to_have_attribute("data-zone", zone(a["win_z"]))
    assert float(bar.get_attribute("data-z") or "nan") == pytest.approx(a["win_z"], abs=1e-3)
    hold_text = f"{pct(a['hold'], 1)} / {pct(a['theoretical_hold'], 1)}"
    expect(bar.locator('[data-field="hold-theo"]')).to_have_text(hold_text)
    expect(bar.locator('[data-field="win-z"]')).to_have_text(z_text(a["win_z"]))
    # the mark sits at the table's z on a bar of +/-4 SD, the 2 and 3 SD bands around the middle
    left = (max(-BAR_SD, min(BAR_SD, a["win_z"])) + BAR_SD) / (2 * BAR_SD) * 100
    style = bar.locator('[data-field="hold-mark"]').get_attribute("style") or ""
    assert float(style.split("left:")[1].split("%")[0]) == pytest.approx(left, abs=0.01), style
    spans = "(bs) => bs.map((b) => b.style.left + ' ' + b.style.width)"
    bands = bar.locator(".hvt-band3, .hvt-band2").evaluate_all(spans)
    assert bands == ["12.5% 75%", "25% 50%"]


def expect_pit_bar(page: Page, analytics: list[dict[str, Any]]) -> None:
    handle = sum(parse_money(a["handle"]) for a in analytics)
    net = sum(parse_money(a["house_net"]) for a in analytics)
    theo = sum(parse_money(a["theoretical_win"]) for a in analytics)
    bar = page.locator("#pitbar")
    expect(bar.locator('[data-field="pit-tables"]')).to_have_attribute("data-count", str(len(analytics)))
    expect(bar.locator('[data-field="pit-handle"]')).to_have_text(money_text(f"{handle / 100:.2f}"))
    expect(bar.locator('[data-field="pit-win"]')).to_have_text(money_text(f"{net / 100:.2f}", signed=True))
    expect(bar.locator('[data-field="pit-theo"]')).to_have_text(money_text(f"{theo / 100:.2f}", signed=True))
    hold_text = f"{pct(net / handle, 2)} against {pct(theo / handle, 2)}"
    expect(bar.locator('[data-field="pit-hold"]')).to_have_text(hold_text)
    out = sum(abs(a["win_z"]) > LIMIT_SD for a in analytics)
    beyond = sum(abs(a["win_z"]) > WARN_SD for a in analytics)
    expect(bar.locator('[data-field="pit-out"]')).to_have_text(str(out))
    expect(bar.locator('[data-field="pit-warn"]')).to_have_text(str(beyond))
    expect(bar).to_have_attribute("data-out", str(out))


def expect_figures(page: Page, a: dict[str, Any]) -> None:
    panel = page.locator("#analytics")
    expect(panel).to_have_attribute("data-seq", str(a["seq"]))

    def f(field: str) -> Locator:
        return panel.locator(f'[data-field="{field}"]')

    expect(f("an-rounds")).to_have_text(f"{a['rounds']} · {a['hands']}")
    expect(f("an-handle")).to_have_text(money_text(a["handle"]))
    expect(f("an-initial")).to_have_text(money_text(a["initial_wagers"]))
    theo = money_text(a["theoretical_win"], signed=True)
    expect(f("an-theo")).to_have_text(f"{theo} (edge {pct(a['theoretical_edge'], 2)})")
    expect(f("an-win")).to_have_text(money_text(a["house_net"], signed=True))
    expect(f("an-hold")).to_have_text(f"{pct(a['hold'], 2)} against {pct(a['theoretical_hold'], 2)} theoretical")
    expect(f("an-z")).to_have_text(z_text(a["win_z"]))
    expect(f("an-z")).to_have_class({"out": "bad", "warn": "warn", "ok": ""}[zone(a["win_z"])])
    expect(f("an-sd")).to_have_text(money_text(a["win_sd"]))
    expect(f("an-rph")).to_have_text(f"{a['rounds_per_hour']:.1f}")
    expect(f("an-hph")).to_have_text(f"{a['hands_per_hour']:.1f}")
    expect(f("an-mean")).to_have_text(f"{a['mean_round_s']:.1f} s")
    expect(f("an-idle")).to_contain_text(" open")
    # the chart: uPlot's canvas, plotting every point of the series
    chart = page.locator("#analytics-chart")
    expect(chart).to_have_attribute("data-points", str(len(a["series"])))
    expect(chart).to_have_attribute("data-last-round", str(a["series"][-1]["round"]))
    expect(chart.locator("canvas")).not_to_have_count(0)
    assert_columns(plotted(page), chart_columns(a["series"]))


def test_pit_bar_tiles_and_a_table_outside_its_limits(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    a1 = watch.wait_for("t01", "analytics", lambda a: a["rounds"] == 56)
    a2 = watch.wait_for("t02", "analytics", lambda a: a["rounds"] == 130)
    assert zone(a1["win_z"]) == "ok" and zone(a2["win_z"]) == "out"  # the script's premise
    open_page(page, dashboard.url)
    expect(page.locator(".tile")).to_have_count(2)
    expect_pit_bar(page, [a1, a2])
    expect_tile_bar(page, "t01", a1)
    expect_tile_bar(page, "t02", a2)

    # t02's view: the chart of its shift with the bands, its figures, the failed shoe and the flagged spot
    page.locator('.tile[data-table="t02"]').click()
    expect_figures(page, a2)
    shoes = page.locator("#shuffle-scores li.shoe")
    expect(shoes).to_have_count(2)
    expect(shoes.first).to_have_attribute("data-shoe", "22")  # newest first
    expect(shoes.first).to_have_attribute("data-alarm", "true")
    expect(shoes.first).to_contain_text("4.37")
    expect(shoes.nth(1)).to_have_attribute("data-alarm", "false")
    expect(page.locator('[data-field="shuffle-threshold"]')).to_have_text("alarm threshold 3.00")
    flag = page.locator("#flags li.flag")
    expect(flag).to_have_count(1)
    expect(flag).to_have_attribute("data-spot", "5")
    expect(flag).to_contain_text("Spot 5")
    expect(flag).to_contain_text("bets follow the true count")
    expect(flag).to_contain_text("bet count correlation 0.83")

    # another table: the chart is drawn again for it, without flags
    page.click("a.back")
    page.locator('.tile[data-table="t01"]').click()
    expect(page.locator("#analytics-chart")).to_have_attribute("data-table", "t01")
    expect_figures(page, a1)
    expect(page.locator('[data-field="no-flags"]')).to_be_visible()
    expect(page.locator('#shuffle-scores li.shoe[data-alarm="false"]')).to_have_count(3)


def test_the_figures_and_the_chart_follow_a_settlement(
    page: Page, dashboard: Dashboard, publisher: Publisher, watch: BrokerWatch
) -> None:
    before = watch.wait_for("t01", "analytics", lambda a: a["rounds"] == 56)
    open_page(page, dashboard.url, "#/t01")
    expect_figures(page, before)
    for _ in range(7):  # t01's scripted round 57, to its settlement
        publisher.step()
    after = watch.wait_for("t01", "analytics", lambda a: a["rounds"] == 57)
    assert len(after["series"]) != len(before["series"])
    expect_figures(page, after)
    page.click("a.back")
    expect_pit_bar(page, [after, watch.get("t02", "analytics")])
    expect_tile_bar(page, "t01", after)


def test_a_pit_without_analytics_says_so(page: Page, dashboard: Dashboard, watch: BrokerWatch) -> None:
    watch.publish("tables/t09/status", "online", retain=True)
    open_page(page, dashboard.url)
    expect(page.locator('.tile[data-table="t09"]')).to_have_count(1)
    expect(page.locator('#pitbar [data-field="pit-none"]')).to_be_visible()
    expect(page.locator('.tile[data-table="t09"] [data-field="hold-vs-theo"]')).to_have_attribute("data-zone", "")
    page.goto(dashboard.url + "#/t09")
    expect(page.locator('[data-field="no-analytics"]')).to_be_visible()
    expect(page.locator('[data-field="no-chart"]')).to_be_visible()


def test_a_real_demo_shows_what_its_tables_published(
    page: Page, dashboard: Dashboard, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    demo = subprocess.run([*tablectl_command(), "demo", "--tables", "2", "--rounds", "25", "--speed", "max",
                           "--seed", "4", "--broker", mosquitto.url, "--state-dir", str(state), "--quiet",
                           "--no-dashboard"], capture_output=True, text=True, timeout=150)
    assert demo.returncode == 0, demo.stderr
    watch = BrokerWatch(mosquitto)
    try:
        published = [watch.wait_for(t, "analytics", lambda a: a["rounds"] == 25) for t in ("t01", "t02")]
    finally:
        watch.close()
    for a in published:  # the theory was known by the time the table stopped
        assert a["theoretical_win"] is not None and a["win_z"] is not None, a
    report = json.loads(subprocess.run([*tablectl_command(), "report", str(state / "t01.journal"), "--json"],
                                       capture_output=True, text=True, timeout=120, check=True).stdout)
    assert published[0]["theoretical_win"] == report["theoretical_win"]
    open_page(page, dashboard.url)
    expect(page.locator(".tile")).to_have_count(2)
    expect_pit_bar(page, published)
    for table, a in zip(("t01", "t02"), published, strict=True):
        expect_tile_bar(page, table, a)
    page.goto(dashboard.url + "#/t01")
    expect_figures(page, published[0])
    expect(page.locator('[data-field="shuffle-threshold"]')).to_be_visible()
    expect(page.locator('[data-field="no-flags"]')).to_be_visible()


def test_shuffle_bars_fill_their_share_of_the_threshold(page: Page, dashboard: Dashboard, watch: BrokerWatch) -> None:
    """Each shoe's bar is drawn to scale, its full width the alarm threshold: a negative score (less order than
    a good shuffle leaves) draws nothing, 2.5 of 4 fills 62.5 %, a score at or past the threshold fills the bar
    (red only when the shoe failed)."""
    shoes = [{"shoe": 11, "deck_set": "A", "score": -1.3, "threshold": 4.0, "passed": True, "cards": 250},
             {"shoe": 12, "deck_set": "B", "score": 2.5, "threshold": 4.0, "passed": True, "cards": 250},
             {"shoe": 13, "deck_set": "A", "score": 4.0, "threshold": 4.0, "passed": True, "cards": 250},
             {"shoe": 14, "deck_set": "B", "score": 9.6, "threshold": 4.0, "passed": False, "cards": 250}]
    analytics = {"rounds": 0, "hands": 0, "handle": "0.00", "house_net": "0.00", "initial_wagers": "0.00",
                 "shuffle": {"threshold": 4.0, "shoes": shoes}, "flagged_spots": [], "series": []}
    watch.publish("tables/t08/status", "online", retain=True)
    watch.publish("tables/t08/analytics", json.dumps(analytics), retain=True)
    open_page(page, dashboard.url, "#/t08")
    drawn = page.locator("#shuffle-scores li.shoe")
    expect(drawn).to_have_count(4)
    want = {"11": 0.0, "12": 62.5, "13": 100.0, "14": 100.0}
    for shoe, share in want.items():
        li = page.locator(f'#shuffle-scores li.shoe[data-shoe="{shoe}"]')
        bar, fill = li.locator(".shoe-bar").bounding_box(), li.locator(".shoe-fill").bounding_box()
        assert bar is not None and bar["width"] > 0
        filled = 0.0 if fill is None else 100 * fill["width"] / bar["width"]
        assert abs(filled - share) < 1.5, (shoe, filled, share)
    expect(page.locator('#shuffle-scores li.shoe[data-shoe="11"] .badge')).to_have_text("ok")
    expect(page.locator('#shuffle-scores li.shoe[data-shoe="14"] .badge')).to_have_text("alarm")


def test_the_two_handles_of_a_table_view_say_what_each_counts(
    page: Page, dashboard: Dashboard, watch: BrokerWatch
) -> None:
    """Mid-round the state's handle counts the wagers in play, the analytics' only the settled rounds (it is
    published at settlements): $240 apart on one page with the same house net. Each is labelled for it."""
    state = {"seq": 9, "table_id": "t07", "round": 3, "phase": "players", "halted": None, "spots": {},
             "active": None, "dealer": {"cards": [], "total": None, "blackjack": None},
             "totals": {"rounds": 2, "handle": "480.00", "house_net": "35.00"}}
    analytics = {"rounds": 2, "hands": 4, "handle": "240.00", "house_net": "35.00", "initial_wagers": "240.00",
                 "shuffle": {"threshold": 4.0, "shoes": []}, "flagged_spots": [], "series": []}
    watch.publish("tables/t07/status", "online", retain=True)
    watch.publish("tables/t07/state", json.dumps(state), retain=True)
    watch.publish("tables/t07/analytics", json.dumps(analytics), retain=True)
    open_page(page, dashboard.url, "#/t07")
    expect(page.locator('[data-field="handle"]')).to_have_text(money_text("480.00"))
    expect(page.locator('[data-field="an-handle"]')).to_have_text(money_text("240.00"))
    label = page.locator('.fact:has([data-field="handle"]) dt')
    an_label = page.locator('.fact:has([data-field="an-handle"]) dt')
    expect(label).to_have_text("Handle (round in play included)")
    expect(an_label).to_have_text("Handle (settled rounds)")


def test_a_table_with_too_few_rounds_shows_no_z_and_counts_in_no_limit(
    page: Page, dashboard: Dashboard, watch: BrokerWatch
) -> None:
    """Issue 38: below ``min_rounds`` a table's ``win_z`` is null; the tile, the table view and the floor page say
    "too few rounds" where the z would be, and neither the pit bar nor the floor counts it beyond any limit (its
    win lies far from theoretical: the formula before flagged such a table after one round)."""
    def analytics(rounds: int, z: float | None) -> dict[str, Any]:
        return {"rounds": rounds, "hands": 6 * rounds, "handle": "900.00", "house_net": "-450.00",
                "initial_wagers": "900.00", "theoretical_edge": 0.006159, "theoretical_win": "5.54",
                "hold": -0.5, "theoretical_hold": 0.006156, "win_z": z, "win_sd": "120.00", "min_rounds": 10,
                "shuffle": {"threshold": 4.0, "shoes": []}, "flagged_spots": [], "series": []}
    watch.publish("tables/t05/status", "online", retain=True)
    watch.publish("tables/t05/analytics", json.dumps(analytics(40, -3.8)), retain=True)
    watch.publish("tables/t06/status", "online", retain=True)
    watch.publish("tables/t06/analytics", json.dumps(analytics(6, None)), retain=True)
    open_page(page, dashboard.url)
    few = page.locator('.tile[data-table="t06"] [data-field="hold-vs-theo"]')
    expect(few.locator('[data-field="win-z"]')).to_have_text("too few rounds")
    expect(few).to_have_attribute("data-zone", "")
    expect(few.locator('[data-field="hold-mark"]')).to_have_count(0)
    expect(page.locator('.tile[data-table="t05"] [data-field="win-z"]')).to_have_text(z_text(-3.8))
    bar = page.locator("#pitbar")
    expect(bar.locator('[data-field="pit-out"]')).to_have_text("1")
    expect(bar.locator('[data-field="pit-warn"]')).to_have_text("1")
    page.goto(dashboard.url + "#/t06")
    expect(page.locator('#analytics [data-field="an-z"]')).to_have_text("too few rounds")
    page.goto(dashboard.url + "#floor")
    expect(page.locator('#floor tr[data-table="t06"] td[data-field="win-z"]')).to_have_text("too few rounds")
    expect(page.locator('#floor tr[data-table="t05"] td[data-field="win-z"]')).to_have_text(z_text(-3.8))
    expect(page.locator("#floor-out li")).to_have_count(1)
    expect(page.locator('#floor-out li[data-table="t05"]')).to_have_count(1)
