"""Issue #35's worst surprise: carded players keep their cards in through a ``close``; the table reopens and
plays on. Under a real ``tablectl recorder`` on a real Mosquitto, the database must then hold every rating the
journal holds, rating by rating, body for body (ratings used to share an id after a reopen, and the recorder
overwrote one with the next: 10 ratings journaled, 6 recorded, 0 conflicts)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controller.profiles import load_rules
from controller.recorder.store import StoreError, open_store
from controller.reports.ratings import journal_ratings
from controller.sim import crew as simcrew
from controller.sim.demo import DemoOptions
from tests.mqtt_broker import Mosquitto
from tests.recorder.helpers import recorder_process, stop_process, until
from tests.recorder.test_recorder_service import playing
from tests.sim.test_crew import _command, _settles


def _recorded_ratings(db: Path) -> dict[str, dict[str, Any]]:
    try:
        with open_store(str(db), create=False) as store:
            return {r.rating_id: r.body for r in store.ratings() if r.table_id == "t01"}
    except StoreError:
        return {}


async def _close(table: Any) -> None:
    """``close`` as a supervisor asks it, again until the round in play has settled."""
    closed: dict[str, Any] = {}
    async with asyncio.timeout(30):
        while not closed.get("ok"):
            closed = await _command(table, "close")
            await asyncio.sleep(0.01)
    await until(lambda: table.core.table.phase == "closed", 10, "the table closed")


async def test_a_rated_table_closed_and_reopened_twice_has_the_same_ratings_in_journal_and_database(
        mosquitto: Mosquitto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(simcrew, "STUCK_AFTER_S", 30.0)
    db, state = tmp_path / "recorder.db", tmp_path / "state"
    recorder = recorder_process(mosquitto.url, db, tmp_path / "recorder.log")
    try:
        opts = DemoOptions(rules=load_rules("house-h17"), rounds=None, seed=8, speed="max", prefix="tables",
                           quiet=True, dashboard=False, tick_every=5.0, carded=3)
        async with playing("t01", opts, state, mosquitto.url) as (table, task):
            for _ in range(2):
                await _settles(table, task, 3)
                await _close(table)
                opened = await _command(table, "open")
                assert opened["ok"], opened
            await _settles(table, task, 3)
            await _close(table)
            await table.publisher.wait_drained(60)
        journaled, _ = journal_ratings(state / "t01.journal", None)
        assert len(journaled) >= 9 and all(not r["open"] for r in journaled)
        ids = [r["rating_id"] for r in journaled]
        assert len(set(ids)) == len(ids), f"ratings of one journal share an id: {ids}"
        expected = {r["rating_id"]: r for r in journaled}
        try:
            await until(lambda: _recorded_ratings(db).keys() >= expected.keys(), 60, "the recorder's ratings")
        finally:
            log = (tmp_path / "recorder.log").read_text()
        got = _recorded_ratings(db)
        assert sorted(got) == sorted(expected)
        for rating_id, rating in expected.items():
            assert got[rating_id] == json.loads(json.dumps(rating)), rating_id
        assert "conflict" not in log, log
    finally:
        assert stop_process(recorder) == 0
