"""The recorder's position as a start witness on the floor's cluster: a table reads its own position with its own
credentials (the NATS permissions ``broker-config --engine nats`` wrote), on any node, in the same connection
as its retained ``state`` (``controller/mqtt/witness.py``); another table's position stays hidden from it.
The Mosquitto side, with the insider's moves on real journals: ``tests/mqtt/test_recorder_witness.py``."""

from __future__ import annotations

import asyncio
import json

from controller.mqtt.recorder_witness import RecorderPosition
from controller.mqtt.witness import read_retained
from tests.floor.conftest import Floor
from tests.floor.helpers import publish


async def test_a_table_reads_its_recorder_position_on_any_node_and_no_other_tables(floor: Floor) -> None:
    position = {"table_id": "t04", "seq": 12, "journal_id": "c" * 32, "head_seq": 11, "head": "9f" * 32, "ts": 1.0}
    await publish(floor, 0, "recorder", "tables/recorder/t04", json.dumps(position).encode(), retain=True)
    await publish(floor, 0, "recorder", "tables/recorder/t03", json.dumps(position | {"table_id": "t03"}).encode(),
                  retain=True)
    try:
        want = RecorderPosition("t04", 12, "c" * 32, 11, "9f" * 32)
        for node in (1, 2):
            async with asyncio.timeout(40):  # NATS may answer without the retained message while it settles
                while (got := (await read_retained(floor.url(node, "t04"), prefix="tables",
                                                   table_ids=["t04"]))["t04"].recorder) != want:
                    await asyncio.sleep(0.5)
        theirs = (await read_retained(floor.url(1, "t04"), prefix="tables", table_ids=["t03"]))["t03"]
        assert isinstance(theirs.recorder, str), theirs
        assert got == want
    finally:
        for table in ("t04", "t03"):
            await publish(floor, 0, "recorder", f"tables/recorder/{table}", b"", retain=True)
