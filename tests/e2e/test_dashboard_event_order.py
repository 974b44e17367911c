"""The table view's event list when an event comes after later ones, in headless Chromium on a real Mosquitto.

On the floor's NATS cluster losing its quorum, a table's event can reach a subscriber after later ones (the
table resends it once the cluster takes it: docs/floor.md, "Known gaps"). The page marked a gap at the later
event and then dropped the late one as a repeat, so the screen said "1 event not received" of an event it had
received. Now the late event takes its place in the gap; a true repeat is still dropped.
"""

from __future__ import annotations

import json

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from playwright.sync_api import Page, expect

from controller.dashboard.server import Dashboard
from tests.e2e.publisher import initial_state
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(60)


def _event(seq: int, kind: str = "card_dealt") -> bytes:
    return json.dumps({"seq": seq, "ts": 1795900000.0 + seq, "type": kind, "table_id": "t09"}).encode()


def test_an_event_that_comes_after_later_ones_fills_its_gap(page: Page, dashboard: Dashboard,
                                                           mosquitto: Mosquitto) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="event-order-test")
    client.connect(mosquitto.host, mosquitto.port)
    client.loop_start()
    try:
        state = initial_state("t09")
        state["table_id"] = "t09"
        client.publish("tables/t09/status", b"online", qos=1, retain=True).wait_for_publish(10)
        client.publish("tables/t09/state", json.dumps(state).encode(), qos=1, retain=True).wait_for_publish(10)
        page.goto(dashboard.url + "#/t09")
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        expect(page.locator("#table")).to_have_attribute("data-table", "t09")
        events = page.locator("#events li")

        def send(*seqs: int) -> None:
            for seq in seqs:
                client.publish("tables/t09/events", _event(seq), qos=1).wait_for_publish(10)

        send(10, 11, 14, 16)  # 12, 13 and 15 not yet
        expect(page.locator('#events li[data-seq="16"]')).to_have_count(1)
        expect(page.locator("#events li.gap")).to_have_text(["\u2026 1 event not received",
                                                              "\u2026 2 events not received"])
        send(13, 15)  # late: each into its gap
        expect(page.locator('#events li[data-seq="15"]')).to_have_count(1)
        expect(page.locator("#events li.gap")).to_have_text(["\u2026 1 event not received"])
        send(12, 11)  # the last one missing, then a true repeat (dropped)
        expect(page.locator("#events li.gap")).to_have_count(0)
        newest_first = [int(s) for s in events.evaluate_all("els => els.map(e => e.dataset.seq)")]
        assert newest_first == [16, 15, 14, 13, 12, 11, 10]
    finally:
        client.loop_stop()
        client.disconnect()
