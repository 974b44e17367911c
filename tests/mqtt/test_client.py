"""The MQTT client of the publisher, recorder and witness (``controller/mqtt/client.py``) on a real Mosquitto and a
real NATS server's MQTT (the demo's embedded broker): publish acknowledged, subscribe, manual acknowledgement of a
persistent session, the errors callers log, a broker that goes away, and no library's private member used."""

from __future__ import annotations

import ast
import asyncio
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from controller.floor.embedded_broker import EmbeddedBroker
from controller.mqtt.client import Message, MqttClient, MqttConnectError, MqttError, Will
from controller.mqtt.ports import free_port
from tests.mqtt_broker import Mosquitto

ROOT = Path(__file__).resolve().parents[2]


@asynccontextmanager
async def nats(tmp_path: Path) -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(tmp_path / "broker", ["t01"]) as broker:
        yield broker


async def _next(client: MqttClient, within: float = 5.0) -> Message:
    return await asyncio.wait_for(anext(client.messages), within)


async def _round_trip(publisher: MqttClient, subscriber: MqttClient, topic: str) -> None:
    granted = await subscriber.subscribe(topic, qos=1)
    assert not granted[0].is_failure, granted
    acked = publisher.publish_now(topic, b"one", retain=False)
    publisher.flush()
    await asyncio.wait_for(acked.wait(), 5)  # the PUBACK
    await publisher.publish(topic, b"two", qos=1, retain=True)
    first, second = await _next(subscriber), await _next(subscriber)
    assert (first.topic, first.payload, first.qos) == (topic, b"one", 1)
    assert (second.payload, second.retain) == (b"two", False)  # retained, but live: the flag is off
    async with MqttClient(publisher.host, publisher.port, **_login_of(publisher)) as late:
        await late.subscribe(topic, qos=1)
        kept = await _next(late)
        assert (kept.payload, kept.retain) == (b"two", True)


_LOGINS: dict[int, dict[str, Any]] = {}


def _login_of(client: MqttClient) -> dict[str, Any]:
    return _LOGINS.get(client.port, {})


async def test_publish_acknowledged_and_subscribe_on_mosquitto(mosquitto: Mosquitto) -> None:
    async with (MqttClient(mosquitto.host, mosquitto.port, identifier="pub") as pub,
                MqttClient(mosquitto.host, mosquitto.port, identifier="sub") as sub):
        pub.tune_socket()
        await _round_trip(pub, sub, "tables/t01/state")
        await sub.unsubscribe("tables/t01/state")
        await pub.publish("tables/t01/state", b"three", qos=1)
        with pytest.raises(TimeoutError):
            await _next(sub, 0.3)
    assert pub.connection_lost() is None and sub.connection_lost() is None  # clean disconnects


async def test_what_one_flush_cannot_write_goes_once_the_socket_drains(mosquitto: Mosquitto) -> None:
    """publish_now + flush of more than the socket takes at once, then of a small message queued behind it: the loop
    writes the rest when the socket drains, in order, with nothing else flushing (the writer is watched only when
    a write is left over)."""
    big = bytes(range(256)) * (256 * 1024)  # 64 MiB: many times what the sockets between take at once
    async with (MqttClient(mosquitto.host, mosquitto.port, identifier="pub") as pub,
                MqttClient(mosquitto.host, mosquitto.port, identifier="sub") as sub):
        pub.tune_socket()
        await sub.subscribe("bulk/#", qos=1)
        first = pub.publish_now("bulk/big", big, retain=False)
        pub.flush()
        second = pub.publish_now("bulk/small", b"after", retain=False)
        pub.flush()
        await asyncio.wait_for(asyncio.gather(first.wait(), second.wait()), 20)
        got = [await _next(sub, 20), await _next(sub, 5)]
        assert [(m.topic, m.payload) for m in got] == [("bulk/big", big), ("bulk/small", b"after")]
        await pub.subscribe("bulk/none", qos=1)  # a packet nobody flushes (paho queues it): the loop writes it
        await pub.publish("bulk/small", b"again", qos=1)
        assert (await _next(sub)).payload == b"again"


async def test_a_flush_that_wrote_lets_the_broker_have_the_core(mosquitto: Mosquitto,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """flush() gives the core up (``os.sched_yield``) once after writing, so the broker woken on it runs now
    rather than when the table next sleeps; a flush with nothing to write costs no system call."""
    yields: list[float] = []
    monkeypatch.setattr("controller.mqtt.client.os.sched_yield", lambda: yields.append(time.monotonic()))
    async with MqttClient(mosquitto.host, mosquitto.port, identifier="pub") as pub:
        await asyncio.sleep(0.2)  # what the connection itself wrote is gone
        yields.clear()
        acked = [pub.publish_now("yield/a", b"one", retain=False), pub.publish_now("yield/b", b"two", retain=False)]
        pub.flush()
        assert len(yields) == 1  # both packets written, one yield after them
        pub.flush()
        assert len(yields) == 1  # nothing left to write: no yield
        await asyncio.wait_for(asyncio.gather(*(a.wait() for a in acked)), 5)


async def test_publish_acknowledged_and_subscribe_on_nats(tmp_path: Path) -> None:
    async with nats(tmp_path) as broker:
        _LOGINS[broker.port] = dict(zip(("username", "password"), broker.login("dashboard"), strict=True))
        async with (MqttClient(broker.host, broker.port, username="t01", password=broker.passwords["t01"],
                               identifier="tables-t01") as pub,
                    MqttClient(broker.host, broker.ws_port, transport="websockets", websocket_path="/mqtt",
                               **_LOGINS[broker.port]) as sub):
            await _round_trip(pub, sub, "tables/t01/state")
            # a refused subscription is a failure code, not an error: the callers decide
            (refused,) = await pub.subscribe("tables/t02/state", qos=1)
            assert refused.is_failure


async def test_a_persistent_session_keeps_what_was_not_acknowledged(mosquitto: Mosquitto) -> None:
    """The recorder's PUBACK goes only once it stored the message: unacknowledged, it comes again."""
    def recorder() -> MqttClient:
        return MqttClient(mosquitto.host, mosquitto.port, identifier="recorder", clean_session=False,
                          manual_acks=True)

    async with recorder() as rec:
        await rec.subscribe("tables/+/events", qos=1)
    async with MqttClient(mosquitto.host, mosquitto.port) as table:
        await table.publish("tables/t01/events", b'{"seq": 1}', qos=1)
        await table.publish("tables/t01/events", b'{"seq": 2}', qos=1)
    async with recorder() as rec:
        first, second = await _next(rec), await _next(rec)
        assert [first.payload, second.payload] == [b'{"seq": 1}', b'{"seq": 2}']
        rec.ack(first)  # the second is not stored: not acknowledged
    async with recorder() as rec:
        again = await _next(rec)
        assert again.payload == b'{"seq": 2}'
        rec.ack(again)
    async with recorder() as rec:
        with pytest.raises(TimeoutError):
            await _next(rec, 0.5)


async def test_the_errors_callers_log(mosquitto: Mosquitto, tmp_path: Path) -> None:
    with pytest.raises(MqttError, match=r"^\[Errno 111\] Connection refused$"):
        async with MqttClient("127.0.0.1", free_port()):
            pass
    async with nats(tmp_path) as broker:
        with pytest.raises(MqttConnectError, match=r"^\[code:13[45]\] "):
            async with MqttClient(broker.host, broker.port, username="t01", password="wrong"):
                pass
    # a host that accepts the TCP connection and never answers: no CONNACK within ``timeout``
    with socket.create_server(("127.0.0.1", 0)) as silent:
        started = time.monotonic()
        with pytest.raises(MqttError, match=r"^Operation timed out$"):
            async with MqttClient("127.0.0.1", silent.getsockname()[1], timeout=0.3):
                pass
        assert time.monotonic() - started < 2.0


async def test_a_broker_that_goes_away_ends_the_connection_and_sends_the_will(mosquitto: Mosquitto,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async with MqttClient(mosquitto.host, mosquitto.port, identifier="watcher") as watcher:
        await watcher.subscribe("tables/t01/status", qos=1)
        lost = MqttClient(mosquitto.host, mosquitto.port, identifier="tables-t01",
                          will=Will("tables/t01/status", b"offline"))
        await lost.__aenter__()
        await lost.publish("tables/t01/status", b"online", qos=1, retain=True)
        assert (await _next(watcher)).payload == b"online"
        sock = _socket_of(lost, monkeypatch)
        sock.shutdown(socket.SHUT_RDWR)  # the connection lost without a DISCONNECT
        assert (await _next(watcher)).payload == b"offline"
        with pytest.raises(MqttError, match="Disconnected during message iteration"):
            await _next(lost)
        assert lost.connection_lost() is not None
        await lost.__aexit__(None, None, None)
    async with MqttClient(mosquitto.host, mosquitto.port) as reader:
        await reader.subscribe("tables/t01/status", qos=1)
        assert (await _next(reader)).payload == b"offline"  # the will, retained
        mosquitto.stop()
        with pytest.raises(MqttError):
            await _next(reader)
        with pytest.raises(MqttError):
            reader.publish_now("tables/t01/status", b"x", retain=False)
            reader.flush()


def _socket_of(client: MqttClient, monkeypatch: pytest.MonkeyPatch) -> socket.socket:
    """The client's socket, as the public ``tune_socket`` sets it (shutting it down ends the connection)."""
    found: list[socket.socket] = []
    original = socket.socket.setsockopt

    def spy(self: socket.socket, *args: Any) -> None:
        found.append(self)
        original(self, *args)

    with monkeypatch.context() as patched:
        patched.setattr(socket.socket, "setsockopt", spy)
        client.tune_socket()
    return found[0]


def test_no_product_class_reaches_into_a_library() -> None:
    """No class of the product subclasses aiomqtt's or paho's, and the client touches no ``_`` member but its own."""
    for path in (ROOT / "controller").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        imported = {alias.asname or alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.Import | ast.ImportFrom) for alias in node.names
                    if ((node.module or "") if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
                    in ("aiomqtt", "paho")}
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).split(".")[0] for b in node.bases}
                assert not bases & (imported | {"aiomqtt", "paho", "mqtt"}), f"{path}: {node.name} subclasses a library"
    client = ast.parse((ROOT / "controller/mqtt/client.py").read_text())
    for node in ast.walk(client):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            assert isinstance(node.value, ast.Name) and node.value.id == "self", ast.unparse(node)
