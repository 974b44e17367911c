"""``tablectl demo --counter-spot N`` seats a Hi-Lo counter, and ``tablectl report`` flags his spot at shoe end."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.game.money import parse_money
from controller.strategy.counter import ramp_units
from tests.mqtt_broker import Mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]
PREFIX = "counterdemo"  # its own topics on the session's broker


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def counted(tmp_path_factory: pytest.TempPathFactory, mosquitto_session: Mosquitto) -> Path:
    """A house-h17 demo table of 45 rounds (two shoes and a half) with the counter at spot 2: its journal."""
    state = tmp_path_factory.mktemp("counter") / "state"
    done = _tablectl("demo", "--rounds", "45", "--seed", "1", "--speed", "max", "--counter-spot", "2", "--broker",
                     mosquitto_session.url, "--state-dir", str(state), "--no-dashboard", "--quiet",
                     "--journal-sync", "NORMAL", "--prefix", PREFIX, "--carded", "0")  # the crowd and him alone
    assert done.returncode == 0, done.stdout + done.stderr
    return state / "t01.journal"


def test_the_report_flags_the_counters_spot_and_no_other(counted: Path) -> None:
    done = _tablectl("report", str(counted), "--json", "--detail")
    assert done.returncode == 0, done.stderr
    advantage: dict[str, Any] = json.loads(done.stdout)["advantage"]
    assert advantage["rule"]["min_z"] == 2.5 and advantage["rule"]["min_z_alone"] == 4.0
    assert advantage["shoes"] == 2, "the two shoes that ended"
    flagged = advantage["flagged"]
    assert flagged and {f["spot"] for f in flagged} == {2}, flagged
    assert all("bets follow the true count" in f["reason"] and f["z"] >= 3 for f in flagged)
    counter = [s for s in advantage["signals"] if s["spot"] == 2]
    assert [s["shoe"] for s in counter] == [1, 2] and all(s["bets"] >= 15 for s in counter), "he plays every round"
    for s in counter:  # what the table counted is what he bet on: $5 a unit, one unit below a true count of +2.5
        assert [parse_money(b["amount"]) for b in s["samples"]] == [ramp_units(b["true"]) * 500 for b in s["samples"]]
        assert s["index_taken"] == s["index_due"] and s["index_against"] == 0
    assert max(parse_money(b["amount"]) for s in counter for b in s["samples"]) > 500, "he raised his bet"
    others = [s for s in advantage["signals"] if s["spot"] != 2]
    assert others and not any(s["flagged"] for s in others), "the crowd bets at random: not flagged"

    text = _tablectl("report", str(counted))
    assert text.returncode == 0 and "advantage play (Hi-Lo" in text.stdout
    assert [line.split(":")[0].split()[-1] for line in text.stdout.splitlines() if "FLAGGED" in line] == (
        ["2"] * len(flagged))


async def _retained(url: str, topic: str) -> dict[str, Any]:
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    async with aiomqtt.Client(host, int(port)) as client:
        await client.subscribe(topic, qos=1)
        async with asyncio.timeout(10):
            async for message in client.messages:
                payload = json.loads(bytes(message.payload))
                assert isinstance(payload, dict)
                return payload
    raise AssertionError(f"nothing retained on {topic}")


async def test_the_live_analytics_flag_the_same_spots_at_shoe_end_as_the_report(
        counted: Path, mosquitto_session: Mosquitto) -> None:
    """The retained ``analytics`` carries the spots flagged at the shoe ends: the report's, shoe for shoe."""
    live = await _retained(mosquitto_session.url, f"{PREFIX}/t01/analytics")
    report = json.loads(_tablectl("report", str(counted), "--json").stdout)["advantage"]["flagged"]
    assert live["flagged_spots"], "the counter is flagged live"
    key = ("spot", "shoe", "z", "window_bets")
    assert [tuple(f[k] for k in key) for f in live["flagged_spots"]] == [tuple(f[k] for k in key) for f in report]


@pytest.mark.parametrize(("value", "says"), [("0", "--counter-spot 0: a spot number"),
                                             ("8", "--counter-spot 8: house-h17 has spots 1 to 7")])
def test_a_bad_counter_spot_exits_2_with_one_line(value: str, says: str, tmp_path: Path) -> None:
    done = _tablectl("demo", "--counter-spot", value, "--state-dir", str(tmp_path / "state"), "--no-dashboard")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    assert not (tmp_path / "state").exists(), "refused before anything started"
