"""A refused command is journaled (who, verb, why), and a flood of them adds a bounded number of records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.contract.topics import CommandTopic
from controller.profiles import load_rules
from controller.service.refusals import RefusalBudget
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts, _until, table_running


def test_one_users_flood_is_journaled_up_to_its_budget_then_one_every_few_seconds() -> None:
    budget = RefusalBudget(per_user=10, per_user_every=6.0, overall=60, overall_every=1.0)
    admitted = [budget.admit("mallory", 100.0) for _ in range(1000)]
    assert admitted[:10] == [0] * 10 and admitted[10:] == [None] * 990
    # others are not silenced by mallory's flood
    assert budget.admit("s.jones", 100.0) == 0
    # six seconds on: one more of mallory's, saying how many were not journaled meanwhile
    assert budget.admit("mallory", 106.0) == 990
    assert budget.admit("mallory", 106.0) is None
    assert budget.admit("mallory", 112.0) == 1


def test_a_flood_under_many_names_is_bounded_overall_and_counted_per_name() -> None:
    budget = RefusalBudget(per_user=10, per_user_every=6.0, overall=60, overall_every=1.0, max_users=100)
    journaled = sum(budget.admit(f"u{n}", 50.0) is not None for n in range(10_000))
    assert journaled == 60
    assert len(budget._users) <= 100  # what it remembers is bounded too
    assert budget.admit(None, 51.0) == 0  # invalid names share one bucket; one token came back in a second
    assert budget.admit(None, 51.0) is None


async def _flood(table: Any, n: int, command: CommandTopic, payload: bytes) -> list[dict[str, Any]]:
    return [(await table.service.on_command(command, payload)).to_json() for _ in range(n)]


async def test_a_flood_of_refusals_adds_a_bounded_number_of_journaled_records(mosquitto: Mosquitto,
                                                                              tmp_path: Path) -> None:
    opts = _opts(load_rules("ny-4620"), rounds=None, seed=7, prefix="flood")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, task):
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.phase != "closed" or task.done(), 30, "the open table")
        before = table.journal.last_seq
        results = await _flood(table, 500, CommandTopic("technician", "mallory", "close"), b"{}")
        results += await _flood(table, 500, CommandTopic("pit", "EVE", "close"), b"{}")
        assert all(r["ok"] is False for r in results)  # every one answered
        refused = [json.loads(r.body) for r in table.journal.records(before + 1)
                   if '"command_refused"' in r.body]
        # 10 of mallory's and 10 of the nameless: the rest answered, counted, not journaled
        assert [(r["user"], r["verb"]) for r in refused] == [("mallory", "close")] * 10 + [("EVE", "close")] * 10
        assert refused[0]["error"] == "close refused: role technician may not send close (only pit)"
        assert "operator" not in refused[-1]


def test_recall_shows_a_refusal_made_between_rounds_with_the_next_round() -> None:
    """An audit reads recall: a command refused while no round was open is kept with the round that follows
    (like the journal's own notes), not dropped for belonging to no round."""
    from controller.records import rounds
    from controller.scenario import run_scenario

    root = Path(__file__).resolve().parents[2]
    golden = root / "controller/conformance_scenarios/ny-all-hands-bust-dealer-draws-nothing.json"
    scenario = json.loads(golden.read_text())
    played = [{"seq": n + 2, **e} for n, e in enumerate(run_scenario(scenario)["events"])]
    refusal = {"seq": 1, "ts": 1.0, "type": "command_refused", "role": "pit", "user": "s.jones",
               "operator": "s.jones", "verb": "close", "error": "close refused: the table is closed"}
    (only,) = rounds([refusal, *played])
    assert only["events"][0] == refusal
