"""The dealer on duty on the pit's screens, in headless Chromium on the session's Mosquitto (issue #37; DESIGN.md
"The dealer on duty").

Tables' retained ``status``, ``state`` and ``analytics`` are published as a table publishes them
(``tests/e2e/floor_page.py`` Retained), a ``state`` made from the test publisher's (``tests/e2e/publisher.py``)
with a ``dealer_on_duty``, an ``analytics`` from its figures with ``dealers``. What the page must show is
computed here from the messages: each tile and the table view name the dealer on duty and the whole minutes since
the relief (counted on as time passes without a message: Playwright's clock), or "no dealer" and, at a table that
requires one, that betting waits; the table view lists the table's dealers' figures in the table's zones; the
floor page combines each dealer across tables (money summed, win_z over the summed variances, pace as hands over
hours) and lists those outside their control limits and the slowest paces. A dealer id from outside is drawn as
text, never as HTML. Then the real thing: the dealers the table's own analytics code publishes, and a real demo
whose simulated crew rotates its dealers. The pure model (dealer_model.js) is checked in the page too, on cases the
screens do not reach.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from controller.analytics.hold import Spread
from controller.analytics.live import LiveAnalytics, Theory
from controller.contract.alarms import irregularity
from controller.dashboard.server import Dashboard
from controller.game.money import format_money, parse_money
from controller.reports.recall import dealer_of
from tests.analytics.dealer_records import Records
from tests.e2e.floor_page import LIMIT_SD, WARN_SD, Retained, dashboard_for, open_floor, two_hundred
from tests.e2e.harness import BrokerWatch, Tablectl, money_text
from tests.e2e.publisher import initial_analytics, initial_history, initial_state
from tests.mqtt_broker import Mosquitto

pytestmark = [pytest.mark.timeout(180), pytest.mark.xdist_group("dealer-screens")]

Json = dict[str, Any]
MIN_ROUNDS = 10
_prefixes = itertools.count(1)
#: an id that would be markup if the page ever parsed one as HTML
HOSTILE = "<img src=x onerror=window.__pwned=1>"


@pytest.fixture
def prefix() -> str:
    return f"dealers{next(_prefixes)}-{time.monotonic_ns() % 100000}"


@pytest.fixture
def retained(mosquitto_session: Mosquitto, prefix: str) -> Iterator[Retained]:
    pub = Retained(mosquitto_session, prefix)
    try:
        yield pub
    finally:
        pub.close()


@pytest.fixture
def dash(mosquitto_session: Mosquitto, prefix: str) -> Iterator[Dashboard]:
    with dashboard_for(mosquitto_session.ws_url, prefix) as d:
        yield d


def state_with(table: str, duty: Json | None, **extra: Any) -> Json:
    s = initial_state("t01")
    s["table_id"] = table
    s["dealer_on_duty"] = duty
    s.update(extra)
    return s


def dealer_figures(*, rounds: int, hands: int, hours: float, errors: dict[str, int], initial: int, actual: int,
                   theo: int, sd: int) -> Json:
    """One dealer's figures at a table, as ``analytics.dealers`` carries them (money in cents here; ``win_sd`` and
    ``on_duty_s``: what the floor adds a dealer across tables with, docs/analytics.md)."""
    return {"rounds": rounds, "hands": hands, "hands_per_hour": round(hands / hours, 6), "procedure_errors": errors,
            "initial_wagers": format_money(initial), "actual_win": format_money(actual),
            "theoretical_win": format_money(theo), "win_sd": format_money(sd),
            "win_z": None if rounds < MIN_ROUNDS else round((actual - theo) / sd, 6),
            "on_duty_s": round(hours * 3600, 6), "min_rounds": MIN_ROUNDS}


def analytics_with(table: str, dealers: Json) -> Json:
    a = copy.deepcopy(initial_analytics("t01"))
    a["table_id"] = table
    a["min_rounds"] = MIN_ROUNDS
    a["dealers"] = dealers
    return a


def zone(z: float | None) -> str:
    return "" if z is None else "out" if abs(z) > LIMIT_SD else "warn" if abs(z) > WARN_SD else "ok"


def z_text(z: float | None, rounds: int) -> str:
    if z is None:
        return "too few rounds" if 0 < rounds < MIN_ROUNDS else "–"
    return f"{'−' if z < 0 else '+'}{abs(z):.2f} SD"


def minutes_text(m: int) -> str:
    return f"{m} min" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def expect_duty(box: Locator, dealer: str, minutes: int) -> None:
    duty = box.locator('[data-field="dealer-on-duty"]')
    expect(duty).to_have_attribute("data-dealer", dealer)
    expect(duty.locator('[data-field="dealer-id"]')).to_have_text(dealer)
    expect(duty.locator('[data-field="dealer-minutes"]')).to_have_attribute("data-minutes", str(minutes))
    expect(duty.locator('[data-field="dealer-minutes"]')).to_have_text(f" · {minutes_text(minutes)}")


def expect_no_dealer(box: Locator, *, waits: bool) -> None:
    duty = box.locator('[data-field="dealer-on-duty"]')
    expect(duty).to_have_attribute("data-dealer", "")
    expect(duty.locator('[data-field="no-dealer"]')).to_have_text("no dealer")
    expect(duty.locator('[data-field="dealer-wait"]')).to_have_count(1 if waits else 0)
    if waits:
        expect(duty.locator('[data-field="dealer-wait"]')).to_have_text(" · betting waits for a dealer")


# ---- the dealer on duty: tiles and the table view ----------------------------------------------------------


def test_tiles_and_the_table_view_show_the_dealer_on_duty_and_count_the_minutes_on(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    page.clock.install()
    now = time.time()
    # t01: since in epoch seconds (as the state's ts), 12 min 10 s ago; t02: an ISO time 61 min ago; t03: nobody,
    # betting waits (require_dealer); t04: nobody, a table that needs no dealer
    retained.table("t01", state=state_with("t01", {"id": "d.ames", "since": round(now - 730, 3)}))
    iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 61 * 60))
    retained.table("t02", state=state_with("t02", {"id": "d.birch", "since": iso}))
    retained.table("t03", state=state_with("t03", None, require_dealer=True))
    retained.table("t04", state=state_with("t04", None))
    page.goto(dash.url)
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")

    def tile(t: str) -> Locator:
        return page.locator(f'.tile[data-table="{t}"]')

    expect_duty(tile("t01"), "d.ames", 12)
    expect_duty(tile("t02"), "d.birch", 61)
    expect_no_dealer(tile("t03"), waits=True)
    expect_no_dealer(tile("t04"), waits=False)
    seq = tile("t01").get_attribute("data-seq")

    # a minute passes with no message: the minutes count on
    page.clock.fast_forward("01:00")
    expect_duty(tile("t01"), "d.ames", 13)
    expect_duty(tile("t02"), "d.birch", 62)
    assert tile("t01").get_attribute("data-seq") == seq  # no new state drew it

    # the filter finds a table by its dealer
    page.locator("#filter").fill("d.birch")
    expect(page.locator(".tile")).to_have_count(1)
    expect(tile("t02")).to_be_visible()
    page.locator("#filter").fill("")

    # the table view: the same dealer, the same minutes; a relief (a new state) names the new dealer from 0 min
    tile("t01").click()
    head = page.locator("#table-head")
    expect_duty(head, "d.ames", 13)
    expect(head.locator('[data-field="dealer-on-duty"]')).to_contain_text("Dealer on duty d.ames")
    retained.table("t01", state=state_with("t01", {"id": "d.cole", "since": round(time.time(), 3)}, seq=1041))
    expect_duty(head, "d.cole", 0)
    page.clock.fast_forward("02:00")
    expect_duty(head, "d.cole", 2)
    # a sign-out at a table that requires a dealer: no dealer, betting waits
    retained.table("t01", state=state_with("t01", None, seq=1042, awaiting="dealer"))
    expect_no_dealer(head, waits=True)
    # a table of a program from before dealers says nothing of them: nor does the page
    old = initial_state("t01")
    retained.table("t05", state={**old, "table_id": "t05"})
    page.goto(dash.url.split("#")[0] + "#/t05")
    expect(page.locator("#table")).to_have_attribute("data-table", "t05")
    expect(head.locator('[data-field="phase"]')).to_be_visible()
    expect(head.locator('[data-field="dealer-on-duty"]')).to_have_count(0)
    page.locator(".back").click()
    expect(tile("t05").locator('[data-field="phase"]')).to_be_visible()
    expect(tile("t05").locator('[data-field="dealer-on-duty"]')).to_have_count(0)
    # the dealer on duty is an id, never a card: the felt still shows the dealer's hand alone
    expect(head.locator('[data-field="dealer-on-duty"] .card')).to_have_count(0)


def test_a_dealer_id_from_outside_is_drawn_as_text_everywhere(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    figures = dealer_figures(rounds=30, hands=80, hours=1.0, errors={"card_out_of_turn": 1}, initial=90000,
                             actual=3000, theo=600, sd=11000)
    slow = dealer_figures(rounds=20, hands=40, hours=1.0, errors={}, initial=50000, actual=-20000, theo=300, sd=6000)
    retained.table("t01", state=state_with("t01", {"id": HOSTILE, "since": round(time.time() - 90, 3)}),
                   analytics=analytics_with("t01", {HOSTILE: figures, "d.ok": slow}))
    page.goto(dash.url)
    expect_duty(page.locator('.tile[data-table="t01"]'), HOSTILE, 1)
    page.locator('.tile[data-table="t01"]').click()
    expect_duty(page.locator("#table-head"), HOSTILE, 1)
    expect(page.locator(f'#analytics-dealers tr[data-dealer="{HOSTILE}"] [data-field="dealer"]')).to_have_text(HOSTILE)
    page.goto(dash.url.split("#")[0] + "#floor")
    slowest = page.locator(f'#floor-dealers [data-field="dealers-slowest"] li[data-dealer="{HOSTILE}"]')
    expect(slowest.locator('[data-field="dealer"]')).to_have_text(HOSTILE)
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("main img").count() == 0


def test_the_history_names_who_dealt_each_round_and_who_took_over_during_one(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    rounds = initial_history("t01")  # rounds 54, 55, 56
    rounds[0]["dealer_id"] = None  # no dealer on duty
    rounds[1].update(dealer_id="d.ames", relieved_by="d.birch")  # a relief during round 55
    rounds[2]["events"] = [{"seq": 1030, "type": "no_more_bets", "round": 56, "dealer_id": "d.birch"},
                           {"seq": 1040, "type": "round_settled", "round": 56, "dealer_id": "d.birch"}]
    assert "dealer_id" not in rounds[2]  # named by its events only: the page reads its no_more_bets' dealer_id
    retained.table("t01", state=state_with("t01", {"id": "d.birch", "since": round(time.time() - 150, 3)}))
    retained.client.publish(f"{retained.prefix}/t01/history", json.dumps(rounds), qos=1, retain=True
                            ).wait_for_publish(timeout=10)
    page.goto(dash.url + "#/t01")
    rows = page.locator("#history tr[data-round]")
    expect(rows).to_have_count(3)
    assert rows.evaluate_all("(rs) => rs.map((r) => [r.dataset.round, r.querySelector('[data-field=\"dealt-by\"]')"
                             ".dataset.dealer, r.querySelector('[data-field=\"dealt-by\"]').textContent])") == [
        ["56", "d.birch", "d.birch"], ["55", "d.ames", "d.ames → d.birch"], ["54", "", "no dealer"]]
    expect(page.locator("#history th")).to_have_text(["Round", "Time", "Dealt by", "Dealer", "Spots (net)"])
    # a table that names no dealers (an older one): no such column
    retained.table("t02", state=state_with("t02", None))
    retained.client.publish(f"{retained.prefix}/t02/history", json.dumps(initial_history("t01")), qos=1, retain=True
                            ).wait_for_publish(timeout=10)
    page.goto(dash.url.split("#")[0] + "#/t02")
    expect(page.locator("#history tr[data-round]")).to_have_count(3)
    expect(page.locator("#history th")).to_have_text(["Round", "Time", "Dealer", "Spots (net)"])
    expect(page.locator('#history [data-field="dealt-by"]')).to_have_count(0)


# ---- each dealer's figures in the table view --------------------------------------------------------------


def test_the_table_view_lists_the_tables_dealers_with_the_tables_zones(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    dealers = {
        "d.ames": dealer_figures(rounds=40, hands=96, hours=1.2, errors={"card_out_of_turn": 1, "peek_mismatch": 3},
                                 initial=120000, actual=1200, theo=744, sd=14000),
        "d.birch": dealer_figures(rounds=25, hands=50, hours=0.9, errors={}, initial=60000, actual=30000, theo=372,
                                  sd=9000),
        "d.cole": dealer_figures(rounds=22, hands=55, hours=0.6, errors={"burn_missed": 2}, initial=70000,
                                 actual=-18000, theo=434, sd=8000),
        "d.dunn": dealer_figures(rounds=4, hands=9, hours=0.1, errors={}, initial=9000, actual=500, theo=56, sd=3000),
    }
    a = analytics_with("t01", dealers)
    assert [zone(d["win_z"]) for d in dealers.values()] == ["ok", "out", "warn", ""]  # the premise
    retained.table("t01", state=state_with("t01", {"id": "d.dunn", "since": round(time.time(), 3)}), analytics=a)
    page.goto(dash.url + "#/t01")
    rows = page.locator("#analytics-dealers tbody tr")
    expect(rows).to_have_count(4)
    assert rows.evaluate_all("(rs) => rs.map((r) => r.dataset.dealer)") == sorted(dealers)
    for name, d in dealers.items():
        row = page.locator(f'#analytics-dealers tr[data-dealer="{name}"]')

        def f(field: str, row: Locator = row) -> Locator:
            return row.locator(f'[data-field="{field}"]')

        expect(row).to_have_attribute("data-zone", zone(d["win_z"]))
        expect(f("rounds")).to_have_text(str(d["rounds"]))
        expect(f("hph")).to_have_text(f"{d['hands_per_hour']:.1f}")
        errors = sorted(d["procedure_errors"].items(), key=lambda kv: (-kv[1], kv[0]))
        expect(f("errors")).to_have_text(", ".join(f"{k.replace('_', ' ')} {n}" for k, n in errors) or "none")
        expect(f("errors")).to_have_attribute("data-count", str(sum(d["procedure_errors"].values())))
        expect(f("win")).to_have_text(money_text(d["actual_win"], signed=True))
        expect(f("theo")).to_have_text(money_text(d["theoretical_win"], signed=True))
        expect(f("win-z")).to_have_text(z_text(d["win_z"], d["rounds"]))
        cls = f("win-z").get_attribute("class") or ""
        assert ("bad" in cls.split(), "warn" in cls.split()) == (zone(d["win_z"]) == "out", zone(d["win_z"]) == "warn")

    # the next settlement: d.dunn's fifth round, the others' rows as they were
    dealers["d.dunn"] = dealer_figures(rounds=5, hands=11, hours=0.12, errors={"peek_mismatch": 1}, initial=11000,
                                       actual=400, theo=68, sd=3300)
    retained.table("t01", analytics={**analytics_with("t01", dealers), "seq": a["seq"] + 7})
    dunn = page.locator('#analytics-dealers tr[data-dealer="d.dunn"]')
    expect(dunn.locator('[data-field="rounds"]')).to_have_text("5")
    expect(dunn.locator('[data-field="errors"]')).to_have_text("peek mismatch 1")

    # a table whose analytics names no dealer yet
    retained.table("t02", state=state_with("t02", None), analytics=analytics_with("t02", {}))
    page.goto(dash.url.split("#")[0] + "#/t02")
    expect(page.locator('#analytics-dealers [data-field="no-dealers"]')).to_be_visible()


# ---- the floor: dealers across tables -----------------------------------------------------------------------


def combined(parts: list[Json]) -> tuple[float | None, float]:
    """A dealer's win_z across tables (over the summed variances; none while a table's theoretical figures are not
    worked out yet: ``theoretical_win`` and ``win_sd`` null, as a loaded machine's demo can end before them) and
    pace (hands over hours on duty)."""
    rounds = sum(p["rounds"] for p in parts)
    hours = sum(p["on_duty_s"] / 3600 for p in parts)
    pace = sum(p["hands"] for p in parts) / hours
    if len(parts) == 1:
        return parts[0]["win_z"], pace
    if rounds < MIN_ROUNDS or any(p["theoretical_win"] is None or p["win_sd"] is None for p in parts):
        return None, pace
    actual = sum(parse_money(p["actual_win"]) for p in parts)
    theo = sum(parse_money(p["theoretical_win"]) for p in parts)
    var = sum(parse_money(p["win_sd"]) ** 2 for p in parts)
    return (actual - theo) / math.sqrt(var), pace


def test_the_floor_lists_dealers_outside_their_limits_across_tables_and_the_slowest_paces(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    page.add_init_script("window.__floorRenders = []; new PerformanceObserver((l) => { for (const e of l.getEntries())"
                         " if (e.name === 'floor-render') window.__floorRenders.push(e.duration); })"
                         ".observe({ type: 'measure', buffered: false });")
    # d.ames is within the limits at each table (2.5 SD) and outside them across the floor (3.54 SD); d.birch is
    # outside them at one table; the slowest pace is d.slow's over both of its tables (40 hands in 1 h at t01 and
    # 90 in 1.5 h at t02: 52/h; not the mean of 40/h and 60/h); d.few, slower still, has too few rounds to rank
    tables: dict[str, Json] = {
        "t01": {"d.ames": dealer_figures(rounds=40, hands=100, hours=1.0, errors={"peek_mismatch": 2}, initial=100000,
                                         actual=600 + 25000, theo=600, sd=10000),
                "d.slow": dealer_figures(rounds=20, hands=40, hours=1.0, errors={}, initial=40000, actual=300,
                                         theo=240, sd=6000),
                "d.fast": dealer_figures(rounds=30, hands=150, hours=1.0, errors={}, initial=60000, actual=500,
                                         theo=360, sd=8000)},
        "t02": {"d.ames": dealer_figures(rounds=40, hands=100, hours=1.0, errors={"card_out_of_turn": 1},
                                         initial=100000, actual=600 + 25000, theo=600, sd=10000),
                "d.slow": dealer_figures(rounds=35, hands=90, hours=1.5, errors={"burn_missed": 4}, initial=70000,
                                         actual=100, theo=420, sd=9000),
                "d.birch": dealer_figures(rounds=30, hands=120, hours=1.1, errors={}, initial=80000,
                                          actual=-40000, theo=480, sd=10000)},
        "t03": {"d.mid": dealer_figures(rounds=30, hands=110, hours=1.2, errors={}, initial=50000, actual=200,
                                        theo=300, sd=7000),
                "d.quick": dealer_figures(rounds=30, hands=200, hours=1.0, errors={}, initial=50000, actual=200,
                                          theo=300, sd=7000),
                "d.few": dealer_figures(rounds=3, hands=6, hours=1.0, errors={}, initial=900, actual=0, theo=5,
                                        sd=1000)},
    }
    for t, dealers in tables.items():
        retained.table(t, state=state_with(t, None), analytics=analytics_with(t, dealers))
    by_dealer: dict[str, list[Json]] = {}
    for t, dealers in tables.items():
        for name, d in dealers.items():
            by_dealer.setdefault(name, []).append({**d, "table": t})
    figures = {name: combined(parts) for name, parts in by_dealer.items()}
    out = sorted((n for n, (z, _) in figures.items() if z is not None and abs(z) > LIMIT_SD),
                 key=lambda n: -abs(figures[n][0] or 0))
    ranked = [n for n in figures if sum(p["rounds"] for p in by_dealer[n]) >= MIN_ROUNDS]
    slowest = sorted(ranked, key=lambda n: figures[n][1])[:5]
    assert "d.few" not in slowest and figures["d.few"][1] < figures["d.slow"][1]
    assert out == ["d.birch", "d.ames"] and slowest[0] == "d.slow"  # the premise: 4.05 and 3.54 SD
    assert all(abs(d["win_z"]) <= LIMIT_SD for t in ("t01", "t02") for d in [tables[t]["d.ames"]])

    open_floor(page, dash.url)
    box = page.locator("#floor-dealers")
    expect(page.locator("#floor")).to_have_attribute("data-dealers-out", str(len(out)))
    items = box.locator('[data-field="dealers-out"] li')
    expect(items).to_have_count(len(out))
    assert items.evaluate_all("(ls) => ls.map((l) => l.dataset.dealer)") == out
    for name in out:
        li = box.locator(f'[data-field="dealers-out"] li[data-dealer="{name}"]')
        expect(li.locator('[data-field="win-z"]')).to_have_text(z_text(figures[name][0], 40))
        parts = by_dealer[name]
        actual = format_money(sum(parse_money(p["actual_win"]) for p in parts))
        theo = format_money(sum(parse_money(p["theoretical_win"]) for p in parts))
        expect(li.locator('[data-field="win"]')).to_have_text(
            f"win {money_text(actual, signed=True)} against {money_text(theo, signed=True)}")
        expect(li.locator('[data-field="tables"] a')).to_have_text([p["table"] for p in parts])
    slow = box.locator('[data-field="dealers-slowest"] li')
    expect(slow).to_have_count(5)
    assert slow.evaluate_all("(ls) => ls.map((l) => l.dataset.dealer)") == slowest
    for name in slowest:
        hph = box.locator(f'[data-field="dealers-slowest"] li[data-dealer="{name}"] [data-field="hph"]')
        assert float(hph.get_attribute("data-hph") or "nan") == pytest.approx(figures[name][1], abs=1e-3)
        expect(hph).to_have_text(f"{figures[name][1]:.1f} hands an hour")
    expect(box.locator('[data-dealer="d.slow"] [data-field="errors"]')).to_have_text("4 procedure errors")

    # a `state` (a busy floor sends many a second) redraws nothing of the dealers; an analytics that moves a
    # dealer's figures does: d.birch back within the limits
    page.evaluate("() => { document.querySelector('#floor-dealers ol').__kept = true; window.__floorRenders = []; }")
    retained.table("t02", state=state_with("t02", {"id": "d.slow", "since": round(time.time(), 3)}, seq=2000))
    page.wait_for_function("() => window.__floorRenders.length > 0")
    assert page.evaluate("() => document.querySelector('#floor-dealers ol').__kept === true")
    tables["t02"]["d.birch"] = dealer_figures(rounds=31, hands=124, hours=1.15, errors={}, initial=82000,
                                              actual=1000, theo=490, sd=10100)
    retained.table("t02", analytics={**analytics_with("t02", tables["t02"]), "seq": 9999})
    expect(items).to_have_count(1)
    expect(page.locator("#floor")).to_have_attribute("data-dealers-out", "1")
    expect(box.locator('[data-field="dealers-out"] li')).to_have_attribute("data-dealer", "d.ames")
    renders = page.evaluate("() => window.__floorRenders")
    assert renders, "the page measured no draw of the floor"
    print(f"\nfloor-render with dealers: {len(renders)} draws, max {max(renders):.2f} ms")


def live_payload(records: Records, table: str) -> Json:
    """The ``analytics`` a table publishes for these public records (controller/analytics/live.py, the table's code)."""
    analytics = LiveAnalytics()
    for body in records.bodies:
        analytics.take(body)
    analytics.upto = len(records.bodies)
    return analytics.payload(Theory(0.006, Spread(1.15, "test", 0.45)), table_id=table, profile="house-h17")


def test_the_screens_read_the_dealers_a_table_publishes_and_the_floor_adds_them_as_documented(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    """The page against the live topic's own ``dealers`` (not hand-made figures): d.ames at t01 only, d.bo relieving
    d.ames during a round there and dealing 9 rounds at t02 (docs/analytics.md "Each dealer's figures")."""
    t1 = Records()
    t1.opened()
    t1.dealer("d.ames", None, by="pit.kim")
    t1.round("d.ames", {1: 1000, 2: 500}, {1: 1000, 2: -500})
    t1.round("d.ames", {1: 1000}, {1: -1000}, alarms=("dead_card",))
    t1.round("d.ames", {1: 1000, 3: 1000}, {1: -1000, 3: 0}, relieved_by="d.bo")
    t1.dealer("d.bo", "d.ames")
    t1.round("d.bo", {2: 2000, 5: 100}, {2: 2000, 5: -100}, alarms=(irregularity("shoe"),), dt=30.0)
    t1.round("d.bo", {2: 2000}, {2: -2000}, dt=45.0)
    t2 = Records(ts=1_795_334_400.0 + 7)
    t2.opened()
    t2.dealer("d.bo", None)
    for n in range(9):
        t2.round("d.bo", {1: 1000, 2: 300 * (n + 1)}, {1: -1000 if n % 2 else 1500, 2: 0},
                 alarms=("dead_card",) * (n == 4), dt=25.0)
    a1, a2 = live_payload(t1, "t01"), live_payload(t2, "t02")
    assert set(a1["dealers"]) == {"d.ames", "d.bo"} and set(a2["dealers"]) == {"d.bo"}  # the premise
    retained.table("t01", state=state_with("t01", {"id": "d.bo", "since": round(time.time(), 3)}), analytics=a1)
    retained.table("t02", state=state_with("t02", {"id": "d.bo", "since": round(time.time(), 3)}), analytics=a2)

    page.goto(dash.url + "#/t01")
    for name, d in a1["dealers"].items():
        row = page.locator(f'#analytics-dealers tr[data-dealer="{name}"]')
        expect(row.locator('[data-field="rounds"]')).to_have_text(str(d["rounds"]))
        expect(row.locator('[data-field="hph"]')).to_have_text(f"{d['hands_per_hour']:.1f}")
        expect(row.locator('[data-field="errors"]')).to_have_attribute(
            "data-count", str(sum(d["procedure_errors"].values())))
        expect(row.locator('[data-field="win"]')).to_have_text(money_text(d["actual_win"], signed=True))
        expect(row.locator('[data-field="theo"]')).to_have_text(money_text(d["theoretical_win"], signed=True))
        expect(row.locator('[data-field="win-z"]')).to_have_text(z_text(d["win_z"], d["rounds"]))

    # the floor: d.bo over both tables, as docs/analytics.md adds a dealer across tables
    bo = [a1["dealers"]["d.bo"], a2["dealers"]["d.bo"]]
    z, pace = combined(bo)
    assert z is not None and sum(p["rounds"] for p in bo) == 11
    open_floor(page, dash.url.split("#")[0])
    li = page.locator('#floor-dealers [data-field="dealers-slowest"] li[data-dealer="d.bo"]')
    assert float(li.locator('[data-field="hph"]').get_attribute("data-hph") or "nan") == pytest.approx(pace, abs=1e-3)
    expect(li.locator('[data-field="rounds"]')).to_have_text(f"11 rounds, {sum(p['hands'] for p in bo)} hands")
    errors = sum(sum(p["procedure_errors"].values()) for p in bo)
    assert errors == 2  # a card left the shoe unread at t01, a dead card at t02 (t01's dead card is d.ames's)
    expect(li.locator('[data-field="errors"]')).to_have_text(f"{errors} procedure errors")
    expect(li.locator('[data-field="tables"] a')).to_have_text(["t01", "t02"])
    shown = page.evaluate("""async () => (await import("/dealer_model.js"))
      .combineDealers(window.pitDashboard.pit.tables.values()).find((d) => d.id === "d.bo").z""")
    assert shown == pytest.approx(z, abs=1e-9)
    # d.ames, 3 rounds: too few to rank a pace
    expect(page.locator('#floor-dealers [data-dealer="d.ames"]')).to_have_count(0)


def duty_id(s: Json) -> str | None:
    d = s.get("dealer_on_duty")
    return d["id"] if isinstance(d, dict) else None


#: the dealers seen on each tile, every 50 ms of the page's life (what a person watching the pit would have seen)
WATCH_TILES = """
window.__seen = {};
setInterval(() => {
  for (const el of document.querySelectorAll('.tile [data-field="dealer-on-duty"]')) {
    const t = el.closest('.tile').dataset.table;
    (window.__seen[t] ??= []).includes(el.dataset.dealer) || window.__seen[t].push(el.dataset.dealer);
  }
}, 50);
"""


def test_the_demo_crew_rotates_dealers_on_the_tiles_and_the_figures_follow(
    page: Page, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """``tablectl demo`` with its simulated crew (a relief every simulated minute, from each table's crew file):
    each tile shows the dealers in turn as the tables publish them, and once the demo is over the table view and the
    floor page show the figures of the dealers the tables published."""
    state_dir = tmp_path / "state"
    (state_dir / "crew").mkdir(parents=True)
    crews = {"t01": ["a.ames", "b.baker", "c.chen"], "t02": ["d.diaz", "a.ames", "e.eze"]}
    for t, crew in crews.items():
        (state_dir / "crew" / f"{t}.toml").write_text(
            f"[crew]\ndealers = {json.dumps(crew)}\nrelief_minutes = 1\nslow = \"{crew[1]}\"\n"
            f"error_prone = \"{crew[2]}\"\n")
    page.add_init_script(WATCH_TILES)
    dash = Tablectl("dashboard", "--port", "0", "--broker-ws", mosquitto.ws_url)
    watch = BrokerWatch(mosquitto)
    try:
        page.goto(dash.line_starting("Pit dashboard:"))
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        demo = Tablectl("demo", "--tables", "2", "--rounds", "30", "--seed", "3", "--speed", "max", "--broker",
                        mosquitto.url, "--no-dashboard", "--state-dir", str(state_dir), "--quiet")
        try:
            assert demo.wait(240) == 0, demo.output()
        finally:
            demo.close()
        published = {t: sorted({duty_id(s) or "" for (table, _), s in watch.states.items() if table == t})
                     for t in crews}
        for t, crew in crews.items():
            assert len(set(published[t]) - {""}) >= 2 and set(published[t]) - {""} <= set(crew), published
            last = watch.get(t, "state")
            duty = page.locator(f'.tile[data-table="{t}"] [data-field="dealer-on-duty"]')
            expect(duty).to_have_attribute("data-dealer", duty_id(last) or "")
            seen = page.evaluate("(t) => window.__seen[t] ?? []", t)
            assert len(set(seen) - {""}) >= 2 and set(seen) <= set(published[t]), (t, seen, published[t])

        analytics = {t: watch.wait_for(t, "analytics", lambda a: a["rounds"] == 30) for t in crews}
        page.locator('.tile[data-table="t01"]').click()
        expect(page.locator("#analytics")).to_have_attribute("data-seq", str(analytics["t01"]["seq"]))
        rows = page.locator("#analytics-dealers tbody tr")
        assert rows.evaluate_all("(rs) => rs.map((r) => r.dataset.dealer)") == sorted(analytics["t01"]["dealers"])
        assert sum(d["rounds"] for d in analytics["t01"]["dealers"].values()) == 30  # a dealer on every round
        for name, d in analytics["t01"]["dealers"].items():
            row = page.locator(f'#analytics-dealers tr[data-dealer="{name}"]')
            expect(row.locator('[data-field="rounds"]')).to_have_text(str(d["rounds"]))
            expect(row.locator('[data-field="hph"]')).to_have_text(f"{d['hands_per_hour']:.1f}")
            expect(row.locator('[data-field="win"]')).to_have_text(money_text(d["actual_win"], signed=True))
            expect(row.locator('[data-field="win-z"]')).to_have_text(z_text(d["win_z"], d["rounds"]))
        # the history: each round names who dealt it as recall does, and who took over during it
        history = watch.get("t01", "history")
        expect(page.locator("#history tr[data-round]")).to_have_count(len(history))
        shown = page.locator("#history tr[data-round]").evaluate_all(
            "(rs) => rs.map((r) => { const c = r.querySelector('[data-field=\"dealt-by\"]');"
            " return [Number(r.dataset.round), c.dataset.dealer, c.textContent]; })")

        def relief(r: Json) -> str:
            settled = [e for e in r["events"] if e.get("type") == "round_settled" and "relieved_by" in e]
            return f" → {settled[0]['relieved_by'] or 'no dealer'}" if settled else ""

        assert shown == [[r["round"], dealer_of(r) or "", (dealer_of(r) or "no dealer") + relief(r)]
                         for r in reversed(history)]
        assert len({d for _, d, _ in shown}) >= 2

        # the floor: a.ames dealt at both tables, added over them
        page.goto(page.url.split("#")[0] + "#floor")
        ames = [analytics[t]["dealers"]["a.ames"] for t in crews if "a.ames" in analytics[t]["dealers"]]
        got = page.evaluate("""async () => (await import("/dealer_model.js"))
          .combineDealers(window.pitDashboard.pit.tables.values()).find((d) => d.id === "a.ames")""")
        assert got["rounds"] == sum(p["rounds"] for p in ames) and got["hands"] == sum(p["hands"] for p in ames)
        z, pace = combined(ames)
        assert got["hph"] == pytest.approx(pace, rel=1e-6)
        assert (got["z"] is None) == (z is None) and (z is None or got["z"] == pytest.approx(z, abs=1e-9))
    finally:
        watch.close()
        dash.close()


# ---- the pure model, in the page ------------------------------------------------------------------------


def test_the_dealer_model_combines_reads_times_and_skips_what_it_cannot_judge(page: Page, dash: Dashboard) -> None:
    page.goto(dash.url)
    got = page.evaluate("""async () => {
      const m = await import("/dealer_model.js");
      const rec = (id, dealers, min_rounds = 10) => ({ id, analytics: { min_rounds, dealers } });
      const part = (o) => ({ rounds: 20, hands: 50, hands_per_hour: 50, on_duty_s: 3600, procedure_errors: {},
        initial_wagers: "100", actual_win: "10", theoretical_win: "1", win_sd: "5", win_z: 1.8, ...o });
      return {
        epoch: [m.epochS(1700000000), m.epochS(1700000000500), m.epochS("2023-11-14T22:13:20Z"), m.epochS("soon"),
                m.epochS(null)],
        // skew: the table's clock 1 h ahead of the browser's; the age is still the table's 300 s + 20 s here
        skewed: m.dealerOnDuty({ state: { ts: 1700003600, dealer_on_duty: { id: "d.a", since: 1700003300 } },
                                 stateAt: 1000000, }, 1020000),
        noSince: m.dealerOnDuty({ state: { dealer_on_duty: { id: "d.a" } }, stateAt: 0 }, 0),
        bad: [m.dealerOnDuty({ state: { dealer_on_duty: { id: 7 } } }, 0),
              m.dealerOnDuty({ state: { dealer_on_duty: "d.a" } }, 0),
              m.dealerOnDuty({ state: {} }, 0), m.dealerOnDuty({ state: null }, 0)],
        waits: [m.waitsForDealer({ dealer_on_duty: null, require_dealer: true }),
                m.waitsForDealer({ dealer_on_duty: { id: "d.a" }, require_dealer: true }),
                m.waitsForDealer({ dealer_on_duty: null }), m.waitsForDealer(null),
                m.waitsForDealer({ dealer_on_duty: null, awaiting: "dealer" }),
                m.waitsForDealer({ dealer_on_duty: null, awaiting: "shuffle",
                                   halted: "no dealer on duty: betting opens when a dealer signs in" }),
                m.waitsForDealer({ dealer_on_duty: null, awaiting: "bets", halted: "shoe lost" })],
        names: [m.namesDealer({ dealer_on_duty: null }), m.namesDealer({ dealer_on_duty: { id: "d.a" } }),
                m.namesDealer({}),
                m.namesDealer(null)],
        // one table: its own win_z; two: over the summed variances; a part without win_sd: no combined z
        one: m.combineDealers([rec("t1", { "d.a": part({}) })])[0].z,
        two: m.combineDealers([rec("t1", { "d.a": part({}) }), rec("t2", { "d.a": part({ actual_win: "-3" }) })])[0],
        noSd: m.combineDealers([rec("t1", { "d.a": part({}) }), rec("t2", { "d.a": part({ win_sd: null }) })])[0].z,
        // a dealer just signed in at a second table (no round there: no variance, no theoretical win yet)
        fresh: m.combineDealers([rec("t1", { "d.a": part({}) }), rec("t2", { "d.a": part({ rounds: 0, hands: 0,
          win_sd: null, win_z: null, theoretical_win: null, actual_win: "0", on_duty_s: 1800 }) })])[0],
        few: m.combineDealers([rec("t1", { "d.a": part({ rounds: 4, win_z: null }) }),
                               rec("t2", { "d.a": part({ rounds: 5, win_z: null }) })])[0],
        junk: m.combineDealers([{ id: "t1", analytics: { dealers: [1, 2] } }, { id: "t2", analytics: null },
                                rec("t3", { "": part({}), "d.b": "x", "d.c": null })]),
        rows: m.dealerRows({ min_rounds: 10, dealers: {
          "d.b": part({ procedure_errors: { b: 1, a: 1, c: 3, z: 0, y: "2" } }),
          "d.a": part({ win_z: null, rounds: 3 }) } }),
      };
    }""")
    assert got["epoch"] == [1700000000, 1700000000.5, 1700000000, None, None]
    assert got["skewed"] == {"id": "d.a", "ageS": 320}
    assert got["noSince"] == {"id": "d.a", "ageS": None}
    assert got["bad"] == [None, None, None, None]
    assert got["waits"] == [True, False, False, False, True, True, False]
    assert got["names"] == [True, True, False, False]
    assert got["one"] == 1.8
    two = got["two"]
    assert two["z"] == pytest.approx((700 - 200) / math.sqrt(2 * 500 ** 2))
    assert (two["rounds"], two["hands"], two["hph"], two["actual"], two["theo"], two["tables"]) == (
        40, 100, 50, 700, 200, ["t1", "t2"])
    assert got["noSd"] is None
    fresh = got["fresh"]
    assert fresh["z"] == pytest.approx((1000 - 100) / 500) and fresh["hph"] == pytest.approx(50 / 1.5)
    assert (got["few"]["z"], got["few"]["tooFew"]) == (None, True)
    assert got["junk"] == []
    rows = got["rows"]
    assert [r["id"] for r in rows] == ["d.a", "d.b"]
    assert rows[1]["errors"] == {"pairs": [["c", 3], ["a", 1], ["b", 1]], "total": 5}
    assert rows[0]["z"] == {"win_z": None, "rounds": 3, "min_rounds": 10} and rows[0]["zone"] is None


def test_200_tables_of_40_dealers_on_the_floor_page_each_draw_measured(
    page: Page, dash: Dashboard, retained: Retained
) -> None:
    """200 tables, each with 4 dealers of a crew of 40 (each dealer at 20 tables): the lists as combined here, and
    1,000 live ``state``s that change none of it rebuild none of it; each draw measured (printed, run with -s)."""
    page.add_init_script("window.__floorRenders = []; new PerformanceObserver((l) => { for (const e of l.getEntries())"
                         " if (e.name === 'floor-render') window.__floorRenders.push(e.duration); })"
                         ".observe({ type: 'measure', buffered: false });")
    a0, s0 = initial_analytics("t01"), initial_state("t01")
    tables = two_hundred(a0, s0, round_=0)
    crew = [f"d.{n:02d}" for n in range(40)]
    by_dealer: dict[str, list[Json]] = {}
    for i, (t, (s, a)) in enumerate(tables.items()):
        dealers = {}
        for k in range(4):
            name = crew[(i + 10 * k) % 40]
            n = crew.index(name)
            rounds = 8 + (i * 7 + k * 3) % 30
            hands = rounds * (2 + n % 3)
            sd = 3000 + 150 * rounds
            theo = rounds * 40
            # d.07 wins 1.2 SD at every table: within the limits at each, far outside them over 20 tables
            actual = theo + (round(1.2 * sd) if name == "d.07" else round(((i * 13 + k * 5) % 41 - 20) / 10 * sd))
            dealers[name] = dealer_figures(rounds=rounds, hands=hands, hours=rounds * (50 + n) / 3600,
                                           errors={"peek_mismatch": n % 3} if n % 3 else {}, initial=rounds * 5000,
                                           actual=actual, theo=theo, sd=sd)
            by_dealer.setdefault(name, []).append({**dealers[name], "table": t})
        a["dealers"] = dealers
        s["dealer_on_duty"] = {"id": crew[i % 40], "since": round(time.time() - 60 * (i % 50), 3)}
        retained.table(t, state=s, analytics=a)
    figures = {name: combined(parts) for name, parts in by_dealer.items()}
    out = sorted((n for n, (z, _) in figures.items() if z is not None and abs(z) > LIMIT_SD),
                 key=lambda n: -abs(figures[n][0] or 0))
    slowest = sorted(figures, key=lambda n: (figures[n][1], n))[:5]
    assert "d.07" in out and all(abs(p["win_z"] or 0) <= LIMIT_SD for p in by_dealer["d.07"])  # the premise

    started = time.monotonic()
    open_floor(page, dash.url)
    page.wait_for_function("(n) => document.querySelectorAll('#floor tbody tr').length === 200 && "
                           "document.querySelectorAll('#floor-dealers [data-field=\"dealers-out\"] li').length === n",
                           arg=len(out), timeout=60_000, polling="raf")
    shown_s = time.monotonic() - started
    box = page.locator("#floor-dealers")
    assert box.locator('[data-field="dealers-out"] li').evaluate_all("(ls) => ls.map((l) => l.dataset.dealer)") == out
    expect(box.locator('[data-field="dealers-slowest"] li')).to_have_count(5)
    assert box.locator('[data-field="dealers-slowest"] li').evaluate_all(
        "(ls) => ls.map((l) => l.dataset.dealer)") == slowest
    at_load = page.evaluate("() => window.__floorRenders.splice(0)")

    page.evaluate("() => document.querySelectorAll('#floor-dealers ol').forEach((l) => { l.__kept = true; })")
    started = time.monotonic()
    for k in range(1, 6):
        for t, (st, _) in tables.items():
            retained.client.publish(f"{retained.prefix}/{t}/state", json.dumps({**st, "seq": st["seq"] + k}), qos=1)
    last = tables["t200"][0]["seq"] + 5
    page.wait_for_function("(seq) => window.pitDashboard.pit.tables.get('t200').state.seq === seq", arg=last,
                           timeout=60_000, polling=200)
    states_s = time.monotonic() - started
    in_states = page.evaluate("() => window.__floorRenders.splice(0)")
    assert page.evaluate("() => [...document.querySelectorAll('#floor-dealers ol')].every((l) => l.__kept)")
    retained.clear(list(tables))
    assert at_load and in_states, "the page measured no draw of the floor"
    print(f"\n200 tables, 40 dealers: all shown {shown_s * 1000:.0f} ms after the page was opened; {len(at_load)} "
          f"draws while loading, max {max(at_load):.1f} ms, median {statistics.median(at_load):.2f} ms")
    print(f"1,000 live states: all received in {states_s * 1000:.0f} ms, {len(in_states)} draws, "
          f"max {max(in_states):.1f} ms, median {statistics.median(in_states):.2f} ms, the dealers' lists not rebuilt")
