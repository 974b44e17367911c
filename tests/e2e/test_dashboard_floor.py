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

import json
import math
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from playwright.sync_api import Page, WebSocket, expect

from tests.e2e.floor_page import (
    Json,
    Retained,
    dashboard_for,
    derive,
    expect_floor,
    expect_totals,
    floor_order,
    natural,
    open_floor,
    pct,
    pit_of,
    state_of,
    two_hundred,
    z_text,
    zone,
)
from tests.e2e.harness import ROOT, BrokerWatch, Tablectl, money_text, tablectl_command
from tests.mqtt.pit_broker import Broker
from tests.mqtt_broker import Mosquitto
from tests.recorder.helpers import recorded_seq, recorder_process, stop_process

# one worker runs them all (make test: --dist loadgroup), so the module's demo runs once
pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("floor-page")]

DEMO_PREFIX, DEMO_TABLES, DEMO_ROUNDS = "floordemo", ("t01", "t02", "t03"), 15

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
            expect(page.locator("#nav-floor")).to_have_attribute("aria-current", "page")
            expect(page.locator("#nav-pit")).not_to_have_attribute("aria-current", "page")
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


def row_as_page_shows(table: str, a: Json) -> Json:
    """What :data:`READ_FLOOR` reads of ``table``'s row for its ``analytics`` ``a``."""
    z = a["win_z"]
    few = z is None and 0 < a["rounds"] < a.get("min_rounds", 0)  # too few rounds for a z (issue 38)
    return {"table": table, "zone": zone(z), "rounds": str(a["rounds"]), "handle": money_text(a["handle"]),
            "win": money_text(a["house_net"], signed=True), "hold": "–" if a["hold"] is None else pct(a["hold"]),
            "z": "too few rounds" if few else "–" if z is None else z_text(z), "out": int(zone(z) == "out")}


def floor_as_page_shows(tables: dict[str, tuple[Json, Json]]) -> list[Json]:
    """What :data:`READ_FLOOR` must read for ``tables``, pits in the page's order."""
    pits: dict[str | None, dict[str, Json | None]] = {}
    for t, (s, a) in tables.items():
        pits.setdefault(pit_of(s, a), {})[t] = a
    order = [*sorted((p for p in pits if p is not None), key=natural), *([None] if None in pits else [])]
    want = []
    for p in order:
        rows = [row_as_page_shows(t, tables[t][1]) for t in floor_order(pits[p])]
        want.append({"pit": p or "", "rows": rows})
    return want


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

            # then the tables play: 5 live states each (1,000 messages), which change no figure of the floor page,
            # so no row is rebuilt
            page.evaluate("() => document.querySelectorAll('#floor tbody tr')"
                          ".forEach((r) => { r.firstChild.__kept = true; })")
            started = time.monotonic()
            for k in range(1, 6):
                for t, (st, _) in later.items():
                    live = {**st, "seq": st["seq"] + k, "phase": "players" if k % 2 else "dealer"}
                    pub.client.publish(f"{prefix}/{t}/state", json.dumps(live), qos=1)
            last = later["t200"][0]["seq"] + 5
            page.wait_for_function("(seq) => window.pitDashboard.pit.tables.get('t200').state.seq === seq", arg=last,
                                   timeout=60_000, polling=200)
            states_s = time.monotonic() - started
            in_states = page.evaluate("() => window.__floorRenders.splice(0)")
            rebuilt = page.evaluate("() => [...document.querySelectorAll('#floor tbody tr')]"
                                    ".filter((r) => !r.firstChild.__kept).length")
            assert rebuilt == 0
            assert page.evaluate(READ_FLOOR) == want

            # and their events (1,000: nothing the floor page shows) draw it no more than its clock does, once a
            # second
            started = time.monotonic()
            for k in range(1, 6):
                for t, (st, _) in later.items():
                    event = {"seq": st["seq"] + 5 + k, "ts": time.time(), "type": "card", "card": "TD"}
                    pub.client.publish(f"{prefix}/{t}/events", json.dumps(event), qos=1)
            page.wait_for_function("(seq) => window.pitDashboard.pit.tables.get('t200').lastEventSeq === seq",
                                   arg=later["t200"][0]["seq"] + 10, timeout=60_000, polling=200)
            events_s = time.monotonic() - started
            in_events = len(page.evaluate("() => window.__floorRenders.splice(0)"))
            assert in_events <= math.floor(events_s) + 2, (in_events, events_s)
    finally:
        pub.clear(list(tables))
        pub.close()
    assert at_load and in_burst and in_states, "the page measured no draw of the floor"
    print(f"\n200 tables: all shown {shown_s * 1000:.0f} ms after the page was opened; "
          f"{len(at_load)} draws while loading, max {max(at_load):.1f} ms, median {statistics.median(at_load):.2f} ms")
    print(f"200 live analytics in a burst: all shown in {burst_s * 1000:.0f} ms, {len(in_burst)} draws, "
          f"max {max(in_burst):.1f} ms, median {statistics.median(in_burst):.2f} ms")
    print(f"1,000 live states: all received in {states_s * 1000:.0f} ms, {len(in_states)} draws, "
          f"max {max(in_states):.1f} ms, median {statistics.median(in_states):.2f} ms, no row rebuilt")
    print(f"1,000 live events: all received in {events_s * 1000:.0f} ms, {in_events} draws (the page's clock)")


def test_a_real_demo_shows_its_tables_figures_on_the_floor_page(
    page: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor
) -> None:
    tables = {t: (demo_floor.states[t], demo_floor.analytics[t]) for t in DEMO_TABLES}
    with dashboard_for(mosquitto_session.ws_url, DEMO_PREFIX) as dash:
        open_floor(page, dash.url)
        expect_floor(page, tables)
        for t in DEMO_TABLES:  # the demo has stopped: its tables closed, offline
            expect(page.locator(f'#floor tr[data-table="{t}"] [data-field="status"]')).to_have_text("OFFLINE")


def test_a_playing_demo_s_tables_follow_live_on_the_floor_page(
    page: Page, mosquitto_session: Mosquitto, tmp_path: Path
) -> None:
    """While a real demo plays, every row the page draws is one of the ``analytics`` its table published (a
    separate subscriber keeps them all), and once it has stopped the page shows each table's last."""
    prefix, tables = "floorlive", ("t01", "t02", "t03")
    published: dict[str, list[Json]] = {t: [] for t in tables}
    lock = threading.Lock()

    def on_message(_c: paho.Client, _u: object, msg: paho.MQTTMessage) -> None:
        table = msg.topic.split("/")[1]
        if msg.payload and table in published:
            with lock:
                published[table].append(json.loads(msg.payload))

    sub = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"floor-live-{time.monotonic_ns()}")
    sub.on_message = on_message
    sub.connect(mosquitto_session.host, mosquitto_session.port)
    sub.subscribe(f"{prefix}/+/analytics", qos=1)
    sub.loop_start()
    demo = Tablectl("demo", "--tables", str(len(tables)), "--rounds", "12", "--speed", "fast", "--seed", "9",
                    "--broker", mosquitto_session.url, "--prefix", prefix, "--state-dir", str(tmp_path / "state"),
                    "--quiet", "--no-dashboard")
    try:
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            open_floor(page, dash.url)
            checked = 0
            while True:
                running = demo.proc.poll() is None
                for section in page.evaluate(READ_FLOOR):
                    for row in section["rows"]:
                        if row["rounds"] == "–":
                            continue  # no analytics from that table yet
                        deadline = time.monotonic() + 10  # the page may have it before this subscriber
                        while True:
                            with lock:
                                candidates = [row_as_page_shows(row["table"], a) for a in published[row["table"]]]
                            if row in candidates:
                                break
                            assert time.monotonic() < deadline, (row, candidates[-3:])
                            time.sleep(0.05)
                        checked += 1
                if not running:
                    break
                page.wait_for_timeout(250)  # the next look at the page (the page is never waited on for a figure)
            assert demo.wait() == 0, demo.output()
            with lock:
                last = {t: published[t][-1] for t in tables}
            assert all(a["rounds"] == 12 for a in last.values()), last
            page.wait_for_function("(want) => JSON.stringify((" + READ_FLOOR + ")().flatMap((s) => s.rows)"
                                   ".sort((a, b) => a.table.localeCompare(b.table))) === want",
                                   arg=json.dumps([row_as_page_shows(t, last[t]) for t in tables], ensure_ascii=False,
                                                  separators=(",", ":")), timeout=20_000, polling=200)
        assert checked >= 10, f"only {checked} rows drawn while the demo played"
        print(f"\nplaying demo: {checked} rows compared with the analytics their tables published")
    finally:
        demo.close()
        sub.loop_stop()
        sub.disconnect()


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


def test_the_floor_stays_visible_greyed_when_the_page_loses_its_broker(
    page: Page, mosquitto: Mosquitto, demo_floor: DemoFloor
) -> None:
    """The last known figures stay, every row marked STALE (the broker is gone, so nothing on the page is live)."""
    tables = {}
    pub = Retained(mosquitto, "tables")
    try:
        for n, t in enumerate(("t01", "t02")):
            a = derive(demo_floor.analytics["t01"], table=t, scale=1 + n, z=3.3 if n else -0.4, pit="pit 1")
            s = state_of(demo_floor.states["t01"], table=t, pit="pit 1")
            tables[t] = (s, a)
            pub.table(t, state=s, analytics=a)
    finally:
        pub.close()
    with dashboard_for(mosquitto.ws_url, "tables") as dash:
        open_floor(page, dash.url)
        expect_floor(page, tables)
        for t in tables:
            expect(page.locator(f'#floor tr[data-table="{t}"] [data-field="status"]')).to_have_text("ONLINE")
        mosquitto.stop()
        expect(page.locator("#conn")).not_to_have_attribute("data-state", "connected", timeout=15_000)
        for t in tables:
            row = page.locator(f'#floor tr[data-table="{t}"]')
            expect(row.locator('[data-field="status"]')).to_have_text("STALE")
            expect(row).to_have_class("is-out is-stale" if t == "t02" else "is-stale")
        expect_floor(page, tables)  # the figures are the last known ones


def test_the_floor_page_benchmark_shows_a_floor_and_refuses_bad_input_in_one_line(
    mosquitto_session: Mosquitto, demo_floor: DemoFloor, tmp_path: Path
) -> None:
    """``benchmarks/floor_page.py`` (how the 200-table floor's page is measured) on the demo's three tables."""
    script = [sys.executable, str(ROOT / "benchmarks" / "floor_page.py")]
    done = subprocess.run([*script, "--tables", "3", "--broker-ws", mosquitto_session.ws_url, "--prefix", DEMO_PREFIX,
                           "--seconds", "0", "--screenshot", str(tmp_path / "floor.png")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "floor page: 3 tables shown" in done.stdout, done.stdout
    assert (tmp_path / "floor.png").stat().st_size > 0
    short = subprocess.run([*script, "--tables", "4", "--broker-ws", mosquitto_session.ws_url, "--prefix", DEMO_PREFIX,
                            "--seconds", "0", "--timeout", "3"], capture_output=True, text=True, timeout=120)
    assert short.returncode == 1, short.stderr
    assert short.stderr.startswith("floor_page.py: 3 of 4 tables shown with their analytics"), short.stderr
    bad = tmp_path / "credentials.toml"
    bad.write_text('[broker]\nwebsockets = "ws://127.0.0.1:1"\n[users.dashboard]\nrole = "dashboard"\n')
    for args, says in ((["--credentials", str(bad)], "no password for user 'dashboard'"),
                       (["--credentials", str(tmp_path / "none.toml")], "unreadable"),
                       (["--broker-ws", "http://x"], "floor_page.py: "),
                       (["--tables", "0", "--broker-ws", mosquitto_session.ws_url], "--tables 0")):
        run = subprocess.run([*script, *(["--tables", "3"] if "--tables" not in args else []), *args],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 2 and says in run.stderr and len(run.stderr.splitlines()) == 1, (args, run.stderr)


def test_the_recorders_topics_are_not_a_table(page: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor) -> None:
    """The central recorder publishes under ``<prefix>/recorder/`` (its alarms on ``.../recorder/alarms``, which the
    page's ``<prefix>/+/alarms`` matches, and each table's position): neither the floor nor the pit lists a table
    "recorder" (seen on a ``tablectl demo --cluster 3`` before the fix: a fifth, stale table on a four-table floor)."""
    prefix = "floorrec"
    a = derive(demo_floor.analytics["t01"], table="t01", scale=1.0, z=0.3, pit="pit 1")
    s = state_of(demo_floor.states["t01"], table="t01", pit="pit 1")
    pub = Retained(mosquitto_session, prefix)
    try:
        pub.table("t01", state=s, analytics=a)
        alarm = {"table_id": "t01", "code": "recorder_gap", "from_seq": 5, "to_seq": 9, "message": "gap", "ts": 1.0}
        position = {"table_id": "t01", "seq": s["seq"], "journal_id": "0" * 32, "head_seq": None, "head": None,
                    "ts": 1.0}
        for topic, body in ((f"{prefix}/recorder/alarms", [alarm]), (f"{prefix}/recorder/t01", position)):
            pub.client.publish(topic, json.dumps(body), qos=1, retain=True).wait_for_publish(timeout=10)
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            open_floor(page, dash.url)
            expect_floor(page, {"t01": (s, a)})
            page.locator("#nav-pit").click()
            expect(page.locator(".tile")).to_have_count(1)
            expect(page.locator('.tile[data-table="recorder"]')).to_have_count(0)
    finally:
        for topic in (f"{prefix}/recorder/alarms", f"{prefix}/recorder/t01"):
            pub.client.publish(topic, b"", qos=1, retain=True).wait_for_publish(timeout=10)
        pub.clear(["t01"])
        pub.close()


def _gap_event(seq: int) -> str:
    return json.dumps({"seq": seq, "ts": 1795334400.0 + seq, "type": "tick"})


def test_a_real_recorders_gap_is_a_band_on_the_floor_page_until_it_fills(
        page: Page, mosquitto_session: Mosquitto, demo_floor: DemoFloor, tmp_path: Path) -> None:
    """A real ``tablectl recorder`` on a real Mosquitto: before it runs the floor totals say "no recorder seen";
    once it runs, "no alarms"; a table's events 1, 2, 4, 5 (3 missing) make its ``recorder_gap`` alarm, which the
    page shows as a band at the top naming the table (a link to it) and seq 3, and "1 alarm" in the totals; seq 3
    sent, the gap fills and the band goes, the totals saying "no alarms"; a second body at seq 4 is a conflict in
    the band."""
    prefix, table = "floorgap", "t07"
    a = derive(demo_floor.analytics["t01"], table=table, scale=1.0, z=0.3, pit="pit 1")
    s = state_of(demo_floor.states["t01"], table=table, pit="pit 1")
    pub = Retained(mosquitto_session, prefix)
    recorder = None
    try:
        pub.table(table, state=s, analytics=a)
        with dashboard_for(mosquitto_session.ws_url, prefix) as dash:
            open_floor(page, dash.url)
            expect_floor(page, {table: (s, a)})
            band, totals = page.locator("#floor-recorder"), page.locator("#floor-totals")
            status = totals.locator('[data-field="recorder-status"]')
            expect(status).to_have_text("no recorder seen")
            expect(page.locator("#floor")).to_have_attribute("data-recorder", "unseen")
            expect(band).to_be_hidden()

            recorder = recorder_process(mosquitto_session.url, tmp_path / "recorder.db", tmp_path / "recorder.log",
                                        extra=["--prefix", prefix, "--username", "recorder-floorpage"])
            expect(status).to_have_text("no alarms", timeout=30_000)  # its alarms list, published on connect
            for seq in (1, 2, 4, 5):
                pub.client.publish(f"{prefix}/{table}/events", _gap_event(seq), qos=1).wait_for_publish(timeout=10)
            gap = band.locator(f'li[data-table="{table}"][data-code="recorder_gap"]')
            expect(gap).to_have_count(1, timeout=30_000)
            expect(band).to_be_visible()
            expect(band.locator("li")).to_have_count(1)
            expect(gap).to_have_attribute("data-from", "3")
            expect(gap).to_have_attribute("data-to", "3")
            expect(gap.locator('[data-field="seqs"]')).to_have_text("seq 3")
            expect(gap.locator('[data-field="message"]')).to_contain_text(f"{table}: seq 3 missing")
            expect(gap.locator("a.floor-id")).to_have_attribute("href", f"#/{table}")
            expect(status).to_have_text("1 alarm")
            expect(page.locator("#floor")).to_have_attribute("data-recorder", "alarms")
            # the recorder holds 1 and 2 of the table: its position is on the page too
            expect(totals.locator('[data-field="recorder-held"]')).to_contain_text("1 table recorded")

            pub.client.publish(f"{prefix}/{table}/events", _gap_event(3), qos=1).wait_for_publish(timeout=10)
            expect(band).to_be_hidden(timeout=30_000)
            expect(band.locator("li")).to_have_count(0)
            expect(status).to_have_text("no alarms")
            expect(page.locator("#floor")).to_have_attribute("data-recorder", "ok")
            assert recorded_seq(tmp_path / "recorder.db", table) == 5

            # another body at a seq the recorder holds: a conflict, in the band until the recorder restarts
            forged = json.dumps({"seq": 4, "ts": 1795334404.0, "type": "tick", "forged": True})
            pub.client.publish(f"{prefix}/{table}/events", forged, qos=1).wait_for_publish(timeout=10)
            conflict = band.locator(f'li[data-table="{table}"][data-code="recorder_conflict"]')
            expect(conflict).to_have_count(1, timeout=30_000)
            expect(conflict.locator('[data-field="code"]')).to_have_text("conflict")
            expect(conflict.locator('[data-field="seqs"]')).to_have_text("seq 4")
            expect(status).to_have_text("1 alarm")
    finally:
        if recorder is not None:
            assert stop_process(recorder) == 0, (tmp_path / "recorder.log").read_text()
        for topic in (f"{prefix}/recorder/alarms", f"{prefix}/recorder/{table}"):
            pub.client.publish(topic, b"", qos=1, retain=True).wait_for_publish(timeout=10)
        pub.clear([table])
        pub.close()
