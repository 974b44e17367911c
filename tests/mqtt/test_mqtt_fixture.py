"""The Mosquitto fixture: real listeners on loopback, restart on the same ports."""

from __future__ import annotations

import asyncio
import socket

import aiomqtt
import websockets

from tests.mqtt_broker import Mosquitto


async def _roundtrip(broker: Mosquitto, topic: str, transport: str = "tcp") -> bytes:
    port = broker.port if transport == "tcp" else broker.ws_port
    async with aiomqtt.Client(broker.host, port, transport=transport) as client:  # type: ignore[arg-type]
        await client.subscribe(topic, qos=1)
        await client.publish(topic, b"hello", qos=1)
        async with asyncio.timeout(5):
            async for message in client.messages:
                return bytes(message.payload)  # type: ignore[arg-type]
    raise AssertionError("no message")


async def test_tcp_and_websocket_listeners_deliver(mosquitto: Mosquitto) -> None:
    assert mosquitto.url == f"mqtt://127.0.0.1:{mosquitto.port}"
    assert mosquitto.ws_url == f"ws://127.0.0.1:{mosquitto.ws_port}"
    assert await _roundtrip(mosquitto, "t/tcp") == b"hello"
    assert await _roundtrip(mosquitto, "t/ws", "websockets") == b"hello"
    async with websockets.connect(mosquitto.ws_url, subprotocols=["mqtt"]):  # type: ignore[list-item]
        pass


def test_websocket_listener_binds_loopback_only(mosquitto: Mosquitto) -> None:
    # Find an address of this host other than loopback; the WS port must not answer there.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))
            other = s.getsockname()[0]
        except OSError:
            other = None
    if other is None or other.startswith("127."):
        return
    for port in (mosquitto.port, mosquitto.ws_port):
        with socket.socket() as s:
            s.settimeout(0.3)
            assert s.connect_ex((other, port)) != 0, f"port {port} reachable on {other}"


async def test_stop_and_start_reuse_the_same_ports(mosquitto: Mosquitto) -> None:
    port, ws_port = mosquitto.port, mosquitto.ws_port
    mosquitto.stop()
    assert not mosquitto.running
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    mosquitto.start()
    assert (mosquitto.port, mosquitto.ws_port) == (port, ws_port)
    assert await _roundtrip(mosquitto, "t/again") == b"hello"
