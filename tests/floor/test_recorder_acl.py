"""The recorder's user on the floor's cluster: the same insider's moves as on Mosquitto
(``tests/recorder/test_recorder_acl.py``), against the NATS permissions ``broker-config --engine nats`` wrote.

A forged position on ``tables/recorder/<table>`` would vouch for a rolled-back journal; a recorder that could
write a table's topics could forge its record. NATS acknowledges a refused publish and drops it, so a watcher
that reads everything never sees it, while it sees an allowed one sent after it.
"""

from __future__ import annotations

import asyncio
import uuid

from tests.floor.conftest import Floor
from tests.floor.helpers import connected, publish, reading


async def test_nobody_but_the_recorder_writes_its_topics_and_it_writes_nothing_else(floor: Floor) -> None:
    forged = [
        *((user, topic) for user in ("t01", "t02", "jane.doe", "sam", "tom", "dashboard", "tracking")
          for topic in ("tables/recorder/t01", "tables/recorder/alarms")),
        ("recorder", "tables/t01/events"),
        ("recorder", "tables/t01/state"),
        ("recorder", "tables/t01/status"),
        ("recorder", "tables/t01/ratings"),
        ("recorder", "tables/t01/cmd/pit/jane.doe/open"),
        ("recorder", "tables/t01/cmd/pit/recorder/open"),
        ("recorder", "tables/t01/cmd/pit/jane.doe/open/result"),
    ]
    marks = {key: f'{{"forged": "{uuid.uuid4()}"}}'.encode() for key in forged}
    allowed = f'{{"seq": 1, "id": "{uuid.uuid4()}"}}'.encode()
    async with reading(floor, 2, "sam", "tables/#") as watch:
        for (user, topic), body in marks.items():
            await publish(floor, 0, user, topic, body)
        await publish(floor, 1, "recorder", "tables/recorder/t01", allowed)
        await watch.wait_for("tables/recorder/t01", allowed, timeout=30)
        await asyncio.sleep(0.5)
    leaked = [(t, p) for t, p, _ in watch.messages if p in marks.values()]
    assert leaked == []


async def test_the_recorder_reads_the_tables_records_and_not_their_commands(floor: Floor) -> None:
    body = f'{{"seq": 7, "id": "{uuid.uuid4()}"}}'.encode()
    async with reading(floor, 2, "recorder", "tables/+/events") as events, \
            reading(floor, 2, "recorder", "tables/+/ratings") as ratings:
        await publish(floor, 0, "t03", "tables/t03/events", body)
        await publish(floor, 0, "t03", "tables/t03/ratings", body)
        await events.wait_for("tables/t03/events", body, timeout=30)
        await ratings.wait_for("tables/t03/ratings", body, timeout=30)
    # what it does not record it may not read: NATS refuses the subscription itself (SUBACK 0x80)
    client = await connected(floor, 2, "recorder")
    try:
        for topic in ("tables/#", "tables/+/cmd/#", "tables/t03/history"):
            granted = await client.subscribe(topic, qos=1)
            assert [int(getattr(q, "value", q)) for q in granted] == [0x80], topic
    finally:
        await client.__aexit__(None, None, None)


async def test_the_dashboard_reads_the_recorders_alarms_and_positions(floor: Floor) -> None:
    """The floor page's read-only ``dashboard`` user reads the recorder's alarms and positions on the cluster too
    (they carry no card number and no hole card); that it writes neither is the first test's."""
    alarms = f'[{{"table_id": "t01", "code": "recorder_gap", "id": "{uuid.uuid4()}"}}]'.encode()
    position = f'{{"seq": 3, "id": "{uuid.uuid4()}"}}'.encode()
    async with reading(floor, 2, "dashboard", "tables/recorder/+", websockets=True) as screen:
        await publish(floor, 0, "recorder", "tables/recorder/alarms", alarms)
        await publish(floor, 1, "recorder", "tables/recorder/t02", position)
        await screen.wait_for("tables/recorder/alarms", alarms, timeout=30)
        await screen.wait_for("tables/recorder/t02", position, timeout=30)
