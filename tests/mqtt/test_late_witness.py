"""A witness silent at start is asked at the table's first connection, before anything is published (issue #33;
DESIGN "Journal integrity and game recall"; ``controller/mqtt/late_witness.py``).

The move, on a real Mosquitto (with persistence, restarted on its ports) and a real demo process: a demo plays,
its state directory and anchor are copied, it plays on (the broker retains the newer ``state``); the broker goes
down, the copy is put back (journal and anchor agree), the demo starts again while its broker is away. The code
before started on the anchor alone with one INFO line and, when the broker came back, overwrote its retained
``state`` and never asked that witness again. Now the table halts at the broker's return with an integrity alarm
naming the witness and both positions, and the retained state on the broker is the one it held (read by a real
subscriber, byte for byte); the halt sticks: the next start is refused.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import aiomqtt
import pytest

from controller.mqtt.mosquitto import Mosquitto
from tests.mqtt_broker import find_mosquitto

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _last_seq(journal: Path) -> int:
    with closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True)) as db:
        return int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM outbox").fetchone()[0])


def _demo(state: Path, broker: str, rounds: int, speed: str = "max") -> list[str]:
    return [*TABLECTL, "demo", "--tables", "1", "--rounds", str(rounds), "--seed", "3", "--speed", speed,
            "--state-dir", str(state), "--broker", broker, "--no-dashboard", "--quiet"]


async def _retained(broker: Mosquitto, *topics: str) -> dict[str, bytes]:
    """What the broker retains on ``topics``, read by a subscriber of its own."""
    found: dict[str, bytes] = {}
    async with aiomqtt.Client(broker.host, broker.port, identifier="late-witness-reader") as client:
        for topic in topics:
            await client.subscribe(topic, qos=1)
        await client.subscribe("tables/t01/cmd/reader-marker", qos=0)  # retained ones arrive before its SUBACK
        for _ in range(len(client.messages)):
            message = await asyncio.wait_for(anext(client.messages), 5)
            if message.retain and isinstance(message.payload, bytes):
                found[message.topic.value] = message.payload
    return found


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}


def test_a_rolled_back_journal_started_while_its_broker_was_away_halts_at_its_return(
        tmp_path: Path, env: dict[str, str]) -> None:
    try:
        find_mosquitto()
    except Exception as exc:
        pytest.skip(f"mosquitto not installed: {exc}")
    broker = Mosquitto(tmp_path / "broker", persistence=True)
    broker.start()
    try:
        state, anchors = tmp_path / "state", tmp_path / "xdg" / "tablectl" / "anchors"
        journal = state / "t01.journal"
        done = subprocess.run(_demo(state, broker.url, 3), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        shutil.copytree(state, tmp_path / "state-backup")
        shutil.copytree(anchors, tmp_path / "anchors-backup")
        behind = _last_seq(journal)
        done = subprocess.run(_demo(state, broker.url, 6), env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        ahead = _last_seq(journal)
        assert ahead > behind
        topics = ("tables/t01/state", "tables/t01/status", "tables/t01/history")
        before = asyncio.run(_retained(broker, *topics))
        assert set(before) == set(topics), before

        broker.stop()
        shutil.rmtree(state)
        shutil.rmtree(anchors)
        shutil.copytree(tmp_path / "state-backup", state)  # journal and anchor put back together: they agree
        shutil.copytree(tmp_path / "anchors-backup", anchors)
        table = subprocess.Popen(_demo(state, broker.url, 100_000, speed="fast"), env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while _last_seq(journal) <= behind + 5:  # it started on its anchor and plays while the broker is away
                assert table.poll() is None, table.stderr.read() if table.stderr else ""
                assert time.monotonic() < deadline, "the table did not start playing"
                time.sleep(0.1)
            broker.start()  # the broker comes back
            try:
                code = table.wait(40)
            except subprocess.TimeoutExpired:
                code = None
        finally:
            if table.poll() is None:
                table.kill()
                table.wait(10)
        err = table.stderr.read() if table.stderr else ""
        after = asyncio.run(_retained(broker, *topics))
        assert after == before, "the table published over the broker's retained position"
        assert code is not None, "the table played on after its broker came back holding a later state"
        assert code != 0, err
        assert (f"behind the broker's retained state of t01 ({broker.url}): the journal ends at seq {behind} but "
                f"the broker's retained state of t01 ({broker.url}) holds seq {ahead}") in err, err
        assert "asked at the first connection" in err, err
        assert "Traceback" not in err, err

        # the halt sticks: the next start, broker up, is refused (the journal played on past the broker's seq or not)
        done = subprocess.run(_demo(state, broker.url, 100_000), env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "the broker's retained state of t01" in done.stderr, done.stderr
        assert asyncio.run(_retained(broker, *topics)) == before
    finally:
        broker.close()
