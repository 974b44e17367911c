"""The demo's embedded amqtt broker: TCP and WebSockets on loopback, usable by the publisher."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiomqtt
import pytest

from controller.broker import BrokerStartError, EmbeddedBroker
from controller.journal import Journal
from controller.publisher import MqttPublisher
from tests.service.mqtt_helpers import recording


async def test_tcp_and_websocket_clients_exchange_messages() -> None:
    async with EmbeddedBroker() as broker:
        assert broker.url == f"mqtt://127.0.0.1:{broker.port}"
        assert broker.ws_url == f"ws://127.0.0.1:{broker.ws_port}"
        async with (
            aiomqtt.Client(broker.host, broker.ws_port, transport="websockets", websocket_path="/") as ws,
            aiomqtt.Client(broker.host, broker.port) as tcp,
        ):
            await ws.subscribe("demo/x", qos=1)
            await tcp.publish("demo/x", b"hi", qos=1)
            async with asyncio.timeout(5):
                async for m in ws.messages:
                    assert m.payload == b"hi"
                    break
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", broker.port)) != 0, "listener still open after stop"


async def test_publisher_runs_against_the_embedded_broker(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t.journal")
    async with EmbeddedBroker() as broker, recording(broker.host, broker.port, "tables/t01/#") as rec:
        async with MqttPublisher(journal, table_id="t01", broker_url=broker.url) as pub:
            for i in range(20):
                _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick"}])
                pub.publish_state(seqs[-1], {"seq": seqs[-1]})
            await pub.wait_drained(5)
            await rec.wait_for(lambda r: len(r.on("/events")) >= 20)
        await rec.wait_for(lambda r: r.on("/status")[-1].payload == b"offline")
    assert rec.event_seqs() == list(range(1, 21))
    journal.close()


async def test_a_taken_port_is_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(BrokerStartError, match=str(port)):
            await EmbeddedBroker(port=port).start()
