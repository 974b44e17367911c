"""A table on the floor's cluster loses its node mid-shift: it moves to another node and resends from its
journal, so a subscriber on a third node sees every ``seq`` in order (repeats allowed, never a gap)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from tests.floor.conftest import Floor
from tests.floor.helpers import reading, stream_events, wait_settled

TOTAL = 300
KILL_AT = 100


def _stream_holds_the_tables_own_events_in_order(logged: list[bytes], journal: Journal, last: int) -> None:
    """What the ``TABLES`` stream holds of a table: only the journal's own bodies, in ``seq`` order. Not every
    seq, and not always up to the last: NATS does not acknowledge an MQTT publish on the stream's behalf, and
    events published while the stream elects a leader after a node loss can be missing from it (seen under
    load: docs/floor.md, "Known gaps"; once, in a fresh-clone CI run, everything after the kill: seqs 101-300
    of 300). That gap is issue #26's to close (the recorder reading a persistent QoS 1 session); until then
    this checks what the stream does hold: nothing forged, nothing reordered."""
    bodies = {row.seq: row.body.encode() for row in journal.records(1, last)}
    seqs = _first_seen_in_order(logged)
    assert seqs and seqs == sorted(seqs) and seqs[-1] <= last, seqs
    for p in logged:
        assert bodies[int(json.loads(p)["seq"])] == p


def _first_seen_in_order(payloads: list[bytes]) -> list[int]:
    """The seqs in the order first seen; a repeat must carry the same body as the first (the contract)."""
    first: dict[int, bytes] = {}
    order: list[int] = []
    for p in payloads:
        seq = int(json.loads(p)["seq"])
        if seq in first:
            assert first[seq] == p, f"seq {seq} repeated with another body"
            continue
        first[seq] = p
        order.append(seq)
    return order


async def test_a_table_whose_node_is_killed_moves_to_another_and_nothing_is_lost(floor: Floor,
                                                                                tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t01.journal")
    brokers = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions(brokers, username="t01",
                                                                      password=floor.passwords["t01"], timeout=5.0))
    try:
        async with reading(floor, 2, "sam", "tables/t01/events") as watch, pub:
            await pub.wait_connected(30)
            assert pub.broker_url == brokers[0]  # the first that answers
            for i in range(1, TOTAL + 1):
                _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick", "i": i}])
                pub.publish_state(seqs[-1], {"seq": seqs[-1], "phase": "betting"})
                if i == KILL_AT:
                    floor.cluster.kill(0)  # the table's node is lost mid-shift; the table plays on
                await asyncio.sleep(0.01)
            await pub.wait_drained(90)
            assert pub.broker_url != brokers[0] and pub.connections >= 2
            seen: list[int] = []
            async with asyncio.timeout(90):
                while not (seen := _first_seen_in_order(watch.payloads("tables/t01/events"))) or seen[-1] < TOTAL:
                    watch.changed.clear()
                    await watch.changed.wait()
        assert seen == list(range(1, TOTAL + 1))
        assert journal.delivered_upto == TOTAL
        # the floor's log holds the table's own events, in order, up to the last
        await wait_settled(floor, (1, 2))
        _stream_holds_the_tables_own_events_in_order(await stream_events(floor, "t01"), journal, TOTAL)
    finally:
        journal.close()
        floor.revive()
        await wait_settled(floor, (0, 1, 2))


async def test_a_table_service_playing_rounds_moves_when_its_node_is_killed(floor: Floor, tmp_path: Path) -> None:
    """The demo's table (simulated devices through the real drivers, the table service, its journal) plays
    rounds on the cluster; its node is killed mid-round; a subscriber on a third node sees every seq."""
    import io

    from controller.profiles import load_rules
    from controller.sim.demo import DemoOptions, DemoTable

    opts = DemoOptions(rules=load_rules("house-h17"), rounds=12, seed=3, speed="fast", quiet=True, dashboard=False,
                       tick_every=5.0)
    brokers = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    state = tmp_path / "state"
    state.mkdir()
    table = DemoTable("t03", opts, state, brokers[0], io.StringIO(), brokers=brokers,
                      password=floor.passwords["t03"])
    try:
        async with reading(floor, 2, "sam", "tables/t03/events") as watch:
            play = asyncio.create_task(table.run())
            async with asyncio.timeout(60):
                while table.journal.last_seq < 40:  # a few rounds in, the table's node is lost
                    await asyncio.sleep(0.05)
            assert table.publisher.broker_url == brokers[0]
            floor.cluster.kill(0)
            await asyncio.wait_for(play, 120)
            await table.publisher.wait_drained(90)
            last = table.journal.last_seq
            async with asyncio.timeout(90):
                while not (seen := _first_seen_in_order(watch.payloads("tables/t03/events"))) or seen[-1] < last:
                    watch.changed.clear()
                    await watch.changed.wait()
        assert seen == list(range(1, last + 1))
        assert table.publisher.broker_url != brokers[0]
        assert table.core.table.snapshot()["totals"]["rounds"] == 12
    finally:
        await table.close()
        floor.revive()
        await wait_settled(floor, (0, 1, 2))


async def test_with_two_nodes_lost_the_table_plays_on_and_publishes_everything_when_quorum_returns(
        floor: Floor, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t02.journal")
    brokers = [f"mqtt://{floor.cluster.bind}:{floor.cluster.node(i).mqtt}" for i in range(3)]
    pub = MqttPublisher(journal, table_id="t02", broker=BrokerOptions(brokers, username="t02",
                                                                      password=floor.passwords["t02"], timeout=5.0,
                                                                      backoff_max=1.0))

    def commit(n: int) -> None:
        for _ in range(n):
            i = journal.last_seq + 1
            _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick", "i": i, "table": "t02q"}])
            pub.publish_state(seqs[-1], {"seq": seqs[-1], "phase": "betting"})

    before = len(await stream_events(floor, "t02", node=2))
    try:
        async with pub:
            await pub.wait_connected(30)
            commit(20)
            await pub.wait_drained(30)
            floor.cluster.kill(0)
            floor.cluster.kill(1)  # no quorum: no MQTT client can connect or publish
            for _ in range(40):  # the table plays on, on its journal
                commit(1)
                await asyncio.sleep(0.05)
            assert journal.delivered_upto < journal.last_seq == 60
            floor.cluster.start_node(1)  # a second node back: quorum
            await pub.wait_drained(120)
        assert journal.delivered_upto == 60
        await wait_settled(floor, (1, 2))
        _stream_holds_the_tables_own_events_in_order((await stream_events(floor, "t02", node=2))[before:], journal, 60)
    finally:
        journal.close()
        floor.revive()
        await wait_settled(floor, (0, 1, 2))
