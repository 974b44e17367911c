"""MQTT clients of the floor's tests: a named user on one node, recording what it reads."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiomqtt

from tests.floor.conftest import Floor

_ids = itertools.count(1)


@dataclass
class Reader:
    """What a subscription received, in order: (topic, payload, retained)."""

    messages: list[tuple[str, bytes, bool]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def topics(self) -> list[str]:
        return [t for t, _, _ in self.messages]

    def payloads(self, topic: str) -> list[bytes]:
        return [p for t, p, _ in self.messages if t == topic]

    async def wait_for(self, topic: str, payload: bytes | None = None, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while not any(t == topic and (payload is None or p == payload) for t, p, _ in self.messages):
                self.changed.clear()
                await self.changed.wait()


def client(floor: Floor, node: int, user: str, *, websockets: bool = False,
           client_id: str | None = None) -> aiomqtt.Client:
    host, port = floor.ws(node) if websockets else floor.mqtt(node)
    return aiomqtt.Client(host, port, username=user, password=floor.passwords[user],
                          identifier=client_id or f"test-{user.replace('.', '_')}-{next(_ids)}",
                          transport="websockets" if websockets else "tcp",
                          websocket_path="/mqtt" if websockets else None, timeout=10)


async def connected(floor: Floor, node: int, user: str, *, websockets: bool = False,
                    client_id: str | None = None, within: float = 30.0) -> aiomqtt.Client:
    """A connected client, retrying as a real one does: for a few seconds after a node is lost NATS
    refuses MQTT connections while JetStream elects new leaders for the streams the lost node led."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        c = client(floor, node, user, websockets=websockets, client_id=client_id)
        try:
            await c.__aenter__()
            return c
        except aiomqtt.MqttError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


@contextlib.asynccontextmanager
async def reading(floor: Floor, node: int, user: str, topic: str, *,
                  websockets: bool = False) -> AsyncIterator[Reader]:
    """``user`` on ``node`` subscribed to ``topic`` (QoS 1), recording until the block ends."""
    reader = Reader()
    deadline = asyncio.get_running_loop().time() + 30.0
    while True:  # a QoS 1 subscription made while JetStream elects leaders is refused: subscribe again
        c = await connected(floor, node, user, websockets=websockets)
        granted = await c.subscribe(topic, qos=1)
        if not any(int(getattr(q, "value", q)) >= 0x80 for q in granted):
            break
        with contextlib.suppress(aiomqtt.MqttError):
            await c.__aexit__(None, None, None)
        if asyncio.get_running_loop().time() > deadline:
            raise aiomqtt.MqttError(f"subscription of {user} to {topic} refused on node {node}")
        await asyncio.sleep(0.5)
    try:
        async def pump() -> None:
            async for m in c.messages:
                payload = m.payload if isinstance(m.payload, bytes | bytearray) else str(m.payload).encode()
                reader.messages.append((m.topic.value, bytes(payload), bool(m.retain)))
                reader.changed.set()

        task = asyncio.create_task(pump())
        try:
            yield reader
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                await task
    finally:
        with contextlib.suppress(aiomqtt.MqttError):
            await c.__aexit__(None, None, None)


async def publish(floor: Floor, node: int, user: str, topic: str, payload: bytes, *, retain: bool = False) -> None:
    """Publish once (QoS 1) as ``user`` on ``node``; NATS acknowledges even what it refuses to pass on."""
    c = await connected(floor, node, user)
    try:
        await c.publish(topic, payload, qos=1, retain=retain)
    finally:
        await c.__aexit__(None, None, None)


async def read_retained(floor: Floor, node: int, user: str, topic: str, *, within: float = 40.0,
                        websockets: bool = False) -> bytes:
    """The retained message of ``topic`` as ``user`` reads it on ``node``, subscribing again until it comes.

    For about five seconds after a node is lost NATS answers a subscription without its retained message
    (the retained-message stream elects a new leader; the server logs "error loading retained messages"):
    a client that subscribes again afterwards gets it. A real dashboard gets the next ``state`` anyway.
    """
    deadline = asyncio.get_running_loop().time() + within
    while True:
        async with reading(floor, node, user, topic, websockets=websockets) as reader:
            with contextlib.suppress(TimeoutError):
                await reader.wait_for(topic, timeout=2.0)
        if reader.messages:
            return reader.messages[-1][1]
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"no retained message on {topic} at node {node} within {within:g} s")


async def wait_settled(floor: Floor, nodes: tuple[int, ...], *, within: float = 60.0) -> float:
    """Wait until a message published on each node reaches a subscriber on every node; the seconds it took.

    For several seconds after a node is lost NATS refuses MQTT connections, answers subscriptions without
    their retained messages, or fails to create the JetStream consumer of a QoS 1 subscription (the
    streams the lost node led elect new leaders). This waits that window out, so a test checks the floor
    once it has settled, and says how long the window was.
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    for node in nodes:
        while True:
            probe = f"probe-{uuid.uuid4()}".encode()
            try:
                async with reading(floor, node, "sam", "tables/t04/events") as reader:
                    for source in nodes:
                        await publish(floor, source, "t04", "tables/t04/events", probe)
                    await reader.wait_for("tables/t04/events", probe, timeout=3.0)
                    if len(reader.payloads("tables/t04/events")) >= len(nodes):
                        break
            except (TimeoutError, aiomqtt.MqttError):
                pass
            if loop.time() - start > within:
                raise TimeoutError(f"the floor did not settle within {within:g} s")
    return loop.time() - start


async def stream_events(floor: Floor, table: str, *, node: int = 1) -> list[bytes]:
    """Every message the ``TABLES`` stream holds on ``<prefix>.<table>.events``, in stream order."""
    from controller.floor.nats_client import NatsRequester

    user, password = floor.cluster.admin_login()
    subject = f"tables.{table}.events"
    out: list[bytes] = []
    seq = 1
    async with NatsRequester(floor.cluster.bind, floor.cluster.node(node).client, user=user,
                             password=password) as nats:
        while True:
            answer = await nats.request("$JS.API.STREAM.MSG.GET.TABLES", {"seq": seq, "next_by_subj": subject})
            if "error" in answer:
                return out  # no message at or after seq on that subject
            out.append(base64.b64decode(answer["message"]["data"]))
            seq = int(answer["message"]["seq"]) + 1
