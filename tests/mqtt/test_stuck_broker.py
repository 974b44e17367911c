"""A broker that accepts the table's connection and then answers nothing more (a NATS node whose JetStream is
electing leaders after a node loss: CONNACK given, the status PUBACK and the commands' SUBACK not) is left for
the next broker within NATS's own bound on those answers (its MQTT ``js_api_timeout``, 5 s): waiting longer
only kept a pit's screens dark (issue #40: 10 s lost per move in ``benchmarks/node_loss.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from controller.journal import Journal
from controller.mqtt.options import NATS_JS_API_TIMEOUT_S, BrokerOptions
from controller.mqtt.publisher import MqttPublisher
from tests.mqtt.mqtt_helpers import recording
from tests.mqtt_broker import Mosquitto

CONNACK = bytes([0x20, 0x02, 0x00, 0x00])


@asynccontextmanager
async def stuck_broker() -> AsyncIterator[int]:
    """A listener that answers each CONNECT with a CONNACK, then reads and answers nothing; its port."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read(1024)
            writer.write(CONNACK)
            await writer.drain()
            while await reader.read(4096):
                pass
        except ConnectionError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def test_a_broker_that_connacks_then_answers_nothing_is_left_within_natss_bound(
        mosquitto: Mosquitto, tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t01.journal")
    try:
        async with stuck_broker() as port, recording(mosquitto.host, mosquitto.port, "tables/t01/#") as rec:
            pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([f"mqtt://127.0.0.1:{port}",
                                                                               mosquitto.url]))
            start = time.monotonic()
            async with pub:
                await pub.wait_connected(30)  # the stuck broker's CONNACK counts as connected
                journal.commit_event({"type": "tick"}, [{"type": "tick"}])
                pub.notify()
                await rec.wait_for(lambda r: r.event_seqs() == [1], timeout=30)
                moved_after = time.monotonic() - start
        assert pub.broker_url == mosquitto.url
        assert moved_after < NATS_JS_API_TIMEOUT_S + 2.0, moved_after
    finally:
        journal.close()
