"""``tablectl report``: a shift's hold against theoretical and pace, checked against the journal itself."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.game import events as ev
from controller.game.money import parse_money
from controller.journal import Journal
from controller.profiles import load_rules
from controller.service.core import TableCore
from tests.mqtt_broker import Mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory, mosquitto_session: Mosquitto) -> tuple[Path, str]:
    """A house-h17 demo table that played 40 rounds: its journal and the demo's totals line."""
    state = tmp_path_factory.mktemp("report") / "state"
    done = _tablectl("demo", "--tables", "1", "--rounds", "40", "--seed", "9", "--speed", "max", "--broker",
                     mosquitto_session.url, "--state-dir", str(state), "--no-dashboard", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    [totals] = [line for line in done.stdout.splitlines() if line.startswith("t01:")]
    return state / "t01.journal", totals


def _report(journal: Path, *args: str) -> dict[str, Any]:
    done = _tablectl("report", str(journal), "--json", *args)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_the_figures_agree_with_the_journal_to_the_cent(played: tuple[Path, str]) -> None:
    journal, totals = played
    report = _report(journal)
    assert report["profile"] == "house-h17" and report["rounds"] == 40
    # handle and actual win: what the demo printed from the engine's totals
    assert f"handle {parse_money(report['handle']) / 100:.2f}" in totals
    assert f"house_net {parse_money(report['house_net']) / 100:.2f}" in totals
    # initial wagers: the wagers on the spots before each deal, as recall rebuilds every round
    rounds = json.loads(_tablectl("recall", str(journal), "--last", "40", "--json").stdout)
    wagers = [parse_money(w) for r in rounds for w in r["wagers"].values() if parse_money(w) > 0]
    assert parse_money(report["initial_wagers"]) == sum(wagers) and report["hands"] == len(wagers)
    # theoretical win: initial wagers x the edge `tablectl edge` prints, to the cent
    edge = json.loads(_tablectl("edge", "--profile", "house-h17", "--json").stdout)["house_edge"]
    assert report["theoretical_edge"] == pytest.approx(edge, abs=1e-6)
    assert parse_money(report["theoretical_win"]) == round(sum(wagers) * report["theoretical_edge"])
    # how far actual lies from theoretical, in standard deviations of what these rounds do: each hand's variance
    # and the covariance of each two hands of a round (they play against the same dealer hand)
    by_round = [[parse_money(w) for w in r["wagers"].values() if parse_money(w) > 0] for r in rounds]
    variance = sum(report["sigma"] ** 2 * sum(w * w for w in ws)
                   + report["covariance"] * sum(a * b for i, a in enumerate(ws) for j, b in enumerate(ws) if i != j)
                   for ws in by_round)
    expected_z = (parse_money(report["house_net"]) - parse_money(report["theoretical_win"])) / math.sqrt(variance)
    assert report["win_z"] == pytest.approx(expected_z, rel=1e-4)
    assert parse_money(report["win_sd"]) == round(math.sqrt(variance))
    assert 1.0 < report["sigma"] < 1.3 and "bench run of house-h17" in report["sigma_source"]
    assert 0.4 < report["covariance"] < 0.6 and "covariance" in report["sigma_source"]
    assert report["hold"] == pytest.approx(parse_money(report["house_net"]) / parse_money(report["handle"]), abs=1e-6)
    assert report["rounds_per_hour"] > 0 and report["mean_round_s"] > 0


def test_a_shift_keeps_the_rounds_started_within_and_counts_from_the_round_before(played: tuple[Path, str]) -> None:
    journal, _ = played
    rounds = json.loads(_tablectl("recall", str(journal), "--last", "40", "--json").stdout)
    cut = rounds[25]["started_at"].rstrip("Z")
    later = _report(journal, "--since", cut)
    earlier = _report(journal, "--until", cut)
    whole = _report(journal)
    assert (earlier["rounds"], later["rounds"]) == (25, 15)
    for key in ("handle", "house_net", "initial_wagers"):
        assert parse_money(earlier[key]) + parse_money(later[key]) == parse_money(whole[key]), key


def test_a_shift_of_too_few_rounds_has_no_z_and_says_so(played: tuple[Path, str], tmp_path: Path) -> None:
    """Below the minimum sample (10 rounds) ``win_z`` is null, and the text and HTML reports say why."""
    journal, _ = played
    rounds = json.loads(_tablectl("recall", str(journal), "--last", "40", "--json").stdout)
    few, enough = rounds[9]["started_at"].rstrip("Z"), rounds[10]["started_at"].rstrip("Z")
    assert _report(journal, "--until", few)["win_z"] is None and _report(journal, "--until", few)["rounds"] == 9
    assert _report(journal, "--until", enough)["win_z"] is not None
    text = _tablectl("report", str(journal), "--until", few).stdout
    assert "win_z: too few rounds (fewer than 10)" in text
    page = tmp_path / "few.html"
    assert _tablectl("report", str(journal), "--until", few, "--html", str(page)).returncode == 0
    assert "<th>win_z</th><td>too few rounds</td>" in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(("args", "says"), [
    (["--since", "yesterday"], "--since 'yesterday': not an ISO 8601 time"),
    (["--since", "2026-11-24T06:00", "--until", "2026-11-24T05:00"], "is not after --since"),
    (["--profile", "atlantis"], "unknown profile 'atlantis'"),
])
def test_bad_input_exits_2_with_one_line(played: tuple[Path, str], args: list[str], says: str) -> None:
    done = _tablectl("report", str(played[0]), *args)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr


def test_a_journal_that_does_not_record_its_rules_asks_for_a_profile(tmp_path: Path) -> None:
    """A journal of before the rules were bound (its core journaled no rules_changed)."""
    path = tmp_path / "legacy.journal"
    with Journal(path) as journal:
        TableCore("t01", load_rules("house-h17"), journal).apply(ev.TableOpened(now=1_795_000_000.0))
    done = _tablectl("report", str(path))
    assert done.returncode == 2 and "does not record its rules" in done.stderr and "--profile" in done.stderr
    assert _report(path, "--profile", "house-h17")["rounds"] == 0
    assert _tablectl("report", str(tmp_path / "none.journal")).returncode == 2


def test_a_summary_by_default_and_every_shoe_and_spot_behind_detail(played: tuple[Path, str]) -> None:
    """An hour's journal printed 2,198 lines, a line per shoe and spot: the default is a screenful now (the
    figures, the failed shoes, the flagged spots), whatever the journal's length; ``--detail`` lists them all."""
    journal, _ = played
    summary = _tablectl("report", str(journal))
    detail = _tablectl("report", str(journal), "--detail")
    assert summary.returncode == 0 and detail.returncode == 0, summary.stderr + detail.stderr
    data = _report(journal, "--detail")
    adv = data["advantage"]
    spot_lines = [line for line in summary.stdout.splitlines() if line.startswith("  shoe ") and " spot " in line]
    assert len(spot_lines) == len(adv["flagged"]), summary.stdout
    assert "--detail" in summary.stdout and len(summary.stdout.splitlines()) <= 40, summary.stdout
    shoes = data["shuffle"]["shoes"]
    detail_spots = [line for line in detail.stdout.splitlines() if line.startswith("  shoe ") and " spot " in line]
    detail_shoes = [line for line in detail.stdout.splitlines() if line.startswith("  shoe ") and "score" in line]
    assert len(detail_spots) == adv["spot_shoes"] == len(adv["signals"]) > 0
    assert len(detail_shoes) == len(shoes) > 0
    plain = _report(journal)["advantage"]
    assert "signals" not in plain and plain["flagged"] == adv["flagged"] and plain["spot_shoes"] == adv["spot_shoes"]
