"""The recorder on the floor's three-node NATS cluster: a real table's journal lands seq for seq, and the
recorder's own node killed mid-stream loses nothing (it moves to another node; its session, replicated by
JetStream, gives it what it had not acknowledged and what came meanwhile)."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiomqtt
import pytest

from controller.profiles import load_rules
from controller.recorder.backfill import BATCH, StreamSource
from controller.recorder.store import open_store
from controller.sim.demo import DemoOptions, DemoTable
from tests.floor.conftest import Floor
from tests.floor.helpers import connected, wait_settled
from tests.recorder.helpers import (
    assert_holds_the_journal,
    recorded_seq,
    recorder_process,
    recording,
    stop_process,
    until,
)


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


async def test_the_recorder_killed_9_on_the_cluster_catches_up_from_its_replicated_session(
        clean_recorder_session: Floor, tmp_path: Path) -> None:
    """What NATS delivered but the recorder had not acknowledged, and what came while it was down, come to
    the restarted recorder (here on another node: the session is the cluster's, not a node's)."""
    floor = clean_recorder_session
    nodes = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    db = tmp_path / "recorder.db"
    log = tmp_path / "recorder.log"
    opts = DemoOptions(rules=load_rules("house-h17"), rounds=12, seed=17, speed="fast", quiet=True, dashboard=False,
                       tick_every=5.0)
    state = tmp_path / "state"
    state.mkdir()
    table = DemoTable("t02", opts, state, nodes[1], io.StringIO(), brokers=[nodes[1], nodes[2], nodes[0]],
                      password=floor.passwords["t02"])
    password = floor.passwords["recorder"]
    first = recorder_process(",".join(nodes), db, log, password=password)
    try:
        await until(lambda: "subscribed to every table's" in log.read_text(), 60, "the recorder to subscribe")
        play = asyncio.create_task(table.run())
        await until(lambda: recorded_seq(db, "t02") >= 30, 120, "30 events recorded")
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        down_at = table.journal.last_seq
        await until(lambda: table.journal.last_seq >= down_at + 40 or play.done(), 120,
                    "the table to play on while the recorder is down")
        second = recorder_process(",".join([nodes[2], nodes[0], nodes[1]]), db, log, password=password)
        try:
            await asyncio.wait_for(play, 180)
            await table.publisher.wait_drained(90)
            last = table.journal.last_seq
            await until(lambda: recorded_seq(db, "t02") >= last, 180, f"the restarted recorder to hold seq {last}")
            assert_holds_the_journal(db, "t02", table.journal)
        finally:
            assert stop_process(second) == 0, log.read_text()[-3000:]
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        await table.close()



async def test_a_recorder_started_on_a_floor_already_playing_fills_the_gap_from_the_tables_stream(
        clean_recorder_session: Floor, tmp_path: Path) -> None:
    """Events a table published before the recorder had a session (its first start on a running floor) exist
    only in the ``TABLES`` stream: the gap its first event leaves is filled from there, body for body."""
    floor = clean_recorder_session
    nodes = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    user, password = floor.cluster.admin_login()
    source = StreamSource([f"nats://{floor.cluster.bind}:{floor.cluster.node(i).client}" for i in range(3)],
                          user, password)
    run = uuid.uuid4().hex
    bodies = {s: json.dumps({"seq": s, "ts": 1795334400.0 + s, "type": "tick", "run": run}) for s in range(1, 31)}
    db = tmp_path / "recorder.db"
    table = await connected(floor, 0, "t04")
    try:
        for s in range(1, 21):  # before the recorder's first start: only the stream keeps them
            await table.publish("tables/t04/events", bodies[s].encode(), qos=1)
        async with recording(nodes, str(db), password=floor.passwords["recorder"], stream=source,
                             fill_after=0.5) as rec:
            for s in range(21, 31):
                await table.publish("tables/t04/events", bodies[s].encode(), qos=1)
            # the recorder counts what it filled once back from the commit (a reader may see the rows first)
            await until(lambda: rec.tally.filled == 20 and recorded_seq(db, "t04") == 30, 90,
                        "seqs 1 to 20 filled from the stream")
            assert rec.tally.conflicts == 0
    finally:
        await table.__aexit__(None, None, None)
    with open_store(str(db), create=False) as store:
        assert [(e.seq, e.body) for e in store.events("t04")] == sorted(bodies.items())
        assert store.gaps("t04") == []


async def test_the_stream_source_reads_a_range_of_several_batches_from_the_real_stream(floor: Floor) -> None:
    """More than one batch of a table's events (JetStream's batched direct get, continued after the last stream
    seq each batch gave): every seq of the range once, body for body, in stream order. The seqs are far above any
    other test's t01 events, so the search for them is not misled by theirs."""
    user, password = floor.cluster.admin_login()
    source = StreamSource([f"nats://{floor.cluster.bind}:{floor.cluster.node(i).client}" for i in range(3)],
                          user, password)
    run = uuid.uuid4().hex
    first = 1_000_000 + 10_000 * (uuid.UUID(run).int % 1000)
    seqs = range(first, first + BATCH + 100)
    bodies = {s: json.dumps({"seq": s, "ts": 1795334400.0, "type": "tick", "run": run}) for s in seqs}
    table = await connected(floor, 2, "t01")
    try:
        for s in seqs:
            await table.publish("tables/t01/events", bodies[s].encode(), qos=1)
    finally:
        await table.__aexit__(None, None, None)
    found = await source.events("t01", first + 10, first + BATCH + 50)
    assert found == [(s, bodies[s]) for s in range(first + 10, first + BATCH + 51)]
