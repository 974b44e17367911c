"""The dashboard's floor page against a running floor, in headless Chromium: how long it takes to show every
table, and what its draws cost while the floor plays.

    .venv/bin/python benchmarks/floor_page.py --tables 200 --credentials DIR/credentials.toml [--user dashboard]
    .venv/bin/python benchmarks/floor_page.py --tables 200 --broker-ws URL[,URL...] [--prefix tables]
        [--seconds 30] [--timeout 120] [--screenshot floor.png]

It serves the page in-process (``serve_dashboard``, as ``tablectl dashboard`` does) for the broker's WebSocket
addresses (comma-separated for a cluster: the page moves between them), opens ``#floor`` in Debian's Chromium
and logs in when the broker asks (the user's password read from ``credentials.toml``, the file
``tablectl broker-config`` and ``tablectl demo --cluster N`` write, whose ``[broker]`` also gives the WebSocket
addresses and the prefix; never printed). It waits until the page lists ``--tables`` tables, each with its
analytics, then watches the page for ``--seconds`` while the floor plays. Printed: the time from opening the page
to every table shown; the page's draws while loading and while watching (the page measures each as User Timing
``floor-render``: count, median, p99, max); the browser's long tasks (over 50 ms: count, total); the MQTT frames
and bytes the page received. Figures are printed, never asserted. Exit 0 when every table was shown, 1 when not
within ``--timeout`` (naming how many were), 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, NoReturn

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from playwright.sync_api import Error as PlaywrightError  # noqa: E402
from playwright.sync_api import WebSocket, sync_playwright  # noqa: E402

from controller.dashboard.server import serve_dashboard  # noqa: E402
from controller.errors import UsageError  # noqa: E402
from tests.e2e.harness import CHROMIUM_ARGS, find_chromium  # noqa: E402

# what the page measures, kept by observers installed before it loads
OBSERVE = """
window.__floorRenders = [];
window.__longTasks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.name === 'floor-render') window.__floorRenders.push(e.duration);
}).observe({ type: 'measure' });
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__longTasks.push(e.duration);
  }).observe({ type: 'longtask' });
} catch (e) { /* no long-task timing in this browser */ }
"""
# every table listed, each with its analytics (a row's zone is set once its win_z is known; under 10 rounds its
# z cell says "too few rounds" instead: docs/analytics.md)
WITH_ANALYTICS = """() => [...document.querySelectorAll('#floor tbody tr')].filter((r) => r.dataset.zone
  || r.querySelector('td[data-field="win-z"]')?.textContent === 'too few rounds').length"""
ALL_SHOWN = f"(n) => ({WITH_ANALYTICS})() >= n"
SHOWN = "() => document.querySelectorAll('#floor tbody tr').length"


class BadInput(Exception):
    """What the command line or the credentials file got wrong (one line)."""


def _one_line(message: str) -> NoReturn:
    print(f"floor_page.py: {message}", file=sys.stderr)
    sys.exit(2)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="floor_page.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.error = _one_line  # type: ignore[method-assign]
    p.add_argument("--tables", type=int, required=True, help="how many tables the floor has")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--credentials", type=Path, help="credentials.toml of tablectl broker-config / demo --cluster")
    where.add_argument("--broker-ws", help="the broker's WebSocket address(es), comma-separated (no login)")
    p.add_argument("--user", default="dashboard", help="the user to log in as, from --credentials (default dashboard)")
    p.add_argument("--prefix", help="topic prefix (default: the credentials' prefix, else tables)")
    p.add_argument("--seconds", type=float, default=30.0, help="how long to watch the floor play (default 30)")
    p.add_argument("--timeout", type=float, default=120.0, help="how long to wait for every table (default 120)")
    p.add_argument("--screenshot", type=Path, help="a PNG of the page once every table is shown")
    a = p.parse_args(argv)
    if a.tables < 1:
        p.error(f"--tables {a.tables}: expected 1 or more")
    if a.seconds < 0 or a.timeout <= 0:
        p.error("--seconds must be 0 or more and --timeout more than 0")
    return a


def _login(a: argparse.Namespace) -> tuple[str, str, str | None, str | None]:
    """(WebSocket addresses, prefix, user, password) from the command line or the credentials file."""
    if a.broker_ws is not None:
        return a.broker_ws, a.prefix or "tables", None, None
    try:
        creds = tomllib.loads(a.credentials.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{a.credentials}: unreadable: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{a.credentials}: not TOML: {exc}") from None
    broker = creds.get("broker", {})
    ws = broker.get("websockets")
    ws_list = [ws] if isinstance(ws, str) else ws if isinstance(ws, list) else []
    if not ws_list or not all(isinstance(u, str) for u in ws_list):
        raise BadInput(f"{a.credentials}: no [broker] websockets address")
    user = (creds.get("users") or {}).get(a.user)
    if not isinstance(user, dict) or not isinstance(user.get("password"), str):
        raise BadInput(f"{a.credentials}: no password for user {a.user!r}")
    prefix = a.prefix or broker.get("prefix") or "tables"
    return ",".join(ws_list), str(prefix), a.user, user["password"]


def _stats(durations: list[float]) -> str:
    if not durations:
        return "0 draws"
    ordered = sorted(durations)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return (f"{len(ordered)} draws, median {statistics.median(ordered):.2f} ms, p99 {p99:.1f} ms, "
            f"max {ordered[-1]:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    try:
        urls, prefix, user, password = _login(a)
    except BadInput as exc:
        print(f"floor_page.py: {exc}", file=sys.stderr)
        return 2
    chromium = find_chromium()
    if chromium is None:
        print("floor_page.py: Debian's chromium is not installed (make system)", file=sys.stderr)
        return 2
    try:
        dash = serve_dashboard(0, urls, prefix)
    except UsageError as exc:
        print(f"floor_page.py: {exc}", file=sys.stderr)
        return 2
    frames = {"n": 0, "bytes": 0}

    def on_socket(ws: WebSocket) -> None:
        def received(payload: Any) -> None:
            frames["n"] += 1
            frames["bytes"] += len(payload)

        ws.on("framereceived", received)

    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.add_init_script(OBSERVE)
                page.on("websocket", on_socket)
                started = time.monotonic()
                page.goto(dash.url + "#floor")
                if user is not None and password is not None:
                    page.locator("#login").wait_for(state="visible", timeout=30_000)
                    page.locator("#login-user").fill(user)
                    page.locator("#login-password").fill(password)
                    page.locator("#login-submit").click()
                try:
                    page.wait_for_function(ALL_SHOWN, arg=a.tables, timeout=a.timeout * 1000, polling=250)
                except PlaywrightError:
                    shown, judged = page.evaluate(SHOWN), page.evaluate(WITH_ANALYTICS)
                    print(f"floor_page.py: {judged} of {a.tables} tables shown with their analytics after "
                          f"{a.timeout:.0f} s ({shown} listed; connection: {page.locator('#conn').text_content()})",
                          file=sys.stderr)
                    return 1
                shown_s = time.monotonic() - started
                loading = page.evaluate("() => window.__floorRenders.splice(0)")
                long_loading = page.evaluate("() => window.__longTasks.splice(0)")
                got = {"n": frames["n"], "bytes": frames["bytes"]}
                out = page.evaluate("() => document.querySelector('#floor').dataset.out")
                print(f"floor page: {page.evaluate(SHOWN)} tables shown {shown_s:.2f} s after it was opened "
                      f"({out} outside their control limits; {got['n']} MQTT frames, {got['bytes'] / 1e6:.1f} MB)")
                print(f"  while loading: {_stats(loading)}; long tasks {len(long_loading)}, "
                      f"{sum(long_loading):.0f} ms")
                if a.screenshot is not None:
                    page.screenshot(path=str(a.screenshot))
                    print(f"  screenshot: {a.screenshot}")
                if a.seconds > 0:
                    page.wait_for_timeout(a.seconds * 1000)
                    watching = page.evaluate("() => window.__floorRenders.splice(0)")
                    long_watching = page.evaluate("() => window.__longTasks.splice(0)")
                    n, b = frames["n"] - got["n"], frames["bytes"] - got["bytes"]
                    print(f"  watching {a.seconds:.0f} s: {n / a.seconds:.0f} MQTT frames/s "
                          f"({b / a.seconds / 1e3:.0f} kB/s); {_stats(watching)}; long tasks {len(long_watching)}, "
                          f"{sum(long_watching):.0f} ms ({sum(long_watching) / (a.seconds * 10):.1f} % of the time)")
            finally:
                browser.close()
    finally:
        dash.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
