"""A resumed demo (issue #35): resumed with another ``--shuffler`` it refuses, exit 2, naming the option (the
simulated shoes follow it: resumed with another, every table halted on a false integrity alarm, nothing was said
at the default log level and the demo never ended); a table that halts is said on stderr, with what the demo
waits for, and Ctrl-C still ends the demo."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

TABLECTL = [sys.executable, "-m", "controller.cli"]
ROOT = Path(__file__).resolve().parents[2]


def _two_decks(tmp_path: Path) -> Path:
    """house-h17 dealt from two decks: a shuffle every dozen rounds, so a weak shuffler's shoes come soon."""
    text = (ROOT / "config" / "profiles" / "house-h17.toml").read_text()
    path = tmp_path / "two-decks.toml"
    path.write_text(text.replace('name = "house-h17"', 'name = "house-h17-2d"').replace("decks = 6", "decks = 2", 1))
    return path


def _demo(state: Path, profile: Path, *more: str) -> list[str]:
    return [*TABLECTL, "demo", "--state-dir", str(state), "--profile", str(profile), "--speed", "max",
            "--no-dashboard", "--carded", "0", *more]


async def _start(args: list[str], tmp_path: Path) -> asyncio.subprocess.Process:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    return await asyncio.create_subprocess_exec(*args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE, env=env)


async def _played_weak_then_interrupted(state: Path, profile: Path, tmp_path: Path) -> None:
    """A demo with ``--shuffler weak`` stopped with SIGINT after some rounds (and shuffles)."""
    proc = await _start(_demo(state, profile, "--shuffler", "weak"), tmp_path)
    assert proc.stdout is not None
    settled = 0
    async with asyncio.timeout(90):
        while settled < 25:
            line = await proc.stdout.readline()
            assert line, "the demo ended before it was interrupted"
            settled += line.startswith(b"t01 round")
    proc.send_signal(signal.SIGINT)  # one Ctrl-C is enough, under load too (tests/test_stop_signals.py)
    _out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()


async def test_a_demo_resumed_with_another_shuffler_refuses_naming_the_option(tmp_path: Path) -> None:
    state, profile = tmp_path / "state", _two_decks(tmp_path)
    await _played_weak_then_interrupted(state, profile, tmp_path)
    proc = await _start(_demo(state, profile, "--rounds", "200", "--quiet"), tmp_path)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 2, (out.decode(), err.decode())
    assert len(lines) == 1 and "--shuffler" in lines[0] and "weak" in lines[0] and "Traceback" not in lines[0]
    # with the options it was started with, it plays on, with no integrity alarm
    proc = await _start(_demo(state, profile, "--shuffler", "weak", "--rounds", "40", "--quiet"), tmp_path)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    assert "integrity" not in err.decode() and "rounds 40" in out.decode()


async def test_a_halted_table_is_said_on_stderr_and_ctrl_c_ends_the_demo(tmp_path: Path) -> None:
    """A state dir from before the options were recorded cannot be checked: the table halts; it must be said,
    at the default log level, with what the demo waits for, and SIGINT must still end the demo. (Played to
    round 60 and resumed, seed 1: the resumed shoe deals a card a third time in round 61.)"""
    state, profile = tmp_path / "state", _two_decks(tmp_path)
    proc = await _start(_demo(state, profile, "--shuffler", "weak", "--rounds", "60", "--quiet"), tmp_path)
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode == 0, err.decode()
    (state / "demo.json").unlink(missing_ok=True)
    proc = await _start(_demo(state, profile, "--rounds", "400", "--quiet"), tmp_path)
    assert proc.stderr is not None
    said = b""
    async with asyncio.timeout(60):
        while b"waits for" not in said:
            line = await proc.stderr.readline()
            assert line, "the demo ended without saying why"
            said += line
    text = said.decode()
    assert "t01" in text and "halt" in text, text
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "t01: rounds" in out.decode()
