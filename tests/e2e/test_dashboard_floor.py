"""The dashboard's floor page (``#floor``) in headless Chromium: every pit's and table's hold against theoretical,
the tables outside their control limits first (issue #26).

The page reads each table's retained ``state`` and ``analytics``; a table's pit is the ``pit`` they carry (none:
"unassigned"). A real demo (``tablectl demo --tables 3``, on the session's Mosquitto) runs once for the module:
its tables' figures are what the page must show, and its ``analytics`` is the template of the hand-built tables
of the grouping test (each derived with the formulas of docs/analytics.md, so every figure is consistent). The
200-table test measures how long the page takes to show them and how long each draw takes (printed; no timed
assertion). The read-only ``dashboard`` user of a broker-config'd Mosquitto sees the floor, and the page never
asks for a rating topic (read from the SUBSCRIBE packets it sends). Run with ``-s`` to see the figures.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import statistics
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from playwright.sync_api import Locator, Page, WebSocket, expect

from controller.cli.dashboard import Dashboard, serve_dashboard
from controller.game.money import format_money, parse_money
from tests.e2e.harness import BrokerWatch, money_text, tablectl_command
from tests.mqtt.pit_broker import Broker
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(300)

Json = dict[str, Any]
#: the control limit of the pit bar and the tiles (controller/web/model.js LIMIT_SD), and the warning limit
LIMIT_SD, WARN_SD = 3, 2
DEMO_PREFIX, DEMO_TABLES, DEMO_ROUNDS = "floordemo", ("t01", "t02", "t03"), 15
UNASSIGNED = "unassigned"

# every draw of the floor page, as the page measures it (User Timing "floor-render"), kept by an observer
OBSERVE_RENDERS = """
window.__floorRenders = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.name === 'floor-render') window.__floorRenders.push(e.duration);
}).observe({ type: 'measure', buffered: false });
"""


@dataclass
class DemoFloor:
    """A finished demo's tables as a separate subscriber received them."""

    analytics: dict[str, Json]
    states: dict[str, Json]


@pytest.fixture(scope="module")
def demo_floor(mosquitto_session: Mosquitto, tmp_path_factory: pytest.TempPathFactory) -> DemoFloor:
    state_dir = tmp_path_factory.mktemp("floor-demo")
    demo = subprocess.run([*tablectl_command(), "demo", "--tables", str(len(DEMO_TABLES)), "--rounds",
                           str(DEMO_ROUNDS), "--speed", "max", "--seed", "7", "--broker", mosquitto_session.url,
                           "--prefix", DEMO_PREFIX, "--state-dir", str(state_dir), "--quiet", "--no-dashboard"],
                          capture_output=True, text=True, timeout=240)
    assert demo.returncode == 0, demo.stderr
    watch = BrokerWatch(mosquitto_session, prefix=DEMO_PREFIX)
    try:
        analytics = {t: watch.wait_for(t, "analytics", lambda a: a["rounds"] == DEMO_ROUNDS) for t in DEMO_TABLES}
        states = {t: watch.wait_for(t, "state", lambda s: isinstance(s, dict)) for t in DEMO_TABLES}
    finally:
        watch.close()
    for a in analytics.values():  # the theory was known by the time each table stopped
        assert a["theoretical_win"] is not None and a["win_z"] is not None, a
    return DemoFloor(analytics, states)


@pytest.fixture
def observed(page: Page) -> Page:
    page.add_init_script(OBSERVE_RENDERS)
    return page


@contextlib.contextmanager
def dashboard_for(broker_ws: str, prefix: str) -> Iterator[Dashboard]:
    """The page served for ``prefix`` on the broker(s) at ``broker_ws`` (comma-separated for a cluster)."""
    dash = serve_dashboard(0, broker_ws, prefix)
    try:
        yield dash
    finally:
        dash.stop()


# ---- hand-built tables, derived from a real table's analytics ---------------------------------------------


def derive(template: Json, *, table: str, scale: float, z: float, pit: str | None) -> Json:
    """``template`` (a demo table's ``analytics``) for a table that played ``scale`` times as much and whose win
    lies ``z`` standard deviations from its theoretical win: every figure by the formulas of docs/analytics.md
    (the SD of the win grows with the square root of the wagers)."""
    a = copy.deepcopy(template)
    handle = round(parse_money(template["handle"]) * scale)
    initial = round(parse_money(template["initial_wagers"]) * scale)
    theo = round(initial * template["theoretical_edge"])
    sd = round(parse_money(template["win_sd"]) * math.sqrt(scale))
    net = theo + round(z * sd)
    a.update({"table_id": table, "rounds": round(template["rounds"] * scale), "hands": round(template["hands"] * scale),
              "handle": format_money(handle), "initial_wagers": format_money(initial),
              "theoretical_win": format_money(theo), "house_net": format_money(net), "win_sd": format_money(sd),
              "hold": round(net / handle, 6), "theoretical_hold": round(theo / handle, 6),
              "win_z": round((net - theo) / sd, 6)})
    if pit is None:
        a.pop("pit", None)
    else:
        a["pit"] = pit
    return a


def state_of(template: Json, *, table: str, pit: str | None) -> Json:
    s = copy.deepcopy(template)
    s["table_id"] = table
    if pit is None:
        s.pop("pit", None)
    else:
        s["pit"] = pit
    return s


class Retained:
    """Publishes tables' retained ``status``, ``state`` and ``analytics`` as their tables would (QoS 1)."""

    def __init__(self, broker: Mosquitto, prefix: str) -> None:
        self.prefix = prefix
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"floor-test-{prefix}-{time.monotonic_ns()}")
        self.client.connect(broker.host, broker.port)
        self.client.loop_start()

    def table(self, table: str, *, status: str = "online", state: Json | None = None,
              analytics: Json | None = None, retain: bool = True) -> None:
        pending = [self.client.publish(f"{self.prefix}/{table}/status", status, qos=1, retain=retain)]
        for kind, body in (("state", state), ("analytics", analytics)):
            if body is not None:
                pending.append(self.client.publish(f"{self.prefix}/{table}/{kind}", json.dumps(body), qos=1,
                                                   retain=retain))
        for p in pending:
            p.wait_for_publish(timeout=10)

    def clear(self, tables: list[str]) -> None:
        """Remove the retained messages (the session's broker is shared)."""
        for t in tables:
            for kind in ("status", "state", "analytics"):
                self.client.publish(f"{self.prefix}/{t}/{kind}", b"", qos=1, retain=True).wait_for_publish(timeout=10)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


# ---- what the page must show ---------------------------------------------------------------------------


def pct(x: float, digits: int = 2) -> str:
    return f"{x * 100:.{digits}f}%"


def z_text(z: float) -> str:
    return f"{'−' if z < 0 else '+'}{abs(z):.2f} SD"


def zone(z: float | None) -> str:
    if z is None:
        return ""
    return "out" if abs(z) > LIMIT_SD else "warn" if abs(z) > WARN_SD else "ok"


def pit_of(state: Json | None, analytics: Json | None) -> str | None:
    for body in (state, analytics):
        p = (body or {}).get("pit")
        if isinstance(p, str) and p.strip():
            return p.strip()
    return None


def natural(name: str) -> list[tuple[int, str]]:
    """Pits as the page sorts them: "pit 2" before "pit 10"."""
    return [(int(x), "") if x.isdigit() else (-1, x) for x in re.split(r"(\d+)", name)]


def floor_order(tables: dict[str, Json | None]) -> list[str]:
    """Outside the control limits first (the farthest out first), then by table id."""
    def key(t: str) -> tuple[int, float, int]:
        a = tables[t]
        z = a["win_z"] if a else None
        out = z is not None and abs(z) > LIMIT_SD
        return (0, -abs(z), int(t[1:])) if out and z is not None else (1, 0.0, int(t[1:]))
    return sorted(tables, key=key)


def expect_totals(box: Locator, analytics: list[Json]) -> None:
    """A totals bar (the floor's or a pit's) against the tables' analytics."""
    handle = sum(parse_money(a["handle"]) for a in analytics)
    net = sum(parse_money(a["house_net"]) for a in analytics)
    theo = sum(parse_money(a["theoretical_win"]) for a in analytics)

    def f(field: str) -> Locator:
        return box.locator(f'[data-field="{field}"]')

    expect(f("handle")).to_have_text(money_text(format_money(handle)))
    expect(f("win")).to_have_text(money_text(format_money(net), signed=True))
    expect(f("theo")).to_have_text(money_text(format_money(theo), signed=True))
    expect(f("hold")).to_have_text(f"{pct(net / handle)} against {pct(theo / handle)}")
    expect(f("out")).to_have_text(str(sum(abs(a["win_z"]) > LIMIT_SD for a in analytics)))
    expect(f("warn")).to_have_text(str(sum(abs(a["win_z"]) > WARN_SD for a in analytics)))


def expect_row(page: Page, table: str, a: Json | None, pit: str | None) -> None:
    row = page.locator(f'#floor tr[data-table="{table}"]')
    expect(row).to_have_attribute("data-pit", pit or "")
    if a is None:
        expect(row.locator('[data-field="handle"]')).to_have_text("–")
        expect(row.locator('td[data-field="win-z"]')).to_have_text("–")
        return
    expect(row).to_have_attribute("data-zone", zone(a["win_z"]))
    expect(row.locator('[data-field="rounds"]')).to_have_text(str(a["rounds"]))
    expect(row.locator('[data-field="handle"]')).to_have_text(money_text(a["handle"]))
    expect(row.locator('[data-field="win"]')).to_have_text(money_text(a["house_net"], signed=True))
    expect(row.locator('[data-field="theo"]')).to_have_text(money_text(a["theoretical_win"], signed=True))
    expect(row.locator('[data-field="hold"]')).to_have_text(pct(a["hold"]))
    expect(row.locator('[data-field="theo-hold"]')).to_have_text(pct(a["theoretical_hold"]))
    expect(row.locator('td[data-field="win-z"]')).to_have_text(z_text(a["win_z"]))
    bar = row.locator('[data-field="hold-vs-theo"]')
    expect(bar).to_have_attribute("data-zone", zone(a["win_z"]))
    hold_theo = f"{pct(a['hold'], 1)} / {pct(a['theoretical_hold'], 1)}"
    expect(bar.locator('[data-field="hold-theo"]')).to_have_text(hold_theo)
    expect(row.locator('[data-field="out"]')).to_have_count(1 if zone(a["win_z"]) == "out" else 0)


def expect_floor(page: Page, tables: Mapping[str, tuple[Json | None, Json | None]]) -> None:
    """The whole page for ``tables`` (id -> (state, analytics)): totals, the out list, each pit and its rows."""
    floor = page.locator("#floor")
    expect(floor).to_have_attribute("data-tables", str(len(tables)))
    with_figures = [a for _, a in tables.values() if a is not None]
    expect(floor.locator('[data-field="floor-tables"]')).to_have_attribute("data-count", str(len(tables)))
    expect_totals(floor.locator("#floor-totals"), with_figures)
    pits: dict[str | None, dict[str, Json | None]] = {}
    for t, (s, a) in tables.items():
        pits.setdefault(pit_of(s, a), {})[t] = a
    named = sorted((p for p in pits if p is not None), key=natural)
    order = [*named, *([None] if None in pits else [])]
    expect(floor.locator("section.floor-pit")).to_have_count(len(order))
    got = floor.locator("section.floor-pit").evaluate_all("(ss) => ss.map((s) => s.dataset.pit)")
    assert got == [p or "" for p in order]
    for p in order:
        sec = floor.locator(f'section.floor-pit[data-pit="{p or ""}"]')
        expect(sec.locator('[data-field="pit-name"]')).to_have_text(p or UNASSIGNED)
        expect(sec.locator('[data-field="pit-count"]')).to_have_attribute("data-count", str(len(pits[p])))
        figures = [a for a in pits[p].values() if a is not None]
        if figures:
            expect_totals(sec.locator("header"), figures)
        rows = sec.locator("tbody tr")
        expect(rows).to_have_count(len(pits[p]))
        assert rows.evaluate_all("(rs) => rs.map((r) => r.dataset.table)") == floor_order(pits[p])
    for t, (s, a) in tables.items():
        expect_row(page, t, a, pit_of(s, a))
    zs = {t: None if a is None else a["win_z"] for t, (_, a) in tables.items()}
    out = [t for t in floor_order({t: a for t, (_, a) in tables.items()}) if zone(zs[t]) == "out"]
    listed = floor.locator("#floor-out li")
    expect(listed).to_have_count(len(out))
    assert listed.evaluate_all("(ls) => ls.map((l) => l.dataset.table)") == out
    if not out:
        expect(floor.locator('[data-field="no-out"]')).to_be_visible()


def open_floor(page: Page, url: str) -> None:
    page.goto(url + "#floor")
    expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
    expect(page.locator("#floor")).to_be_visible()


# ---- the tests -----------------------------------------------------------------------------------------


def test_the_floor_groups_tables_by_pit_with_the_tables_outside_their_limits_first(
    observed: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor
) -> None:
    page = observed
    prefix = "floorpits"
    a0, s0 = demo_floor.analytics["t01"], demo_floor.states["t01"]
    plan: dict[str, tuple[str | None, float | None, float, str]] = {  # table: pit, z (None: no analytics), scale, where
        "t01": ("pit 1", 0.4, 3.0, "state"), "t02": ("pit 1", -3.6, 5.0, "state"), "t03": ("pit 1", 3.2, 2.0, "state"),
        "t04": ("pit 1", 2.4, 4.0, "state"), "t05": ("pit 2", -1.1, 1.5, "state"), "t06": ("pit 2", 4.5, 6.0, "state"),
        "t09": ("pit 2", 0.9, 2.5, "analytics"),  # the pit named by its analytics only
        "t10": ("pit 10", -0.2, 1.0, "state"),  # pit 10 after pit 2
        "t07": (None, 0.2, 1.2, "state"), "t08": (None, None, 1.0, "state"),  # no pit; t08 without analytics yet
    }
    tables: dict[str, tuple[Json | None, Json | None]] = {}
    pub = Retained(mosquitto_session, prefix)
    try:
        for t, (pit, z, scale, where) in plan.items():
            a = None if z is None else derive(a0, table=t, scale=scale, z=z, pit=pit)
            s = state_of(s0, table=t, pit=pit if where == "state" else None)
            tables[t] = (s, a)
            pub.table(t, state=s, analytics=a)
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            open_floor(page, dash.url)
            expect_floor(page, tables)
            # the link from the pit overview, and to a table
            expect(page.locator("#nav-floor")).to_have_class("current")
            page.locator('#floor tr[data-table="t06"] a.floor-id').click()
            expect(page.locator("#table")).to_have_attribute("data-table", "t06")
            page.locator("#nav-floor").click()
            expect(page.locator("#floor")).to_be_visible()

            # live: t04 goes outside its limits (-3.3, between t02's -3.6 and t03's 3.2), t07 is moved to pit 2;
            # the rows of the other tables are the same elements, not rebuilt
            page.evaluate("() => document.querySelectorAll('#floor tbody tr')"
                          ".forEach((r) => { r.firstChild.__kept = true; })")
            t04 = derive(a0, table="t04", scale=4.2, z=-3.3, pit="pit 1")
            tables["t04"] = (tables["t04"][0], t04)
            pub.table("t04", analytics=t04, retain=True)
            s07 = state_of(s0, table="t07", pit="pit 2")
            tables["t07"] = (s07, tables["t07"][1])
            pub.table("t07", state=s07, retain=True)
            expect_floor(page, tables)
            rebuilt = page.evaluate("() => [...document.querySelectorAll('#floor tbody tr')]"
                                    ".filter((r) => !r.firstChild.__kept).map((r) => r.dataset.table)")
            assert sorted(rebuilt) == ["t04", "t07"], rebuilt
            renders = page.evaluate("() => window.__floorRenders")
            assert renders, "the page measured no draw of the floor"
            print(f"\nfloor page, {len(tables)} tables: {len(renders)} draws, "
                  f"max {max(renders):.1f} ms, median {statistics.median(renders):.2f} ms")
    finally:
        pub.clear(list(tables))
        pub.close()


# every row of the floor page in one call: its pit section, table, zone and figures
READ_FLOOR = """() => [...document.querySelectorAll('#floor section.floor-pit')].map((s) => ({
  pit: s.dataset.pit,
  rows: [...s.querySelectorAll('tbody tr')].map((r) => ({
    table: r.dataset.table, zone: r.dataset.zone,
    rounds: r.querySelector('[data-field="rounds"]').textContent,
    handle: r.querySelector('[data-field="handle"]').textContent,
    win: r.querySelector('[data-field="win"]').textContent,
    hold: r.querySelector('[data-field="hold"]').textContent,
    z: r.querySelector('td[data-field="win-z"]').textContent,
    out: r.querySelectorAll('[data-field="out"]').length,
  })),
}))"""


def floor_as_page_shows(tables: dict[str, tuple[Json, Json]]) -> list[Json]:
    """What :data:`READ_FLOOR` must read for ``tables``, pits in the page's order."""
    pits: dict[str | None, dict[str, Json | None]] = {}
    for t, (s, a) in tables.items():
        pits.setdefault(pit_of(s, a), {})[t] = a
    order = [*sorted((p for p in pits if p is not None), key=natural), *([None] if None in pits else [])]
    want = []
    for p in order:
        rows = []
        for t in floor_order(pits[p]):
            a = tables[t][1]
            rows.append({"table": t, "zone": zone(a["win_z"]), "rounds": str(a["rounds"]),
                         "handle": money_text(a["handle"]), "win": money_text(a["house_net"], signed=True),
                         "hold": pct(a["hold"]), "z": z_text(a["win_z"]), "out": int(zone(a["win_z"]) == "out")})
        want.append({"pit": p or "", "rows": rows})
    return want


def two_hundred(a0: Json, s0: Json, *, round_: int) -> dict[str, tuple[Json, Json]]:
    """200 tables in pits of 20 ("pit 1" to "pit 9", the last 20 unassigned), one in 23 outside its limits."""
    tables = {}
    for n in range(1, 201):
        t = f"t{n:03d}"
        pit = None if n > 180 else f"pit {1 + (n - 1) // 20}"
        z = (3.4 + (n % 5) / 10) * (1 if n % 2 else -1) if n % 23 == 0 else ((n * 37 + round_) % 57 - 28) / 10
        scale = 0.5 + (n % 7) * 0.5 + round_ / 100
        tables[t] = (state_of(s0, table=t, pit=pit), derive(a0, table=t, scale=scale, z=z, pit=pit))
    return tables


def test_200_tables_all_on_the_floor_page_with_each_draw_measured(
    observed: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor
) -> None:
    page = observed
    prefix = "floor200"
    a0, s0 = demo_floor.analytics["t01"], demo_floor.states["t01"]
    tables = two_hundred(a0, s0, round_=0)
    pub = Retained(mosquitto_session, prefix)
    try:
        for t, (s, a) in tables.items():
            pub.table(t, state=s, analytics=a)
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            started = time.monotonic()
            page.goto(dash.url + "#floor")
            page.wait_for_function("() => document.querySelectorAll("
                                   "'#floor tbody tr[data-zone]:not([data-zone=\"\"])').length === 200",
                                   timeout=60_000, polling="raf")
            shown_s = time.monotonic() - started
            assert page.evaluate(READ_FLOOR) == floor_as_page_shows(tables)
            expect(page.locator('[data-field="floor-tables"]')).to_have_attribute("data-count", "200")
            expect_totals(page.locator("#floor-totals"), [a for _, a in tables.values()])
            at_load = page.evaluate("() => window.__floorRenders.splice(0)")

            # every table settles a round: 200 live messages in a burst, drawn frame by frame
            later = two_hundred(a0, s0, round_=1)
            started = time.monotonic()
            for t, (_, a) in later.items():
                pub.client.publish(f"{prefix}/{t}/analytics", json.dumps(a), qos=1, retain=True)
            want = floor_as_page_shows(later)
            page.wait_for_function("(want) => JSON.stringify((" + READ_FLOOR + ")()) === want",
                                   arg=json.dumps(want, ensure_ascii=False, separators=(",", ":")), timeout=60_000,
                                   polling=200)
            burst_s = time.monotonic() - started
            in_burst = page.evaluate("() => window.__floorRenders.splice(0)")
            expect_totals(page.locator("#floor-totals"), [a for _, a in later.values()])
    finally:
        pub.clear(list(tables))
        pub.close()
    assert at_load and in_burst, "the page measured no draw of the floor"
    print(f"\n200 tables: all shown {shown_s * 1000:.0f} ms after the page was opened; "
          f"{len(at_load)} draws while loading, max {max(at_load):.1f} ms, median {statistics.median(at_load):.2f} ms")
    print(f"200 live analytics in a burst: all shown in {burst_s * 1000:.0f} ms, {len(in_burst)} draws, "
          f"max {max(in_burst):.1f} ms, median {statistics.median(in_burst):.2f} ms")


def test_a_real_demo_shows_its_tables_figures_on_the_floor_page(
    page: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor
) -> None:
    tables = {t: (demo_floor.states[t], demo_floor.analytics[t]) for t in DEMO_TABLES}
    with dashboard_for(mosquitto_session.ws_url, DEMO_PREFIX) as dash:
        open_floor(page, dash.url)
        expect_floor(page, tables)
        for t in DEMO_TABLES:  # the demo has stopped: its tables closed, offline
            expect(page.locator(f'#floor tr[data-table="{t}"] [data-field="status"]')).to_have_text("OFFLINE")


# ---- roles: the read-only screen, and no rating topic ------------------------------------------------------


def subscribed(frames: list[bytes]) -> list[str]:
    """The topic filters of every MQTT SUBSCRIBE packet in ``frames`` (the page's WebSocket frames)."""
    filters: list[str] = []
    for frame in frames:
        i = 0
        while i < len(frame):
            kind, i = frame[i], i + 1
            length, shift = 0, 0
            while True:
                b, i = frame[i], i + 1
                length |= (b & 0x7F) << shift
                shift += 7
                if b < 0x80:
                    break
            body, i = frame[i:i + length], i + length
            if kind >> 4 == 8:  # SUBSCRIBE: packet id, then (length, filter, options)...
                j = 2
                while j < len(body):
                    n = int.from_bytes(body[j:j + 2], "big")
                    filters.append(body[j + 2:j + 2 + n].decode())
                    j += 3 + n
    return filters


def matches(topic_filter: str, topic: str) -> bool:
    """MQTT's topic matching (``+`` one level, ``#`` the rest)."""
    f, t = topic_filter.split("/"), topic.split("/")
    for i, part in enumerate(f):
        if part == "#":
            return True
        if i >= len(t) or part not in ("+", t[i]):
            return False
    return len(f) == len(t)


def test_the_read_only_dashboard_user_sees_the_floor_and_never_asks_for_ratings(
    page: Page, pit: Broker, demo_floor: DemoFloor
) -> None:
    frames: list[bytes] = []

    def on_socket(ws: WebSocket) -> None:
        ws.on("framesent", lambda payload: frames.append(payload if isinstance(payload, bytes) else payload.encode()))

    page.on("websocket", on_socket)
    tables = {}
    for n, t in enumerate(("t01", "t02")):  # each table publishes under its own user, as the ACL wants
        a = derive(demo_floor.analytics["t01"], table=t, scale=1 + n, z=-3.5 if n else 0.5, pit="pit 1")
        s = state_of(demo_floor.states["t01"], table=t, pit="pit 1")
        tables[t] = (s, a)
        c = paho.Client(CallbackAPIVersion.VERSION2, client_id=t)
        c.username_pw_set(t, pit.password(t))
        c.connect("127.0.0.1", pit.port)
        c.loop_start()
        try:
            for kind, body in (("status", "online"), ("state", json.dumps(s)), ("analytics", json.dumps(a)),
                               ("ratings/open", json.dumps([{"rating_id": "r1", "spot": 3, "player": "6001234567"}]))):
                c.publish(f"tables/{t}/{kind}", body, qos=1, retain=True).wait_for_publish(timeout=10)
        finally:
            c.loop_stop()
            c.disconnect()
    with dashboard_for(f"ws://127.0.0.1:{pit.ws_port}", "tables") as dash:
        page.goto(dash.url + "#floor")
        expect(page.locator("#login")).to_be_visible(timeout=10_000)  # the broker refuses anonymous clients
        page.locator("#login-user").fill("dashboard")
        page.locator("#login-password").fill(pit.password("dashboard"))
        page.locator("#login-submit").click()
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=10_000)
        expect(page.locator("#user")).to_contain_text("dashboard (read-only)")
        expect_floor(page, tables)
        page.locator('#floor tr[data-table="t02"] a.floor-id').click()  # the table view subscribes to its history
        expect(page.locator("#table")).to_have_attribute("data-table", "t02")
        expect(page.locator("#alarms button[data-ack]")).to_have_count(0)
        page.locator("#nav-floor").click()
        expect_floor(page, tables)
        assert "6001234567" not in page.content()
    filters = subscribed(frames)
    assert {"tables/+/state", "tables/+/analytics"} <= set(filters), filters
    asked = [f for f in filters for topic in ("tables/t01/ratings", "tables/t01/ratings/open") if matches(f, topic)]
    assert not asked, f"the page subscribed to ratings: {asked}"
