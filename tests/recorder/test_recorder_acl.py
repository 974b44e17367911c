"""The recorder's user on a pit's Mosquitto made by ``tablectl broker-config``: each insider's move tried.

The recorder's retained position of a table (``<prefix>/recorder/<table>``) is a witness of that table's
journal at start: a forged one, written by the table's own user or a person, would vouch for a rolled-back
journal. So nobody but the recorder writes there, and the recorder writes nothing else: not a table's topics,
not a command, not a result. A refused publish is shown as in ``tests/service/test_roles.py``: an observer
that reads the whole pit never sees it, while it sees a marker sent after it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

from tests.mqtt.pit_broker import OBSERVER, PIT, PREFIX, SURVEILLANCE, TECHNICIAN, Broker, _pit
from tests.recorder.helpers import recorded_seq, recorder_process, stop_process
from tests.service.test_roles import _allowed_publish, _receives, _refused_publish, observing

POSITION = f"{PREFIX}/recorder/t01"
ALARMS = f"{PREFIX}/recorder/alarms"


async def test_nobody_but_the_recorder_writes_a_tables_position_or_the_recorders_alarms(pit_shared: Broker) -> None:
    pit = pit_shared
    async with observing(pit) as obs:
        for user in ("t01", "t02", PIT, SURVEILLANCE, TECHNICIAN, "dashboard", "tracking"):
            for topic in (POSITION, ALARMS, f"{PREFIX}/recorder/t02"):
                await _refused_publish(pit, obs, user, topic)
        # the table's own subtree does not reach the recorder's: its user writes only its listed topics
        await _refused_publish(pit, obs, "t01", f"{PREFIX}/t01/recorder")
        for topic in (POSITION, ALARMS):
            await _allowed_publish(pit, obs, "recorder", topic)


async def test_the_recorder_writes_no_tables_topic_no_command_and_no_result(pit_shared: Broker) -> None:
    pit = pit_shared
    async with observing(pit) as obs:
        for topic in (f"{PREFIX}/t01/events", f"{PREFIX}/t01/state", f"{PREFIX}/t01/status", f"{PREFIX}/t01/alarms",
                      f"{PREFIX}/t01/ratings", f"{PREFIX}/t01/ratings/open", f"{PREFIX}/t01/cmd/pit/{PIT}/open",
                      f"{PREFIX}/t01/cmd/pit/recorder/open", f"{PREFIX}/t01/cmd/pit/{PIT}/open/result"):
            await _refused_publish(pit, obs, "recorder", topic)


async def test_the_recorder_reads_what_it_records_and_a_table_reads_its_own_position_only(pit_shared: Broker) -> None:
    pit = pit_shared
    for topic in ("events", "state", "ratings", "ratings/open"):
        assert await _receives(pit, "recorder", f"{PREFIX}/+/{topic}", f"{PREFIX}/t02/{topic}", sender="t02")
    # what it does not record it does not read: commands and their answers
    assert not await _receives(pit, "recorder", f"{PREFIX}/#", f"{PREFIX}/t01/cmd/pit/{PIT}/open")
    assert not await _receives(pit, "recorder", f"{PREFIX}/#", f"{PREFIX}/t01/history", sender="t01")
    # a table reads the recorder's position of itself (its start witness), not another table's
    assert await _receives(pit, "t01", f"{PREFIX}/recorder/+", POSITION, sender="recorder")
    assert not await _receives(pit, "t01", f"{PREFIX}/recorder/+", f"{PREFIX}/recorder/t02", sender="recorder")
    # the screens and the people read the positions and the alarms
    for user in ("dashboard", OBSERVER):
        assert await _receives(pit, user, f"{PREFIX}/#", ALARMS, sender="recorder")


async def test_tablectl_recorder_records_through_the_generated_pit_broker_over_tls(tmp_path: Path) -> None:
    """The whole path as deployed: broker-config's Mosquitto with TLS, the ACL and passwords; the recorder as
    ``tablectl recorder --broker mqtts://... --tls-ca ca.crt --password-file FILE``."""
    pit = _pit(tmp_path, tls=True)
    try:
        assert pit.files.ca is not None
        secret = tmp_path / "recorder.password"
        secret.write_text(pit.password("recorder") + "\n")
        secret.chmod(0o600)  # a password file: only its owner may read it
        db = tmp_path / "recorder.db"
        log = tmp_path / "recorder.log"
        ctx = ssl.create_default_context(cafile=str(pit.files.ca))
        async with pit.client(OBSERVER, tls_context=ctx) as watcher:
            await watcher.subscribe(POSITION, qos=1)
            proc = recorder_process(f"mqtts://127.0.0.1:{pit.port}", db, log,
                                    extra=("--tls-ca", str(pit.files.ca), "--password-file", str(secret)))
            try:
                async with asyncio.timeout(60):  # subscribed: the alarms it publishes on each connection come
                    while not await _receives_retained(pit, ctx, ALARMS):
                        await asyncio.sleep(0.1)
                async with pit.client("t01", tls_context=ctx) as table:
                    await table.publish(f"{PREFIX}/t01/events", b'{"seq": 1, "ts": 1.0, "type": "tick"}', qos=1)
                async with asyncio.timeout(60):
                    async for m in watcher.messages:
                        if json.loads(bytes(m.payload))["seq"] == 1:  # type: ignore[arg-type]
                            break
                assert recorded_seq(db, "t01") == 1
            finally:
                assert stop_process(proc) == 0, log.read_text()
    finally:
        pit.close()


async def _receives_retained(pit: Broker, ctx: ssl.SSLContext, topic: str) -> bool:
    async with pit.client(SURVEILLANCE, tls_context=ctx) as c:
        await c.subscribe(topic, qos=1)
        try:
            async with asyncio.timeout(1.0):
                async for _ in c.messages:
                    return True
        except TimeoutError:
            return False
    return False


async def test_the_dashboard_reads_the_recorders_alarms_and_positions(pit_shared: Broker) -> None:
    """The floor page subscribes to ``<prefix>/recorder/+``: the read-only ``dashboard`` user reads every table's
    position and the alarms through it (they carry no card number and no hole card; that it writes neither is the
    first test's)."""
    for topic in (ALARMS, POSITION, f"{PREFIX}/recorder/t02"):
        assert await _receives(pit_shared, "dashboard", f"{PREFIX}/recorder/+", topic, sender="recorder"), topic
