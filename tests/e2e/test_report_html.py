"""``tablectl report --html FILE``: the printable report opens in Chromium with its chart and tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.mqtt_broker import Mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory, mosquitto_session: Mosquitto) -> Path:
    """A demo table with a broken shuffler and a counter at spot 2: 60 rounds, three shoes and more."""
    state = tmp_path_factory.mktemp("report") / "state"
    done = subprocess.run([*TABLECTL, "demo", "--rounds", "60", "--seed", "4", "--speed", "max", "--shuffler", "weak",
                           "--counter-spot", "2", "--broker", mosquitto_session.url, "--prefix", "reporthtml",
                           "--state-dir", str(state), "--no-dashboard", "--quiet", "--journal-sync", "NORMAL"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return state / "t01.journal"


def test_the_html_report_shows_the_figures_the_chart_and_the_shoes(journal: Path, tmp_path: Path, page: Page) -> None:
    figures = json.loads(subprocess.run([*TABLECTL, "report", str(journal), "--json"], capture_output=True,
                                        text=True, check=True).stdout)
    out = tmp_path / "shift.html"
    done = subprocess.run([*TABLECTL, "report", str(journal), "--html", str(out)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"report written to {out}", done.stderr
    page.goto(out.as_uri())
    cells = dict(zip(page.locator("#figures th").all_inner_texts(), page.locator("#figures td").all_inner_texts(),
                     strict=True))
    for key in ("rounds", "handle", "house_net", "theoretical_win", "win_z"):
        assert cells[key] == str(figures[key]), key
    assert page.locator("#chart canvas").count() == 1, "uPlot drew the chart"
    assert page.locator("#chart .u-legend").inner_text().count("SD") == 4, "the 2 and 3 SD bands, both sides"
    shoes = figures["shuffle"]["shoes"]
    assert shoes and page.locator("#shuffle tr").count() == 1 + len(shoes)
    assert page.locator("#shuffle").inner_text().count("FAILED") == sum(not s["passed"] for s in shoes) > 0
    flagged = figures["advantage"]["flagged"]
    assert page.locator("#flagged tr").count() == 1 + max(1, len(flagged))


def test_an_unwritable_html_path_exits_2_with_one_line(journal: Path, tmp_path: Path) -> None:
    done = subprocess.run([*TABLECTL, "report", str(journal), "--html", str(tmp_path / "no" / "such" / "x.html")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "cannot write" in done.stderr
