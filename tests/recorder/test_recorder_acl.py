"""The recorder's user on a pit's Mosquitto made by ``tablectl broker-config``: each insider's move tried.

The recorder's retained position of a table (``<prefix>/recorder/<table>``) is a witness of that table's
journal at start: a forged one, written by the table's own user or a person, would vouch for a rolled-back
journal. So nobody but the recorder writes there, and the recorder writes nothing else: not a table's topics,
not a command, not a result. A refused publish is shown as in ``tests/service/test_roles.py``: an observer
that reads the whole pit never sees it, while it sees a marker sent after it.
"""

from __future__ import annotations

from tests.mqtt.pit_broker import OBSERVER, PIT, PREFIX, SURVEILLANCE, TECHNICIAN, Broker
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
