"""A running table's program authentication (DESIGN.md, "Program authentication"; issue 36): ``state`` carries
``software`` (version, build digest); a re-check on the period and on a supervisor's ``selfcheck`` command halts the
table with an integrity alarm naming the file when the program no longer matches. On a real simulated table (the
demo's: real drivers, real journal) publishing to a real Mosquitto; the check's result is given (the check itself is
tested on a real installed wheel in tests/test_selfcheck.py)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.contract.alarms import alarm_kind
from controller.mqtt.state_model import StateSnapshot
from controller.profiles import load_rules
from controller.selfcheck.digest import lines_digest
from controller.selfcheck.program import DISTRIBUTION, DistributionCheck, ProgramCheck
from controller.selfcheck.watch import ALARM_CODE, ProgramWatch
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts, _until, table_running

FILES = {"controller/game/money.py": "ab" * 32, "controller/game/table.py": "cd" * 32}


def _good() -> ProgramCheck:
    return ProgramCheck("0.1.0", DistributionCheck(DISTRIBUTION, "0.1.0", sha256=dict(FILES)))


def _edited() -> ProgramCheck:
    return ProgramCheck("0.1.0", DistributionCheck(DISTRIBUTION, "0.1.0", sha256=dict(FILES),
                                                   differs=["controller/game/money.py"]))


class Checker:
    """The program as it is now: good until ``edited`` is set."""

    def __init__(self) -> None:
        self.edited = False
        self.calls = 0

    def __call__(self) -> ProgramCheck:
        self.calls += 1
        return _edited() if self.edited else _good()


def _program_alarms(table: Any) -> list[Any]:
    return [a for a in table.core.table.alarms.values() if a.code == ALARM_CODE]


async def test_state_carries_the_build_and_a_periodic_recheck_halts_on_a_mismatch(mosquitto: Mosquitto,
                                                                                  tmp_path: Path) -> None:
    checker = Checker()
    opts = _opts(load_rules("house-h17"), rounds=None, seed=5, prefix="prog", speed="realtime")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, _task):
        table.service.program = ProgramWatch(_good(), every_s=0.3, checker=checker)
        await _until(lambda: table.core.table.phase != "closed", 60, "the open table")
        software = table.core.state()["software"]
        assert software == {"version": "0.1.0", "build": lines_digest(FILES), "verified": True}
        snapshot = StateSnapshot.model_validate(table.core.state())  # the dashboards' model of state reads it
        assert snapshot.software is not None and snapshot.software.build == lines_digest(FILES)
        await _until(lambda: checker.calls >= 2, 60, "two periodic re-checks")
        assert table.core.table.halted is None and not _program_alarms(table), "a matching program plays on"
        checker.edited = True
        await _until(lambda: table.core.table.halted is not None, 60, "the halt")
        [alarm] = _program_alarms(table)
        assert "program authentication failed: differs: controller/game/money.py" in alarm.message
        assert alarm.halts and alarm_kind(alarm.code, alarm.halts) == "integrity", "surveillance clears it"
        assert table.core.state()["software"]["build"] is None, "no build digest for a program that differs"
        await _until(lambda: checker.calls >= 4, 60, "more re-checks")
        assert len(_program_alarms(table)) == 1, "one alarm while it is active"


async def _command(client: aiomqtt.Client, role: str, user: str, verb: str = "selfcheck") -> dict[str, Any]:
    await client.publish(f"prog2/t01/cmd/{role}/{user}/{verb}", b"{}", qos=1)
    async with asyncio.timeout(60):
        async for m in client.messages:
            if m.topic.value == f"prog2/t01/cmd/{role}/{user}/{verb}/result":
                result: dict[str, Any] = json.loads(bytes(m.payload))  # type: ignore[arg-type]
                return result
    raise AssertionError("no result")


async def test_a_supervisors_selfcheck_command_checks_now_and_halts_on_a_mismatch(mosquitto: Mosquitto,
                                                                                  tmp_path: Path) -> None:
    checker = Checker()
    opts = _opts(load_rules("house-h17"), rounds=None, seed=6, prefix="prog2", speed="realtime")
    async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, _task):
        table.service.program = ProgramWatch(_good(), every_s=0, checker=checker)  # on request only
        await table.publisher.wait_connected(60)
        await _until(lambda: table.core.table.phase != "closed", 60, "the open table")
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
            await client.subscribe("prog2/t01/cmd/+/+/+/result", qos=1)
            match = await _command(client, "pit", "s.jones")
            assert match["ok"] and match["program"] == "match" and match["build"] == lines_digest(FILES), match
            assert checker.calls == 1
            refused = await _command(client, "technician", "a.tech")
            assert not refused["ok"] and "may not send selfcheck" in refused["error"], refused
            checker.edited = True
            found = await _command(client, "surveillance", "c.eye")
            assert found["ok"] and found["program"] == "mismatch", found
            assert found["problems"] == ["differs: controller/game/money.py"]
        assert table.core.table.halted is not None and len(_program_alarms(table)) == 1
        records = [json.loads(r.body) for r in table.core.journal.records(1) if '"program_checked"' in r.body]
        assert [(r["operator"], r["result"]) for r in records] == [("s.jones", "match"), ("c.eye", "mismatch")]


async def test_an_unverified_program_plays_and_says_so(mosquitto: Mosquitto, tmp_path: Path,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A development checkout (an editable install): the table plays, its log warns, its state has no build."""
    unverified = ProgramCheck("0.1.0", None, unverified="an editable install of /src (a development checkout)")
    opts = _opts(load_rules("house-h17"), rounds=None, seed=7, prefix="prog3", speed="realtime")
    with caplog.at_level(logging.WARNING, logger="controller"):
        async with table_running(opts, tmp_path / "state", mosquitto.url) as (table, _task):
            table.service.program = ProgramWatch(unverified, every_s=0)
            await _until(lambda: table.core.table.phase not in ("closed", "betting"), 30, "a round dealt")
            assert table.core.table.halted is None
            assert table.core.state()["software"] == {"version": "0.1.0", "build": None, "verified": False}
    warned = [r for r in caplog.records if r.getMessage() == "program unverified"]
    assert warned and "editable install" in warned[0].reason  # type: ignore[attr-defined]
