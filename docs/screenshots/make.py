"""Take the dashboard screenshots in this folder: ``.venv/bin/python docs/screenshots/make.py``.

Starts a private Mosquitto (TCP and WebSockets on free loopback ports), the browser tests' stand-in
table service (``tests/e2e/publisher.py``) for tables t01-t03 and another for t04 (then killed, so
its last will marks it offline), serves the dashboard, and photographs it in Debian's headless
Chromium: ``overview.png`` (the pit), ``table.png`` (t01 mid-round, the hole card face down, the
last round settled) and ``table-t02.png`` (a split, insurance, an alarm to acknowledge).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from controller.cli.dashboard import serve_dashboard  # noqa: E402
from tests.e2e.harness import CHROMIUM_ARGS, Publisher, find_chromium  # noqa: E402
from tests.mqtt_broker import Mosquitto  # noqa: E402

OUT = Path(__file__).resolve().parent


def main() -> int:
    chromium = find_chromium()
    if chromium is None:
        print("make.py: Debian's chromium is not installed (make system)", file=sys.stderr)
        return 1
    with Mosquitto() as broker:
        pub = Publisher(broker, tables="t01,t02,t03")
        gone = Publisher(broker, tables="t04")
        dash = serve_dashboard(0, broker.ws_url, "tables")
        try:
            gone.kill()
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 860})
                page.goto(dash.url + "#/t01")
                expect(page.locator("#table")).to_have_attribute("data-seq", "1040")
                for _ in range(10):  # round 57 played and settled, round 58 dealt: hole card down
                    seq = pub.step().split()[3]
                    expect(page.locator("#table")).to_have_attribute("data-seq", seq)
                expect(page.locator("#dealer .card.back")).to_have_count(1)
                expect(page.locator("#last-round .last-round")).to_have_attribute("data-round", "57")
                page.screenshot(path=str(OUT / "table.png"), full_page=True)
                page.goto(dash.url + "#/t02")
                expect(page.locator("#alarms button.ack")).to_have_count(1)
                page.screenshot(path=str(OUT / "table-t02.png"), full_page=True)
                page.goto(dash.url)
                expect(page.locator(".tile")).to_have_count(4)
                expect(page.locator('.tile[data-table="t04"]')).to_have_attribute("data-status", "offline")
                page.select_option("#sort", "attention")
                page.screenshot(path=str(OUT / "overview.png"))
                browser.close()
        finally:
            dash.stop()
            pub.close()
            gone.close()
    print(f"wrote {', '.join(p.name for p in sorted(OUT.glob('*.png')))} in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
