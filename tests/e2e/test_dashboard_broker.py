"""The dashboard takes its broker from the server's configuration only (issue #33, "from the address bar").

A link ``?broker=ws://elsewhere`` once sent a pit user's login to another broker. Now the page connects only to a
broker the server offers (``config.json``); ``?broker=`` may pick one of those, anything else is ignored with a
note on the page, and the Content-Security-Policy's ``connect-src`` names exactly those brokers. Headless Chromium,
a real Mosquitto, and a listener on the other port that counts who connects to it.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from controller.dashboard.server import serve_dashboard
from tests.mqtt_broker import Mosquitto

pytestmark = pytest.mark.timeout(60)


class Listener:
    """A TCP listener on 127.0.0.1 that counts the connections it accepts (and closes them)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"ws://127.0.0.1:{self.port}"
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def elsewhere() -> Iterator[Listener]:
    listener = Listener()
    try:
        yield listener
    finally:
        listener.close()


def _csp(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return str(r.headers["Content-Security-Policy"])


def _expected_csp(*brokers: str) -> str:
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self' {' '.join(brokers)}; worker-src 'self' blob:; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'")


def test_a_broker_in_the_address_bar_that_the_server_does_not_offer_is_ignored(
    page: Page, mosquitto: Mosquitto, elsewhere: Listener
) -> None:
    dash = serve_dashboard(0, mosquitto.ws_url, "tables")
    try:
        base = dash.url.split("?")[0]
        assert _csp(base) == _expected_csp(mosquitto.ws_url)
        page.goto(f"{base}?broker={quote(elsewhere.url, safe='')}&prefix=tables")
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")  # to the server's broker
        expect(page.locator("#prefix")).to_contain_text(f"?broker={elsewhere.url} ignored")
        expect(page.locator("#prefix")).to_contain_text(f"on {mosquitto.ws_url}")
        time.sleep(1.0)  # a connection to elsewhere would have come by now
        assert elsewhere.accepted == 0, "the page connected to a broker the server does not offer"
    finally:
        dash.stop()


def test_the_address_bar_may_pick_one_of_the_brokers_the_server_offers(
    page: Page, mosquitto: Mosquitto, elsewhere: Listener
) -> None:
    offered = f"{elsewhere.url},{mosquitto.ws_url}"  # a cluster's nodes: the page would try the first one first
    dash = serve_dashboard(0, offered, "tables")
    try:
        base = dash.url.split("?")[0]
        assert _csp(base) == _expected_csp(elsewhere.url, mosquitto.ws_url)
        page.goto(f"{base}?broker={quote(mosquitto.ws_url, safe='')}&prefix=tables")
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        expect(page.locator("#prefix")).not_to_contain_text("ignored")
        time.sleep(1.0)
        assert elsewhere.accepted == 0, "the one picked, and only it"
    finally:
        dash.stop()


def test_the_printed_address_connects_to_the_servers_broker(page: Page, mosquitto: Mosquitto) -> None:
    dash = serve_dashboard(0, mosquitto.ws_url, "tables")
    try:
        page.goto(dash.url)  # carries ?broker= the server's own
        expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
        expect(page.locator("#prefix")).not_to_contain_text("ignored")
    finally:
        dash.stop()
