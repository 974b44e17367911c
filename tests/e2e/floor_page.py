"""What the dashboard's floor page (``#floor``) must show, for its browser tests (``test_dashboard_floor.py``, and
``tests/floor/test_floor_page_cluster.py`` on the NATS cluster).

:func:`derive` makes a table's ``analytics`` from a real one (every figure by the formulas of docs/analytics.md),
:class:`Retained` publishes tables' retained messages, :func:`expect_floor` checks the whole page against the
tables' ``state`` and ``analytics``: the floor's totals, the tables outside their control limits first, each pit
with its totals and its rows in order, every row's figures.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion
from playwright.sync_api import Locator, Page, expect

from controller.dashboard.server import Dashboard, serve_dashboard
from controller.game.money import format_money, parse_money
from tests.e2e.harness import BrokerAddress, money_text

Json = dict[str, Any]
#: the control limit of the pit bar and the tiles (controller/web/model.js LIMIT_SD), and the warning limit
LIMIT_SD, WARN_SD = 3, 2
UNASSIGNED = "unassigned"


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

    def __init__(self, broker: BrokerAddress, prefix: str, *, user: str | None = None,
                 password: str | None = None) -> None:
        self.prefix = prefix
        self.client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"floor-test-{prefix}-{time.monotonic_ns()}")
        if user is not None:
            self.client.username_pw_set(user, password)
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


def two_hundred(a0: Json, s0: Json, *, round_: int) -> dict[str, tuple[Json, Json]]:
    """200 tables in pits of 20 ("pit 1" to "pit 9", the last 20 unassigned); t005, t028, ... (one in 23) are outside
    their control limits."""
    tables = {}
    for n in range(1, 201):
        t = f"t{n:03d}"
        pit = None if n > 180 else f"pit {1 + (n - 1) // 20}"
        z = (3.4 + (n % 5) / 10) * (1 if n % 2 else -1) if n % 23 == 5 else ((n * 37 + round_) % 57 - 28) / 10
        scale = 0.5 + (n % 7) * 0.5 + round_ / 100
        tables[t] = (state_of(s0, table=t, pit=pit), derive(a0, table=t, scale=scale, z=z, pit=pit))
    return tables
