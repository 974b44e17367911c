"""``close`` as a supervisor asks it (issue #35): during a round it is taken for the round's settlement and
said so; a second close, or a close of a closed table, is refused by name; ``open`` of an open table is
refused in words for a person. On a real simulated table (its devices, its crew, a real Mosquitto)."""

from __future__ import annotations

import json
from pathlib import Path

from controller.game.snapshot import export_state, restore_state
from controller.profiles import load_rules
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts, _until, table_running
from tests.sim.test_crew import _command, _settles


async def test_a_close_asked_during_a_round_closes_the_table_when_it_settles(mosquitto: Mosquitto,
                                                                            tmp_path: Path) -> None:
    rules = load_rules("house-h17")
    async with table_running(_opts(rules, rounds=None, seed=4, prefix="closing", speed="fast"), tmp_path / "s",
                             mosquitto.url) as (table, task):
        await _settles(table, task, 1)
        await _until(lambda: table.core.table.phase in ("dealing", "players", "dealer"), 20, "a round in play")
        number = table.core.table.round
        asked = await _command(table, "close")
        assert asked["ok"] and asked["pending"] == f"closes when round {number} settles", asked
        again = await _command(table, "close")
        assert not again["ok"] and again["error"] == (
            f"close refused: a close is already asked: the table closes when round {number} settles"), again
        assert table.core.table.snapshot()["closing"] is True
        # a restart while the close is pending keeps it: it is engine state, in the snapshot
        saved = json.loads(json.dumps(export_state(table.core.table)))  # type: ignore[arg-type]
        assert restore_state(rules, saved).close_asked
        await _until(lambda: table.core.table.phase == "closed", 30, "the table closed at the settlement")
        assert table.core.table.rounds_settled >= 1 and not table.core.table.close_asked
        records = [json.loads(r.body) for r in table.journal.records(1, table.journal.last_seq)]
        settled = max(i for i, r in enumerate(records) if r["type"] == "round_settled" and r["round"] == number)
        closed = [r for r in records[settled:] if r["type"] == "table_closed"]
        assert len(closed) == 1 and closed[0]["operator"] == "s.jones"
        closed_again = await _command(table, "close")
        assert closed_again == {**closed_again, "ok": False, "error": "close refused: the table is already closed"}
        opened = await _command(table, "open")
        assert opened["ok"], opened
        open_again = await _command(table, "open")
        assert open_again == {**open_again, "ok": False, "error": "open refused: the table is already open"}
        await _settles(table, task, 1)
