"""The floor's nodes hold a pit login's flood: a 20 MB retained message on a command topic is refused
(``max_payload``), a table's largest message passes (issue 33)."""

from __future__ import annotations

import asyncio
import contextlib

import aiomqtt

from controller.mqtt.limits import MAX_MESSAGE_BYTES
from tests.floor.conftest import Floor
from tests.floor.helpers import connected, reading


async def test_a_pit_logins_retained_20_mb_command_is_refused_by_every_node(floor: Floor) -> None:
    for node in floor.cluster.nodes:
        assert f"max_payload: {MAX_MESSAGE_BYTES}" in (floor.cluster.dir / node.name / "nats.conf").read_text()
    topic = "tables/junk1/cmd/pit/jane.doe/open"
    c = await connected(floor, 0, "jane.doe")
    with contextlib.suppress(aiomqtt.MqttError, TimeoutError):  # the node may close the connection for it
        async with asyncio.timeout(20):
            await c.publish(topic, b"x" * (20 * 1024 * 1024), qos=1, retain=True)
    with contextlib.suppress(aiomqtt.MqttError):
        await c.__aexit__(None, None, None)
    history = b"[" + b" " * (MAX_MESSAGE_BYTES * 9 // 10) + b"]"
    t04 = await connected(floor, 1, "t04")
    try:
        await t04.publish("tables/t04/history", history, qos=1, retain=True)
    finally:
        await t04.__aexit__(None, None, None)
    async with reading(floor, 2, "sam", "tables/junk1/#") as junk, \
            reading(floor, 2, "sam", "tables/t04/history") as kept:
        await kept.wait_for("tables/t04/history", history, timeout=20)
        await asyncio.sleep(2)
    assert junk.messages == [], [(t, len(p)) for t, p, _ in junk.messages]
