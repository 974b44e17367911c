"""``tablectl monitor`` and ``tablectl simulate`` as real processes, as a technician runs them."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from simulators import SimChips, SimShoe, SimShuffler
from tests.drivers.conftest import TABLECTL

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=30, env=ENV)


class Proc:
    """A tablectl child process whose stdout lines are read as JSON."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def line(self, timeout: float = 5.0) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not raw:
            err = await self.proc.stderr.read() if self.proc.stderr else b""
            raise AssertionError(f"process ended: {err.decode()}")
        return raw.decode().rstrip("\n")

    async def event(self, kind: str, timeout: float = 5.0, **match: Any) -> dict[str, Any]:
        """The next JSON event of ``kind`` whose fields include ``match``."""
        async def find() -> dict[str, Any]:
            while True:
                ev: dict[str, Any] = json.loads(await self.line(timeout))
                if ev["type"] == kind and all(ev.get(k) == v for k, v in match.items()):
                    return ev

        return await asyncio.wait_for(find(), timeout)

    async def interrupt(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return await asyncio.wait_for(self.proc.wait(), 5)


@asynccontextmanager
async def run(*args: str) -> AsyncIterator[Proc]:
    proc = await asyncio.create_subprocess_exec(
        *TABLECTL, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=ENV,
        limit=1 << 20,
    )
    try:
        yield Proc(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_monitor_missing_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    r = tablectl("monitor", "shoe", "--port", str(tmp_path / "ttyNONE"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "not found" in r.stderr and "ttyNONE" in r.stderr


def test_monitor_bad_usb_id_is_exit_2() -> None:
    r = tablectl("monitor", "console", "--port", "not-an-id")
    assert r.returncode == 2 and "USB id" in r.stderr


def test_simulate_bad_input_is_exit_2() -> None:
    assert tablectl("simulate", "shuffler", "--auto", "5").returncode == 2
    r = tablectl("simulate", "shoe", "--corrupt", "1.5")
    assert r.returncode == 2 and "--corrupt" in r.stderr


@pytest.mark.parametrize("spot", ["\u00b2", "\u0663", "8", "x"])  # superscript 2, Arabic-Indic 3: not ASCII digits
def test_simulate_a_wager_on_no_spot_is_one_line_and_exit_2(spot: str) -> None:
    r = tablectl("simulate", "chips", "--wager", f"{spot}=5")
    assert r.returncode == 2 and r.stderr.strip() == f"tablectl simulate: --wager {spot}=5: spot must be 1..7", r.stderr


async def test_monitor_busy_port_is_exit_2(link_dir: Path) -> None:
    async with SimShoe(seed=1, link=str(link_dir / "shoe")) as sim, \
            run("monitor", "shoe", "--port", sim.port, "--json") as first:
        await first.event("link_up")
        second = await asyncio.create_subprocess_exec(
            *TABLECTL, "monitor", "shoe", "--port", sim.port, stderr=asyncio.subprocess.PIPE, env=ENV
        )
        _, err = await asyncio.wait_for(second.communicate(), 10)
        assert second.returncode == 2 and b"held by another process" in err
        assert await first.interrupt() == 0


async def test_monitor_shoe_through_a_pulled_and_restored_cable(link_dir: Path) -> None:
    async with SimShoe(seed=2, link=str(link_dir / "shoe")) as sim, \
            run("monitor", "shoe", "--port", sim.port, "--json") as mon:
        await mon.event("link_up")
        card = sim.deal()
        assert await mon.event("card") == {"type": "card", "read": [1, 1], "card": card}
        sim.pull_cable()
        assert (await mon.event("health", health="lost"))["device"] == "shoe"
        later = sim.deal()
        await asyncio.sleep(0.2)
        sim.restore_cable()
        await mon.event("health", health="ok", timeout=3)
        assert await mon.event("card") == {"type": "card", "read": [1, 2], "card": later}  # once, in order
        assert await mon.interrupt() == 0


async def test_monitor_shuffler(link_dir: Path) -> None:
    async with SimShuffler(link=str(link_dir / "shuf")) as sim, \
            run("monitor", "shuffler", "--port", sim.port, "--json") as mon:
        await mon.event("link_up")
        sim.open_door()
        assert await mon.event("door") == {"type": "door", "open": True}
        sim.pull_cable()
        await mon.event("health", health="lost")
        sim.restore_cable()
        await mon.event("health", health="ok", timeout=3)
        sim.close_door()
        assert await mon.event("door") == {"type": "door", "open": False}
        assert await mon.interrupt() == 0


async def test_monitor_chips_human_readable_through_a_pulled_cable(link_dir: Path) -> None:
    async with SimChips(link=str(link_dir / "chips")) as sim, run("monitor", "chips", "--port", sim.port) as mon:
        sim.set_wager(4, 10_000)
        while "spot=4" not in (line := await mon.line()) or "cents=10000" not in line:
            pass
        assert "wager" in line
        sim.pull_cable()
        while "health=lost" not in (line := await mon.line()):
            pass
        assert "(retrying)" in line
        sim.restore_cable()
        sim.set_wager(4, 500)
        while "cents=500 " not in (line := await mon.line(3)):
            pass
        assert await mon.interrupt() == 0


async def test_monitor_console_sim_self_test() -> None:
    async with run("monitor", "console", "--port", "sim", "--json") as mon:
        assert await mon.event("button_pressed") == {"type": "button_pressed", "button": "no_more_bets"}
        assert await mon.event("button_released", button="alarm_ack")
        assert await mon.interrupt() == 0


async def _auto_run(link: Path, n: int, seed: int, *faults: str) -> list[str]:
    async with run("simulate", "shoe", "--auto", str(n), "--seed", str(seed), "--link", str(link), *faults) as sim:
        assert (await sim.line(10)).startswith("/dev/")
        cards: list[str] = []
        async with run("monitor", "shoe", "--port", str(link), "--json") as mon:
            assert mon.proc.stdout is not None
            while len(cards) < n:
                raw = await asyncio.wait_for(mon.proc.stdout.readline(), 10)
                assert raw, "monitor stopped"
                ev = json.loads(raw)
                if ev["type"] == "card":
                    cards.append(ev["card"])
            assert await mon.interrupt() == 0
        assert await sim.interrupt() == 0
    return cards


async def test_seeded_clean_and_corrupted_runs_match_card_by_card(link_dir: Path) -> None:
    n = 20_000
    clean = await _auto_run(link_dir / "clean", n, 77)
    noisy = await _auto_run(link_dir / "noisy", n, 77, "--corrupt", "0.001", "--fault-seed", "3")
    assert len(clean) == len(noisy) == n
    first_diff = next((i for i, (a, b) in enumerate(zip(clean, noisy, strict=True)) if a != b), None)
    assert first_diff is None, f"card {first_diff} differs"
    other = await _auto_run(link_dir / "other", 100, 78)
    assert other != clean[:100]  # the seed decides the order


@pytest.mark.parametrize("device", ["shoe", "shuffler", "chips"])
async def test_simulate_prints_the_slave_path_and_links_it(link_dir: Path, device: str) -> None:
    link = link_dir / device
    async with run("simulate", device, "--link", str(link)) as sim:
        path = await sim.line(10)
        assert path.startswith("/dev/pts/") and os.path.realpath(link) == path
        assert await sim.interrupt() == 0


@pytest.mark.parametrize("device", ["shoe", "shuffler", "chips"])
def test_simulate_link_in_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path, device: str) -> None:
    r = tablectl("simulate", device, "--link", str(tmp_path / "no-such-dir" / device))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("tablectl simulate:")]
    assert lines == [f"tablectl simulate: --link {tmp_path / 'no-such-dir' / device}: "
                     f"no such folder {tmp_path / 'no-such-dir'} (create it first)"], r.stderr


def test_version_prints_the_installed_distribution_version() -> None:
    from importlib.metadata import version

    r = tablectl("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"tablectl {version('blackjack-table-controller')}\n"


def test_demo_help_explains_each_speed() -> None:
    r = tablectl("demo", "--help")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    speed = text[text.index("--speed"):]
    for words in ("realtime: the pace of real dealers and players", "a round every 15 to 20 s",
                  "fast (the default)", "max: no pauses at all"):
        assert words in speed, text
