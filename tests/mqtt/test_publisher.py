"""The MQTT publisher against a real Mosquitto: order, no gaps, outages, last will, commands."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic, topic_root
from controller.journal import Journal
from controller.mqtt.addresses import client_id_for, parse_broker_url
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MemoryPublisher, MqttPublisher, Publisher
from controller.service.commands import accepted, parse_command
from tests.mqtt.mqtt_helpers import Recorder, recording
from tests.mqtt_broker import Mosquitto

ROOT = Path(__file__).resolve().parents[2]


def _commit(journal: Journal, n: int, publisher: MqttPublisher | MemoryPublisher | None = None) -> None:
    """n input events, each with one record and a state following it (as the service does)."""
    for _ in range(n):
        i = journal.last_input_id + 1
        _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick", "i": i}])
        if publisher is not None:
            publisher.publish_state(seqs[-1], {"seq": seqs[-1], "phase": "betting"})
            publisher.notify()


def _assert_states_follow_their_events(rec: Recorder, prefix: str = "tables/t01") -> None:
    """Every state arrives after the event whose seq it carries (subscriber sees every phase)."""
    highest = 0
    for m in rec.messages:
        if m.topic == f"{prefix}/events":
            highest = max(highest, m.json()["seq"])
        elif m.topic == f"{prefix}/state":
            assert m.json()["seq"] <= highest, f"state {m.json()['seq']} before its event (seen {highest})"


async def test_events_arrive_gapless_in_seq_order_with_each_state_after_its_event(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "t01.journal")
    async with recording(mosquitto.host, mosquitto.port, "tables/t01/#") as rec:
        pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]))
        async with pub:
            await pub.wait_connected(5)
            for burst in (1, 7, 50, 200, 3):
                _commit(journal, burst, pub)
                await asyncio.sleep(0)
            await pub.wait_drained(10)
            await rec.wait_for(lambda r: len(r.on("/events")) >= 261 and len(r.on("/state")) >= 261)
        await rec.wait_for(lambda r: r.on("/status")[-1].payload == b"offline")
    assert rec.event_seqs() == list(range(1, 262))
    assert [m.json()["seq"] for m in rec.on("/state")] == list(range(1, 262))
    assert all(m.json()["i"] == m.json()["seq"] for m in rec.on("/events"))
    _assert_states_follow_their_events(rec)
    assert [m.payload for m in rec.on("/status")] == [b"online", b"offline"]
    assert journal.delivered_upto == journal.last_seq == 261
    journal.close()


async def test_wait_drained_returns_while_the_table_keeps_publishing(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """Drained = everything queued before the call acknowledged, even if more keeps coming."""
    journal = Journal(tmp_path / "t01.journal")
    async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url])) as pub:
        await pub.wait_connected(5)
        stop = asyncio.Event()

        async def busy_table() -> None:  # a table that never pauses: a record and a state every turn
            while not stop.is_set():
                _commit(journal, 1, pub)
                await asyncio.sleep(0)

        producer = asyncio.create_task(busy_table())
        try:
            await asyncio.sleep(0.2)
            queued = journal.last_seq
            await pub.wait_drained(10)
            assert journal.delivered_upto >= queued
            assert not producer.done()
        finally:
            stop.set()
            await producer


async def test_an_idle_publisher_leaves_the_cpu_alone(mosquitto: Mosquitto, tmp_path: Path) -> None:
    """After a burst is acknowledged nothing stays registered for writing, so the loop sleeps.

    (A writer left watching the always-writable socket woke the loop at every turn: a core
    spent on nothing.)
    """
    journal = Journal(tmp_path / "t01.journal")
    async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url])) as pub:
        await pub.wait_connected(5)
        for burst in (1, 20, 5):
            _commit(journal, burst, pub)
            await asyncio.sleep(0)
        await pub.wait_drained(10)
        cpu = time.process_time()
        await asyncio.sleep(0.5)
        assert time.process_time() - cpu < 0.2, "the event loop kept running with nothing to do"


async def test_late_subscriber_gets_retained_status_state_and_alarms(mosquitto: Mosquitto, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t.journal")
    async with MqttPublisher(journal, table_id="t07", broker=BrokerOptions([mosquitto.url]), prefix="pit/a") as pub:
        _commit(journal, 3, pub)
        pub.publish_alarms([{"id": 1, "code": "deck_change_due"}])
        await pub.wait_drained(5)
        async with recording(mosquitto.host, mosquitto.port, "pit/a/t07/#") as rec:
            await rec.wait_for(lambda r: len(r.messages) >= 3)
            await asyncio.sleep(0.1)
            retained = {m.topic: m.payload for m in rec.messages if m.retain}
    assert retained["pit/a/t07/status"] == b"online"
    assert json.loads(retained["pit/a/t07/state"])["seq"] == 3
    assert json.loads(retained["pit/a/t07/alarms"]) == [{"id": 1, "code": "deck_change_due"}]
    assert not any(m.topic.endswith("/events") for m in rec.messages), "events must not be retained"
    journal.close()


async def test_broker_outage_loses_nothing_and_publisher_never_blocks(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path / "broker", persistence=True)
    broker.start()
    journal = Journal(tmp_path / "t.journal")
    try:
        async with (
            recording(
                broker.host, broker.port, "tables/t01/events", client_id="sub-persist", clean_session=False
            ) as rec,
            MqttPublisher(journal, table_id="t01", broker=BrokerOptions([broker.url], backoff_max=0.5)) as pub,
        ):
            _commit(journal, 40, pub)
            await rec.wait_for(lambda r: len(r.on("/events")) >= 40)
        broker.stop()  # outage: the subscriber's session (QoS 1) is persisted by the broker
        pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([broker.url], backoff_max=0.3))
        await pub.start()
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        _commit(journal, 60, pub)  # the service goes on while the broker is away
        # 60 fsync'd commits take ~20 ms on a quiet machine and more under load; waiting on the absent
        # broker would stall for its connect timeout and backoff (seconds), which this bound catches.
        assert loop.time() - t0 < 3.0, "committing and notifying must not wait for the broker"
        await asyncio.sleep(0.5)
        assert not pub.connected
        assert journal.delivered_upto == 40
        broker.start()
        await pub.wait_drained(10)
        _commit(journal, 5, pub)
        await pub.wait_drained(5)
        async with recording(
            broker.host, broker.port, "tables/t01/events", client_id="sub-persist", clean_session=False
        ) as rec2:
            await rec2.wait_for(lambda r: bool(r.event_seqs()) and r.event_seqs()[-1] == 105)
        await pub.close()
        seqs = rec.event_seqs() + rec2.event_seqs()
        # Every seq in order, no gap; the reconnected publisher repeats its last acknowledged window
        # (same seq, same body), which the contract allows and a subscriber skips.
        assert _first_sightings(rec.messages + rec2.messages) == list(range(1, 106)), seqs
        assert pub.connections == 1
    finally:
        journal.close()
        broker.close()


async def test_broker_restart_without_persistence_republishes_retained_state(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    journal = Journal(tmp_path / "t.journal")
    async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url], backoff_max=0.2)) as pub:
        _commit(journal, 5, pub)
        await pub.wait_drained(5)
        mosquitto.stop()
        await asyncio.sleep(0.3)
        mosquitto.start()
        await pub.wait_connected(5)
        await pub.wait_drained(5)
        async with recording(mosquitto.host, mosquitto.port, "tables/t01/#") as rec:
            await rec.wait_for(lambda r: len(r.on("/state")) >= 1 and len(r.on("/status")) >= 1)
        assert rec.on("/state")[-1].json()["seq"] == 5
        assert rec.on("/status")[-1].payload == b"online"
        assert pub.connections == 2
    journal.close()


async def test_new_publisher_resumes_after_the_last_acknowledged_seq(mosquitto: Mosquitto, tmp_path: Path) -> None:
    path = tmp_path / "t.journal"
    with Journal(path) as journal:
        _commit(journal, 30)
        journal.mark_delivered(12)  # as if the previous process died here
    journal = Journal(path)
    async with (
        recording(mosquitto.host, mosquitto.port, "tables/t01/events") as rec,
        MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]), resend=0) as pub,
    ):
        await pub.wait_drained(5)
        _commit(journal, 2, pub)
        await pub.wait_drained(5)
        await rec.wait_for(lambda r: len(r.on("/events")) >= 20)
    assert rec.event_seqs() == list(range(13, 33))
    journal.close()


async def test_a_connection_repeats_the_last_acknowledged_window_then_goes_on(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    """A broker may lose a message it acknowledged (stopped while holding it): the newest
    acknowledged events are sent again, in order, with the same seq and body."""
    path = tmp_path / "t01.journal"
    with Journal(path) as journal:
        _commit(journal, 30)
        journal.mark_delivered(12)
        bodies = {row.seq: row.body.encode() for row in journal.records()}
    journal = Journal(path)
    async with (
        recording(mosquitto.host, mosquitto.port, "tables/t01/events") as rec,
        MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]), resend=5) as pub,
    ):
        await pub.wait_drained(5)
        await rec.wait_for(lambda r: len(r.on("/events")) >= 23)
    assert rec.event_seqs() == list(range(8, 31))
    assert all(m.payload == bodies[m.json()["seq"]] for m in rec.on("/events"))
    journal.close()


def _first_sightings(messages: list[Any]) -> list[int]:
    """Event seqs in the order first seen; a repeat must carry the same body as the first time."""
    first: dict[int, bytes] = {}
    order: list[int] = []
    for m in messages:
        if not m.topic.endswith("/events"):
            continue
        seq = int(m.json()["seq"])
        if seq in first:
            assert first[seq] == m.payload, f"seq {seq} repeated with another body"
            continue
        first[seq] = m.payload
        order.append(seq)
    return order


_KILLED_PUBLISHER = """
import asyncio, sys
from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.journal import Journal
from controller.mqtt.publisher import MqttPublisher

async def main():
    pub = MqttPublisher(Journal(sys.argv[2]), table_id="t09", broker=BrokerOptions([sys.argv[1]], keepalive=60))
    await pub.start()
    await pub.wait_connected(10)
    print("up", flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


async def test_last_will_marks_the_table_offline_when_the_process_is_killed(
    mosquitto: Mosquitto, tmp_path: Path
) -> None:
    async with recording(mosquitto.host, mosquitto.port, "tables/t09/status") as rec:
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED_PUBLISHER, mosquitto.url, str(tmp_path / "t09.journal")],
            stdout=subprocess.PIPE,
            cwd=ROOT,
        )
        try:
            await rec.wait_for(lambda r: [m.payload for m in r.messages] == [b"online"])
            os.kill(proc.pid, signal.SIGKILL)
            await rec.wait_for(lambda r: r.messages[-1].payload == b"offline", timeout=5)
        finally:
            proc.kill()
            proc.wait()
    async with recording(mosquitto.host, mosquitto.port, "tables/t09/status") as late:
        await late.wait_for(lambda r: bool(r.messages))
    assert (late.messages[0].payload, late.messages[0].retain) == (b"offline", True)


async def test_commands_are_answered_on_their_result_topic(mosquitto: Mosquitto, tmp_path: Path) -> None:
    seen: list[Any] = []

    async def handle(command: CommandTopic, payload: bytes) -> CommandResult:
        cmd = parse_command(command.verb, payload, user=command.user)
        if isinstance(cmd, CommandResult):
            return cmd
        seen.append((command.role, cmd))
        return accepted(cmd, seq=99)

    import aiomqtt

    async with aiomqtt.Client(mosquitto.host, mosquitto.port) as pit:
        # A retained command would be replayed at every (re)subscribe: it is ignored.
        await pit.publish("tables/t01/cmd/pit/s.jones/close", b"{}", qos=1, retain=True)
    journal = Journal(tmp_path / "t.journal")
    async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]), on_command=handle) as pub:
        await pub.wait_connected(5)
        await asyncio.sleep(0.1)  # subscription in place
        async with recording(mosquitto.host, mosquitto.port, "tables/t01/cmd/+/+/+/result") as rec:
            async with aiomqtt.Client(mosquitto.host, mosquitto.port) as pit:
                await pit.publish("tables/t01/cmd/pit/s.jones/set_limits",
                                  b'{"min_bet": "5", "max_bet": "1", "id": "a"}', qos=1)
                await pit.publish("tables/t01/cmd/pit/s.jones/set_limits",
                                  b'{"min_bet": "5", "max_bet": "500", "id": "b", "operator": "s.jones"}', qos=1)
                await pit.publish("tables/t01/cmd/surveillance/eye/ack_alarm", b"{oops", qos=1)
                await pit.publish("tables/t02/cmd/pit/s.jones/close", b"{}", qos=1)  # another table
                await pit.publish("tables/t01/cmd/close", b"{}", qos=1)  # no sender: not a command topic
                await pit.publish("tables/t01/cmd/pit/s.jones/close/result", b"{}", qos=1)  # a result, not a command
            await rec.wait_for(lambda r: len(r.messages) >= 4)
            await asyncio.sleep(0.2)
    results = [(m.topic, m.json()) for m in rec.messages if m.payload != b"{}"]
    assert results[0] == (
        "tables/t01/cmd/pit/s.jones/set_limits/result",
        {"ok": False, "verb": "set_limits", "id": "a", "operator": "s.jones",
         "error": "max_bet: must not be below min_bet (5)"},
    )
    assert results[1] == ("tables/t01/cmd/pit/s.jones/set_limits/result",
                          {"ok": True, "verb": "set_limits", "id": "b", "operator": "s.jones", "seq": 99})
    assert results[2][0] == "tables/t01/cmd/surveillance/eye/ack_alarm/result"
    assert results[2][1]["ok"] is False and "malformed JSON" in results[2][1]["error"]
    assert len(results) == 3, results
    assert [(role, cmd.operator) for role, cmd in seen] == [("pit", "s.jones")]
    journal.close()


async def test_close_while_broker_is_down_returns_promptly(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t.journal")
    pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions(["mqtt://127.0.0.1:9"], backoff_max=5.0))
    await pub.start()
    _commit(journal, 3, pub)
    await asyncio.sleep(0.2)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await pub.close(timeout=0.5)
    assert loop.time() - t0 < 2.0
    assert journal.delivered_upto == 0  # nothing lost: still in the outbox for next time
    journal.close()


def test_publishers_satisfy_the_protocol(tmp_path: Path) -> None:
    async def build() -> None:
        journal = Journal(tmp_path / "t.journal")
        assert isinstance(MqttPublisher(journal, table_id="t01"), Publisher)
        assert isinstance(MemoryPublisher(journal), Publisher)
        journal.close()

    asyncio.run(build())


async def test_memory_publisher_publishes_outbox_in_order(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t.journal")
    pub = MemoryPublisher(journal)
    _commit(journal, 2)
    await pub.start()
    _commit(journal, 3, pub)
    await pub.close()
    assert [e["seq"] for e in pub.events()] == [1, 2, 3, 4, 5]
    assert pub.retained["tables/t01/status"] == b"offline"
    assert json.loads(pub.retained["tables/t01/state"])["seq"] == 5
    journal.close()


@pytest.mark.parametrize(
    ("url", "host", "port", "tls", "transport"),
    [
        ("mqtt://127.0.0.1:1883", "127.0.0.1", 1883, False, "tcp"),
        ("mqtts://broker.pit:8884", "broker.pit", 8884, True, "tcp"),
        ("mqtts://broker.pit", "broker.pit", 8883, True, "tcp"),
        ("ws://127.0.0.1:9001/mqtt", "127.0.0.1", 9001, False, "websockets"),
        ("wss://pit.example", "pit.example", 443, True, "websockets"),
    ],
)
def test_broker_urls(url: str, host: str, port: int, tls: bool, transport: str) -> None:
    a = parse_broker_url(url)
    assert (a.host, a.port, a.tls, a.transport) == (host, port, tls, transport)


@pytest.mark.parametrize("url", ["http://x", "mqtt://", "127.0.0.1:1883", "mqtt://h:99999"])
def test_bad_broker_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="broker URL"):
        parse_broker_url(url)


def test_topic_root_and_client_id_hold_prefix_and_table() -> None:
    assert topic_root("tables", "t01") == "tables/t01"
    assert topic_root("casino/pit2/", "t03") == "casino/pit2/t03"
    assert client_id_for("casino/pit2", "t03") == "tablectl-casino-pit2-t03"
    assert client_id_for("casino.floor/pit2", "t03") == "tablectl-casino_floor-pit2-t03"  # NATS refuses a '.' in one
    assert client_id_for("a", "t01") != client_id_for("b", "t01")


async def test_a_publisher_never_started_is_drained_at_once(tmp_path: Path) -> None:
    """A resumed demo with no rounds left stops each table's service: each stop used to wait out its
    drain timeout on a publisher that never started (3 s a table: a 20-table pit took a minute to exit)."""
    journal = Journal(tmp_path / "t01.journal")
    pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions(["mqtt://127.0.0.1:1"]))
    async with asyncio.timeout(0.5):
        await pub.wait_drained(timeout=30)
        await pub.close(timeout=30)
    journal.close()
