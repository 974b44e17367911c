"""``tablectl soak``: the seeded chaos soak of a simulated pit, a CI-sized run, and how it reports a failure."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt.mosquitto import find_mosquitto
from controller.profiles import load_rules
from controller.sim import soak_check
from controller.sim.soak import SoakOptions, run_soak

TABLECTL = [sys.executable, "-m", "controller.cli"]


@pytest.fixture(autouse=True)
def _needs_mosquitto() -> None:
    find_mosquitto()  # the soak runs its own; missing it is a failure here, not a skip


def test_a_ci_sized_soak_holds_every_invariant_through_kills_outages_faults_and_commands(tmp_path: Path) -> None:
    """Seed 8's schedule holds two kill -9s and a broker outage in its first steps (same seed, same schedule)."""
    proc = subprocess.run([*TABLECTL, "soak", "--tables", "4", "--rounds", "120", "--seed", "8",
                           "--step-every", "0.7", "--state-dir", str(tmp_path / "soak")],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert "every invariant held" in summary, summary
    counts = {name: int(n) for n, name in re.findall(r"(\d+) (device faults|kills|broker outages|commands)",
                                                    summary)}
    assert counts["kills"] >= 1 and counts["broker outages"] >= 1, summary
    assert counts["device faults"] >= 5 and counts["commands"] >= 5, summary
    assert "Traceback" not in proc.stderr, proc.stderr


async def test_a_broken_invariant_names_the_seed_the_step_and_the_command_that_replays_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checker made to see a card too many (a planted fault in the checker, the pit is real) fails the soak.

    The pit journals with ``--journal-sync NORMAL`` here (the option a long soak takes), so the reproducing
    command must carry it."""
    on_card = soak_check.PitChecker._on_card
    seen = {"cards": 0}

    def planted(self: soak_check.PitChecker, table: str, view: Any, event: dict[str, Any]) -> None:
        seen["cards"] += 1
        if seen["cards"] == 60:
            raise soak_check.InvariantBroken("cards conserved", f"{table} seq {event['seq']}: planted")
        on_card(self, table, view, event)

    monkeypatch.setattr(soak_check.PitChecker, "_on_card", planted)
    out = io.StringIO()
    opts = SoakOptions(rules=load_rules("house-h17"), profile="house-h17", tables=2, rounds=30, seed=4,
                       state_dir=tmp_path / "soak", step_s=0.5, out=out, journal_sync="NORMAL")
    assert await run_soak(opts) == 1
    text = out.getvalue()
    failed = r"FAILED at seed 4, (step \d+ \(\w+ t0\d\)|end): cards conserved: t0\d seq \d+: planted"
    assert re.search(failed, text), text
    assert ("reproduce with: tablectl soak --tables 2 --rounds 30 --seed 4 --profile house-h17 "
            "--journal-sync NORMAL") in text
    assert (tmp_path / "soak" / "journals").is_dir()  # kept for the post-mortem


@pytest.mark.parametrize(("args", "says"), [
    (["--tables", "0", "--rounds", "5", "--seed", "1"], "--tables 0: between 1 and 500"),
    (["--tables", "2", "--rounds", "0", "--seed", "1"], "--rounds 0: one or more"),
    (["--tables", "2", "--rounds", "5", "--seed", "1", "--profile", "nope"], "unknown profile 'nope'"),
    (["--tables", "2", "--rounds", "5", "--seed", "1", "--broker", "ftp://x"], "scheme must be"),
    (["--tables", "2", "--rounds", "5", "--seed", "1", "--bound", "1"], "--bound 1: between 5 and 3600"),
])
def test_bad_soak_arguments_exit_2_with_one_line(args: list[str], says: str) -> None:
    proc = subprocess.run([*TABLECTL, "soak", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], proc.stderr


def test_the_soak_s_broker_ports_lie_below_the_ephemeral_range() -> None:
    """A port any program may be handed (bind to port 0, an outgoing connection) could be taken while the broker
    is stopped for an outage: a 1 x 100,000 soak died so at 35,000 rounds ("Address already in use")."""
    from controller.mqtt.ports import ephemeral_low, stable_port

    low = ephemeral_low()
    ports = {stable_port() for _ in range(20)}
    assert all(1024 <= p < low for p in ports), (sorted(ports), low)
    assert len(ports) > 1, "drawn at random, so two soaks do not collide"


async def test_a_broker_that_cannot_restart_ends_the_soak_with_one_line_naming_the_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.mqtt.mosquitto import Mosquitto

    start = Mosquitto.start
    calls = {"n": 0}

    def start_once(self: Mosquitto) -> None:
        calls["n"] += 1
        if calls["n"] > 1:
            raise RuntimeError(f"mosquitto did not start on {self.port}/{self.ws_port}: Address already in use")
        start(self)

    monkeypatch.setattr(Mosquitto, "start", start_once)
    out = io.StringIO()
    opts = SoakOptions(rules=load_rules("house-h17"), profile="house-h17", tables=1, rounds=400, seed=8,
                       state_dir=tmp_path / "soak", step_s=0.3, out=out)
    assert await run_soak(opts) == 1
    text = out.getvalue()
    assert re.search(r"soak: ERROR at seed 8, step \d+ \(broker_outage t01\): RuntimeError: mosquitto did not start",
                     text), text
    assert "journals and logs kept in" in text
