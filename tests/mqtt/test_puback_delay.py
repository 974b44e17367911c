"""The brokers the product configures acknowledge a burst at once: no PUBACK held back by Nagle.

Mosquitto leaves Nagle on unless told (``set_tcp_nodelay``): after a burst of QoS 1 publishes the second of
two PUBACKs waits for the client's delayed ACK, at least 40 ms on Linux, at the end of every burst of a
table's publishes (its delivered mark, a drain at close). Measured before the fix on this machine: a burst of
three publishes acknowledged in 42 ms (median of 30) on four connections of six, 0.2 ms on the others; with
``set_tcp_nodelay true`` 0.2 ms on every one. Run on real Mosquittos: the pit's, as ``tablectl
broker-config`` writes it, and the one the demo and the tests start (:mod:`controller.mqtt.mosquitto`).
"""

from __future__ import annotations

import asyncio
import statistics
import time

from controller.mqtt.client import MqttClient
from tests.mqtt.pit_broker import Broker
from tests.mqtt_broker import Mosquitto

BURSTS = 15
#: a burst's PUBACKs held by Nagle come after the client's delayed ACK: 40 ms at the least (Linux's TCP_DELACK_MIN)
HELD_MS = 40.0


async def _burst_ms(client: MqttClient, topic: str) -> list[float]:
    """Milliseconds from the flush of three QoS 1 publishes to their last PUBACK, for each of BURSTS bursts."""
    client.tune_socket()  # our side never holds a publish back (the publisher's setting)
    times = []
    for _ in range(BURSTS):
        acked = [client.publish_now(topic, b"x" * 100, retain=False) for _ in range(3)]
        t = time.monotonic()
        client.flush()
        await asyncio.wait_for(asyncio.gather(*(a.wait() for a in acked)), 5)
        times.append((time.monotonic() - t) * 1e3)
        await asyncio.sleep(0.01)
    return times


async def test_the_pits_broker_acknowledges_a_tables_burst_at_once(pit_shared: Broker) -> None:
    assert "\nset_tcp_nodelay true\n" in pit_shared.files.conf.read_text()
    async with MqttClient("127.0.0.1", pit_shared.port, identifier="t01", username="t01",
                          password=pit_shared.password("t01")) as table:
        times = await _burst_ms(table, "tables/t01/events")
    assert statistics.median(times) < HELD_MS / 2, times


async def test_the_demos_broker_acknowledges_a_burst_at_once(mosquitto: Mosquitto) -> None:
    async with MqttClient(mosquitto.host, mosquitto.port, identifier="burst") as client:
        times = await _burst_ms(client, "tables/t01/events")
    assert statistics.median(times) < HELD_MS / 2, times
