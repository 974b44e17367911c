"""A table on the floor's cluster loses its node mid-shift: it moves to another node and resends from its
journal, so a subscriber on a third node sees every ``seq`` in order (repeats allowed, never a gap)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from controller.mqtt.publisher import MqttPublisher
from controller.service.journal import Journal
from tests.floor.conftest import Floor
from tests.floor.helpers import reading, wait_settled

TOTAL = 300
KILL_AT = 100


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
    pub = MqttPublisher(journal, table_id="t01", brokers=brokers, username="t01", password=floor.passwords["t01"],
                        timeout=5.0)
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
    finally:
        journal.close()
        floor.revive()
        await wait_settled(floor, (0, 1, 2))
