"""Fixtures for the dashboard's browser tests: Chromium, the test publisher, the served page.

Chromium is Debian's (``/usr/bin/chromium``, or ``$CHROMIUM``), driven by Playwright; no browser
is ever downloaded. The tests skip, saying why, only when that executable is absent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from controller.dashboard.server import Dashboard, serve_dashboard
from tests.e2e.harness import CHROMIUM_ARGS, BrokerWatch, Publisher, find_chromium
from tests.mqtt_broker import Mosquitto

WAIT_MS = 5000  # how long a page assertion waits
_BROKER_GONE = ("WebSocket connection", "WebSocket is already in CLOSING or CLOSED state")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("Debian's chromium is not installed (make system, or apt-get install chromium chromium-driver)")
    return path


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page (1400x900); the test fails on any page error or console error, except the
    browser's own WebSocket messages (a connection that fails, a send on a socket the broker is
    closing): that is what losing the broker looks like, not a page bug."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    p.on(
        "console",
        lambda m: errors.append(f"console {m.type}: {m.text}")
        if m.type == "error" and not any(w in m.text for w in _BROKER_GONE)
        else None,
    )
    p.set_default_timeout(WAIT_MS)
    try:
        yield p
    finally:
        context.close()
    assert not errors, errors


@pytest.fixture
def publisher(mosquitto: Mosquitto) -> Iterator[Publisher]:
    pub = Publisher(mosquitto)
    try:
        yield pub
    finally:
        pub.close()


@pytest.fixture
def dashboard(mosquitto: Mosquitto) -> Iterator[Dashboard]:
    dash = serve_dashboard(0, mosquitto.ws_url, "tables")
    try:
        yield dash
    finally:
        dash.stop()


@pytest.fixture
def watch(mosquitto: Mosquitto) -> Iterator[BrokerWatch]:
    w = BrokerWatch(mosquitto)
    try:
        yield w
    finally:
        w.close()
