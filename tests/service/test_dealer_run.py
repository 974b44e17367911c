"""The dealer on duty on a real ``tablectl run`` and a real Mosquitto (DESIGN "The dealer on duty"): a table with
``require_dealer`` opens no betting until the pit assigns a dealer (``cmd/pit/<user>/set_dealer``); the dealer
stays on duty across a close and a reopen, and across a stop and a restart (snapshot and journal replay), with the
same ``since``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import aiomqtt

from controller.mqtt.state_model import StateSnapshot
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto
from tests.service.test_run import TABLECTL, _config, simulated_devices

__all__ = ["simulated_devices"]  # the fixture, used by name

ROOT = "runs/t05"


async def _command(mosquitto: Mosquitto, role: str, user: str, verb: str, body: dict[str, Any]) -> dict[str, Any]:
    """Publish one command and return the table's result."""
    async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
        await client.subscribe(f"{ROOT}/cmd/{role}/{user}/{verb}/result", qos=1)
        await client.publish(f"{ROOT}/cmd/{role}/{user}/{verb}", json.dumps(body).encode(), qos=1)
        async with asyncio.timeout(15):
            async for m in client.messages:
                result: dict[str, Any] = json.loads(bytes(m.payload))  # type: ignore[arg-type]
                return result
    raise AssertionError("no result")


def _last_state(rec: Recorder) -> dict[str, Any]:
    state: dict[str, Any] = rec.on("/state")[-1].json()
    return state


async def _start(path: Path, *args: str) -> asyncio.subprocess.Process:
    # the settings from the environment, as any key (the config file's last section is [mqtt])
    env = {**os.environ, "TABLECTL_REQUIRE_DEALER": "true", "TABLECTL_SNAPSHOT_EVERY": "3"}
    return await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path), *args,
                                                stderr=asyncio.subprocess.PIPE, env=env)


async def _stop(proc: asyncio.subprocess.Process) -> tuple[int, str]:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    assert proc.stderr is not None
    err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
    return await proc.wait(), err


async def test_a_table_requiring_a_dealer_waits_for_one_who_survives_a_close_and_a_restart(
        mosquitto: Mosquitto, tmp_path: Path, simulated_devices: Path) -> None:
    path = _config(tmp_path, mosquitto.url, simulated_devices)
    async with recording(mosquitto.host, mosquitto.port, f"{ROOT}/#") as rec:
        proc = await _start(path, "--new-journal")
        try:
            await rec.wait_for(lambda r: any(m.json()["phase"] == "betting" for m in r.on("/state")), 30)
            waiting = _last_state(rec)
            assert waiting["dealer_on_duty"] is None
            assert "no dealer on duty" in waiting["halted"], waiting["halted"]
            types = [m.json()["type"] for m in rec.on("/events")]
            assert types[:3] == ["journal_started", "rules_changed", "dealer_required"], types
            # bad ids are refused naming the rule; surveillance may not assign at all (the table's own check)
            bad = await _command(mosquitto, "pit", "s.jones", "set_dealer", {"dealer": "D.Ames", "id": 1})
            assert bad["ok"] is False and bad["id"] == 1 and "dealer id 'D.Ames' holds 'D'" in bad["error"], bad
            eye = await _command(mosquitto, "surveillance", "eye.one", "set_dealer", {"dealer": "d.ames"})
            assert eye["ok"] is False and "may not send set_dealer (only pit)" in eye["error"], eye
            done = await _command(mosquitto, "pit", "s.jones", "set_dealer", {"dealer": "d.ames", "id": "r-2"})
            assert done["ok"] is True and done["operator"] == "s.jones" and "pending" not in done, done
            await rec.wait_for(lambda r: _last_state(r)["dealer_on_duty"] is not None, 10)
            state = _last_state(rec)
            on_duty = state["dealer_on_duty"]
            assert on_duty["id"] == "d.ames" and state["halted"] is None
            assert abs(on_duty["since"] - state["ts"]) < 5
            changed = [m.json() for m in rec.on("/events") if m.json()["type"] == "dealer_changed"]
            assert [(c["dealer"], c["previous"], c["by"]) for c in changed] == [("d.ames", None, "s.jones")]
            # a close and a reopen keep the dealer on duty, since when it was assigned
            for verb in ("close", "open"):
                assert (await _command(mosquitto, "pit", "s.jones", verb, {}))["ok"] is True
            await rec.wait_for(lambda r: any(m.json()["type"] == "table_opened" and m.json().get("operator")
                                             for m in r.on("/events")), 10)
            await rec.wait_for(lambda r: _last_state(r)["phase"] != "closed", 10)
            assert _last_state(rec)["dealer_on_duty"] == on_duty
        finally:
            code, err = await _stop(proc)
        assert code == 0, err
        seen = len(rec.on("/state"))
        # a restart: recovered from a snapshot (every 3 inputs) and the inputs after it
        proc = await _start(path)
        try:
            await rec.wait_for(lambda r: len(r.on("/state")) > seen, 30)
            resumed = _last_state(rec)
            assert resumed["dealer_on_duty"] == on_duty, (resumed["dealer_on_duty"], on_duty)
            assert resumed["halted"] is None
            # the setting, already journaled, is not journaled again (an event repeated after a restart: same seq)
            required = {m.json()["seq"] for m in rec.on("/events") if m.json()["type"] == "dealer_required"}
            assert len(required) == 1, required
            out = await _command(mosquitto, "pit", "a.li", "set_dealer", {"dealer": None})
            assert out["ok"] is True, out
            await rec.wait_for(lambda r: _last_state(r)["dealer_on_duty"] is None, 10)
            assert "no dealer on duty" in _last_state(rec)["halted"]
        finally:
            code, err = await _stop(proc)
        assert code == 0, err
    for m in rec.on("/state"):
        StateSnapshot.model_validate(m.json())
    changed = list({m.json()["seq"]: m.json() for m in rec.on("/events") if m.json()["type"] == "dealer_changed"}
                   .values())
    assert [(c["dealer"], c["previous"], c["by"]) for c in changed] == [("d.ames", None, "s.jones"),
                                                                         (None, "d.ames", "a.li")]
