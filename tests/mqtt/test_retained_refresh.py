"""The table publishes its retained payloads again after a quiet period (``retained_refresh``), on a real Mosquitto.

A NATS cluster losing its quorum can acknowledge a retained ``state`` it then fails to store ("unable to store
retained message ... timeout"): the broker's copy stays older than the table's, and a subscriber that comes later (a
dashboard opened now) gets that older copy until the table publishes again (docs/floor.md, "What a node loss and a
quorum loss do"). Here a client of the broker (Mosquitto without an ACL) overwrites and clears the table's retained
messages the way such a failed store leaves them.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from tests.mqtt.mqtt_helpers import recording
from tests.mqtt_broker import Mosquitto

ROOT_TOPIC = "tables/t01"


def _commit(journal: Journal, n: int, publisher: MqttPublisher) -> None:
    """n input events, each with one record and a state following it (as the service does)."""
    for _ in range(n):
        i = journal.last_input_id + 1
        _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick", "i": i}])
        publisher.publish_state(seqs[-1], {"seq": seqs[-1], "ts": time.time(), "phase": "betting",
                                           "dealer": {"cards": ["AS", None]}})


async def _retained(broker: Mosquitto, topic: str = f"{ROOT_TOPIC}/#", settle: float = 0.3) -> dict[str, bytes]:
    """What a subscriber that subscribes now gets: the broker's retained copies (a dashboard opened now)."""
    async with recording(broker.host, broker.port, topic) as rec:
        await asyncio.sleep(settle)
    return {m.topic: m.payload for m in rec.messages if m.retain}


async def _damage(broker: Mosquitto, older_state: bytes) -> None:
    """Leave the broker's retained copies as a failed store does: an older ``state``, the rest not stored."""
    async with aiomqtt.Client(broker.host, broker.port, identifier="failed-store") as client:
        await client.publish(f"{ROOT_TOPIC}/state", older_state, qos=1, retain=True)
        for name in ("alarms", "history", "analytics", "ratings/open"):
            await client.publish(f"{ROOT_TOPIC}/{name}", b"", qos=1, retain=True)  # an empty retained: deleted
        await client.publish(f"{ROOT_TOPIC}/status", b"offline", qos=1, retain=True)


async def _table(journal: Journal, pub: MqttPublisher) -> None:
    await pub.wait_connected(5)
    _commit(journal, 5, pub)
    pub.publish_alarms([{"id": 1, "code": "deck_change_due"}])
    pub.publish_history([{"round": 1}])
    pub.publish_analytics({"hold": "0.02"})
    pub.publish_open_ratings([{"rating_id": "r1", "spot": 3}])
    await pub.wait_drained(5)


async def test_a_stale_retained_state_is_replaced_by_the_tables_newest_within_the_refresh_period(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "t01.journal")
    async with (
        recording(mosquitto.host, mosquitto.port, f"{ROOT_TOPIC}/state") as live,
        MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]), retained_refresh=0.5) as pub,
    ):
        await _table(journal, pub)
        newest = await _retained(mosquitto)
        assert json.loads(newest[f"{ROOT_TOPIC}/state"])["seq"] == 5
        assert set(newest) >= {f"{ROOT_TOPIC}/{t}" for t in
                               ("state", "alarms", "history", "analytics", "ratings/open", "status")}
        older = next(m.payload for m in live.messages if m.json()["seq"] == 1)
        damaged_at = len(live.messages)
        await _damage(mosquitto, older)
        started = time.monotonic()
        while True:  # a dashboard opened now, and again, until it gets the table's newest
            now = await _retained(mosquitto, settle=0.1)
            if now == newest or time.monotonic() - started > 10:
                break
        took = time.monotonic() - started
        assert now == newest, "the broker's copies were left older than the table's"
        assert journal.last_seq == 5, "the table published nothing new meanwhile"
    # the subscriber there all along saw the older copy, then the table's newest again: the same bytes (seq, ts)
    after = [m.payload for m in live.messages[damaged_at:]]
    assert older in after
    assert newest[f"{ROOT_TOPIC}/state"] in after[after.index(older) + 1:]
    assert took < 5, f"replaced after {took:.1f} s with a refresh every 0.5 s"
    journal.close()


async def test_with_the_refresh_off_a_stale_copy_stays_until_the_table_publishes_again(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "t01.journal")
    async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]), retained_refresh=0) as pub:
        await _table(journal, pub)
        newest = await _retained(mosquitto)
        older = json.dumps({"seq": 1}).encode()
        await _damage(mosquitto, older)
        await asyncio.sleep(1.5)
        now = await _retained(mosquitto)
        assert now[f"{ROOT_TOPIC}/state"] == older
        assert now[f"{ROOT_TOPIC}/status"] == b"offline"
        assert f"{ROOT_TOPIC}/alarms" not in now
        _commit(journal, 1, pub)
        await pub.wait_drained(5)
        assert json.loads((await _retained(mosquitto))[f"{ROOT_TOPIC}/state"])["seq"] == 6
    assert newest[f"{ROOT_TOPIC}/state"] != older
    journal.close()


async def test_refreshes_between_bursts_never_send_a_state_older_than_one_sent(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """A table that plays in bursts with quiet spells longer than the refresh: its states at a subscriber never go
    back, each follows its event, and the quiet spells did get their refreshes (the same bytes again)."""
    journal = Journal(tmp_path / "t01.journal")
    async with recording(mosquitto.host, mosquitto.port, f"{ROOT_TOPIC}/#") as rec:
        async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]),
                                 retained_refresh=0.1) as pub:
            await pub.wait_connected(5)
            for burst in (3, 40, 1, 25, 7):
                for _ in range(burst):
                    _commit(journal, 1, pub)
                    await asyncio.sleep(0)
                await asyncio.sleep(0.35)
            await pub.wait_drained(5)
        await rec.wait_for(lambda r: bool(r.on("/status")) and r.on("/status")[-1].payload == b"offline")
    highest_event = 0
    states: list[Any] = []
    for m in rec.messages:
        if m.topic.endswith("/events"):
            highest_event = max(highest_event, m.json()["seq"])
        elif m.topic.endswith("/state"):
            seq = m.json()["seq"]
            assert seq <= highest_event, f"state {seq} before its event"
            assert not states or seq >= states[-1][0], f"state {seq} after state {states[-1][0]}"
            if states and seq == states[-1][0]:
                assert m.payload == states[-1][1], "a refresh sends the same bytes"
            states.append((seq, m.payload))
    seqs = [seq for seq, _ in states]
    assert len(seqs) > len(set(seqs)), "no refresh in the quiet spells"
    assert seqs[-1] == journal.last_seq == 76
    journal.close()


def test_a_bad_refresh_period_is_refused(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t01.journal")
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="retained_refresh"):
            MqttPublisher(journal, table_id="t01", retained_refresh=bad)
    journal.close()

