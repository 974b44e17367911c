"""The dashboard's floor page in Chromium on the floor's three-node NATS cluster: given every node's WebSocket
address and logged in as the read-only ``dashboard`` user, it shows the tables that published on other nodes,
grouped by pit, and goes on following them on another node when the node it was on is killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiomqtt
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import browser, chromium_path, page  # noqa: F401 (the e2e fixtures, used here too)
from tests.e2e.floor_page import Json, dashboard_for, derive, expect_floor, expect_row, state_of
from tests.e2e.publisher import initial_analytics, initial_state
from tests.floor.conftest import TABLES, Floor
from tests.floor.helpers import publish, wait_settled

pytestmark = pytest.mark.timeout(300)

PITS = {"t01": "pit 1", "t02": "pit 1", "t03": "pit 2", "t04": None}
ZS = {"t01": 0.6, "t02": -3.4, "t03": 1.8, "t04": -0.5}


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run an MQTT helper beside Playwright's own event loop (the sync API holds one on this thread)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _publish(floor: Floor, node: int, table: str, kind: str, body: Json | str) -> None:
    payload = body if isinstance(body, str) else json.dumps(body)
    _run(publish(floor, node, table, f"tables/{table}/{kind}", payload.encode(), retain=True))


@pytest.fixture
def published(floor: Floor) -> Iterator[dict[str, tuple[Json | None, Json | None]]]:
    """Each table's retained status, state and analytics, published as that table on node 1 or 2 (never node 0,
    the page's first address); cleared again at the end."""
    template = initial_analytics("t01")
    tables: dict[str, tuple[Json | None, Json | None]] = {}
    for n, t in enumerate(TABLES):
        a = derive(template, table=t, scale=1 + n / 2, z=ZS[t], pit=PITS[t])
        s = state_of(initial_state(t), table=t, pit=PITS[t])
        for kind, body in (("status", "online"), ("state", s), ("analytics", a)):
            _publish(floor, 1 + n % 2, t, kind, body)
        tables[t] = (s, a)
    try:
        yield tables
    finally:
        for t in TABLES:
            for kind in ("status", "state", "analytics"):
                with contextlib.suppress(aiomqtt.MqttError):
                    _publish(floor, 1, t, kind, "")


def test_the_floor_page_follows_the_cluster_from_node_to_node(
    page: Page, floor: Floor, published: dict[str, tuple[Json | None, Json | None]]  # noqa: F811
) -> None:
    urls = ",".join(f"ws://{floor.cluster.bind}:{floor.cluster.node(i).ws}/mqtt" for i in range(3))
    with dashboard_for(urls, "tables") as dash:
        page.goto(dash.url + "#floor")
        expect(page.locator("#login")).to_be_visible(timeout=10_000)  # the cluster refuses anonymous clients
        page.locator("#login-user").fill("dashboard")
        page.locator("#login-password").fill(floor.passwords["dashboard"])
        page.locator("#login-submit").click()
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected", timeout=10_000)
        # NATS may answer the first subscription without the retained messages while it settles: the page
        # shows them as they come, so wait for all four
        expect(page.locator("#floor")).to_have_attribute("data-tables", "4", timeout=30_000)
        expect_floor(page, published)

        floor.cluster.kill(0)  # the first address: the node the page is on
        try:
            deadline = time.monotonic() + 120  # a loaded 2-core machine stretches the cluster's recovery
            s, a0 = published["t03"]
            assert a0 is not None
            z = 3.6
            while True:  # t03 settles rounds (on node 1) until the page, now on another node, shows one
                z += 0.1
                a = derive(initial_analytics("t01"), table="t03", scale=2.0, z=z, pit="pit 2")
                with contextlib.suppress(aiomqtt.MqttError):  # refused while JetStream elects: the next one goes
                    _publish(floor, 1, "t03", "analytics", a)
                try:
                    expect(page.locator('#floor tr[data-table="t03"]')).to_have_attribute("data-zone", "out",
                                                                                          timeout=2_000)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
            # then one more, sent until the page shows it: NATS acknowledges a publish it may still drop while
            # it recovers, so the last one sent is not always the last one delivered
            final = derive(initial_analytics("t01"), table="t03", scale=2.5, z=4.2, pit="pit 2")
            published["t03"] = (s, final)
            while True:
                with contextlib.suppress(aiomqtt.MqttError):
                    _publish(floor, 1, "t03", "analytics", final)
                try:
                    expect(page.locator('#floor tr[data-table="t03"] td[data-field="win-z"]')).to_have_text(
                        "+4.20 SD", timeout=2_000)
                    break
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise
            expect_row(page, "t03", final, "pit 2")
            expect(page.locator("#floor-out li").first).to_have_attribute("data-table", "t03")
            expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        finally:
            floor.revive()
            _run(wait_settled(floor, (0, 1, 2)))
