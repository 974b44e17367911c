"""The recorder on the floor's three-node NATS cluster: a real table's journal lands seq for seq, and the
recorder's own node killed mid-stream loses nothing (it moves to another node; its session, replicated by
JetStream, gives it what it had not acknowledged and what came meanwhile)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest

from controller.profiles import load_rules
from controller.sim.demo import DemoOptions, DemoTable
from tests.floor.conftest import Floor
from tests.floor.helpers import wait_settled
from tests.recorder.helpers import assert_holds_the_journal, recorded_seq, recording, until


async def _drop_session(floor: Floor, node: int = 1) -> None:
    """End the recorder's persistent session (a clean-session connection as its user): the shared cluster's
    other tests publish events its session would keep for the next test's recorder."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        try:
            host, port = floor.mqtt(node)
            async with aiomqtt.Client(host, port, username="recorder", password=floor.passwords["recorder"],
                                      identifier="recorder", clean_session=True, timeout=10):
                return
        except aiomqtt.MqttError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


@pytest.fixture
def clean_recorder_session(floor: Floor) -> Iterator[Floor]:
    asyncio.run(_drop_session(floor))
    yield floor
    floor.revive()
    asyncio.run(_drop_session(floor))


async def test_the_recorders_node_killed_mid_stream_and_nothing_is_missing(clean_recorder_session: Floor,
                                                                          tmp_path: Path) -> None:
    floor = clean_recorder_session
    nodes = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    db = tmp_path / "recorder.db"
    opts = DemoOptions(rules=load_rules("house-h17"), rounds=12, seed=13, speed="fast", quiet=True, dashboard=False,
                       tick_every=5.0)
    state = tmp_path / "state"
    state.mkdir()
    # the table on nodes 2, 3, 1 in that order; the recorder on node 1 first: killing node 1 takes only the recorder's
    table = DemoTable("t03", opts, state, nodes[1], io.StringIO(), brokers=[nodes[1], nodes[2], nodes[0]],
                      password=floor.passwords["t03"])
    try:
        async with recording(nodes, str(db), password=floor.passwords["recorder"], backoff_max=1.0) as rec:
            assert rec.broker_url == nodes[0]
            play = asyncio.create_task(table.run())
            await until(lambda: rec.tally.stored >= 30, 120, "30 events recorded")
            floor.cluster.kill(0)  # the recorder's node is lost mid-stream; the table plays on, on node 2
            await asyncio.wait_for(play, 180)
            await table.publisher.wait_drained(90)
            last = table.journal.last_seq
            await until(lambda: recorded_seq(db, "t03") >= last, 180, f"the recorder to hold seq {last}")
            assert rec.broker_url != nodes[0] and rec.tally.connections >= 2
            assert_holds_the_journal(db, "t03", table.journal)
            assert rec.tally.conflicts == 0
    finally:
        await table.close()
        floor.revive()
        await wait_settled(floor, (0, 1, 2))
