"""The generated broker holds a pit login's flood: no 20 MB retained message on a command topic (issue 33),
and a retained command replayed to a table when it connects again is never executed."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import aiomqtt

from controller.contract.results import CommandResult
from controller.contract.topics import CommandTopic
from controller.journal import Journal
from controller.mqtt.limits import MAX_MESSAGE_BYTES
from controller.mqtt.options import BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from controller.service.commands import accepted, parse_command
from tests.mqtt.pit_broker import PIT, Broker
from tests.mqtt_broker import Mosquitto

FLOOD = 20 * 1024 * 1024


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))


async def _try_publish(client: aiomqtt.Client, topic: str, payload: bytes, *, retain: bool) -> None:
    """Publish once; a broker that closes the connection for it (max_packet_size) is what is expected."""
    with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
        async with asyncio.timeout(20):
            async with client:
                await client.publish(topic, payload, qos=1, retain=retain)


async def _retained(broker: Broker, user: str, topic_filter: str, *, within: float = 2.0) -> dict[str, int]:
    """What a fresh subscriber gets as retained messages: topic -> payload size."""
    got: dict[str, int] = {}
    async with broker.client(user, identifier=user) as c:
        await c.subscribe(topic_filter, qos=1)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within):
                async for m in c.messages:
                    if m.retain:
                        got[m.topic.value] = len(m.payload)  # type: ignore[arg-type]
    return got


async def test_a_pit_logins_retained_20_mb_commands_are_refused_by_the_generated_mosquitto(pit: Broker) -> None:
    conf = pit.files.conf.read_text()
    assert f"message_size_limit {MAX_MESSAGE_BYTES}" in conf and "max_packet_size" in conf
    before = _rss_kib(pit.proc.pid)
    flood = b"x" * FLOOD
    for n in range(3):
        await _try_publish(pit.client(PIT, identifier=PIT), f"tables/junk{n}/cmd/pit/{PIT}/open", flood, retain=True)
    assert pit.proc.poll() is None, pit.log()
    # a table's largest message passes: its retained history, nine tenths of the limit
    history = b"[" + b" " * (MAX_MESSAGE_BYTES * 9 // 10) + b"]"
    async with pit.client("t01", identifier="t01") as table:
        await table.publish("tables/t01/history", history, qos=1, retain=True)
    seen = await _retained(pit, "dashboard", "tables/#")
    assert not [t for t in seen if "/cmd/" in t], seen  # none of the flood was kept
    assert seen.get("tables/t01/history") == len(history), seen
    assert _rss_kib(pit.proc.pid) - before < 16 * 1024, "the broker held the flood"


async def test_a_retained_command_replayed_when_the_table_connects_again_is_never_executed(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    executed: list[tuple[str, Any]] = []

    async def handle(command: CommandTopic, payload: bytes) -> CommandResult:
        cmd = parse_command(command.verb, payload, user=command.user)
        if isinstance(cmd, CommandResult):
            return cmd
        executed.append((command.verb, cmd))
        return accepted(cmd, seq=len(executed))

    journal = Journal(tmp_path / "t.journal")
    try:
        async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]),
                                 on_command=handle) as pub:
            await pub.wait_connected(5)
            await asyncio.sleep(0.2)  # subscribed
            async with aiomqtt.Client(mosquitto.host, mosquitto.port) as pit:
                # sent live, the broker passes it on unretained: the person's command, taken once
                await pit.publish("tables/t01/cmd/pit/s.jones/close", b'{"id": "live"}', qos=1, retain=True)
            async with asyncio.timeout(5):
                while not executed:
                    await asyncio.sleep(0.05)
        for _ in range(2):  # the table starts again, twice: the broker replays the retained copy each time
            async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions([mosquitto.url]),
                                     on_command=handle) as pub:
                await pub.wait_connected(5)
                await asyncio.sleep(1.0)
    finally:
        journal.close()
    assert [verb for verb, _ in executed] == ["close"], executed
