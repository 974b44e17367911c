"""A badge swiped at the simulated console signs its dealer in, on the real drivers, service and Mosquitto."""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from controller.contract.alarms import BADGE_READER_ALARM, alarm_kind
from controller.profiles import load_rules
from controller.sim.demo import DemoTable
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto
from tests.service.test_table_service import _opts


@contextlib.asynccontextmanager
async def _table_without_crew(state: Path, broker_url: str) -> AsyncIterator[DemoTable]:
    """A demo table's devices and service running, nobody at the table: the test is the dealer."""
    state.mkdir(parents=True, exist_ok=True)
    table = DemoTable("t01", _opts(load_rules("house-h17"), rounds=None, seed=1, prefix="badge"), state, broker_url,
                      io.StringIO())
    table.service.recover()
    await table.sim.start()
    await table.service.start()
    try:
        yield table
    finally:
        await table.close()


def _on_duty(rec: Recorder) -> Any:
    states = rec.on("badge/t01/state")
    return states[-1].json().get("dealer_on_duty", "missing") if states else "missing"


async def test_a_swiped_badge_puts_its_dealer_on_duty_and_the_sign_out_key_takes_them_off(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    async with recording(mosquitto.host, mosquitto.port, "badge/#") as rec, \
            _table_without_crew(tmp_path / "state", mosquitto.url) as table:
        await rec.wait_for(lambda r: _on_duty(r) is None, 10)
        table.sim.console.swipe("d.ames")
        await rec.wait_for(lambda r: isinstance(_on_duty(r), dict) and _on_duty(r)["id"] == "d.ames", 10)
        assert isinstance(_on_duty(rec)["since"], type(rec.on("badge/t01/state")[-1].json()["ts"]))
        table.sim.console.swipe("d.ames")  # a double swipe changes nothing
        table.sim.console.swipe("b.baker")  # the relief
        await rec.wait_for(lambda r: isinstance(_on_duty(r), dict) and _on_duty(r)["id"] == "b.baker", 10)
        table.sim.console.sign_out()
        await rec.wait_for(lambda r: _on_duty(r) is None, 10)
        # a damaged badge: a device alarm asking for another swipe; nobody signed in
        table.sim.console.swipe(b"d.AMES")
        await rec.wait_for(lambda r: any(a["code"] == BADGE_READER_ALARM for m in r.on("badge/t01/alarms")
                                         for a in m.json()), 10)
        assert table.core.table.dealer_on_duty is None
    changes = [m.json() for m in rec.on("badge/t01/events") if m.json()["type"] == "dealer_changed"]
    assert [(c["dealer"], c["previous"], c["by"]) for c in changes] == [
        ("d.ames", None, "badge"), ("b.baker", "d.ames", "badge"), (None, "b.baker", "badge")]
    alarm = next(a for m in rec.on("badge/t01/alarms") for a in m.json() if a["code"] == BADGE_READER_ALARM)
    assert "0x41 is not one of a-z" in alarm["message"] and not alarm["halts"]
    assert alarm_kind(alarm["code"], alarm["halts"]) == "device"
