"""The demo's embedded amqtt broker: TCP and WebSockets on loopback, usable by the publisher."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import subprocess
import sys
from pathlib import Path

import aiomqtt
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from controller.mqtt.embedded_broker import BrokerStartError, EmbeddedBroker, free_port
from controller.mqtt.publisher import MqttPublisher
from controller.service.journal import Journal
from tests.mqtt.mqtt_helpers import recording


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


# -- the demo's embedded broker from the command line ---------------------------------------------

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _lines(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, "demo", "--rounds", "1", "--speed", "max", "--no-dashboard", "--quiet", *args],
                          capture_output=True, text=True, timeout=120)


def test_demo_listens_on_the_ports_given() -> None:
    port, ws_port = free_port(), free_port()
    while ws_port == port:
        ws_port = free_port()
    done = _demo("--port", str(port), "--ws-port", str(ws_port))
    assert done.returncode == 0, done.stderr
    assert f"MQTT broker: mqtt://127.0.0.1:{port} (embedded)" in done.stdout, done.stdout
    assert f"MQTT over WebSockets: ws://127.0.0.1:{ws_port}" in done.stdout, done.stdout


@pytest.mark.parametrize("option", ["--port", "--ws-port"])
def test_demo_on_a_port_in_use_says_so_in_one_line_and_exits_2(option: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        done = _demo(option, str(port))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    listener = "WebSockets" if option == "--ws-port" else "MQTT"
    assert _lines(done.stderr, "tablectl demo:") == [
        f"tablectl demo: embedded MQTT broker cannot listen on 127.0.0.1:{port} ({listener}): address already in use"
    ], done.stderr


@pytest.mark.parametrize("bad", [["--broker", "mqtt://127.0.0.1:1", "--port", "18830"],
                                 ["--broker", "mqtt://127.0.0.1:1", "--ws-port", "18831"],
                                 ["--port", "70000"], ["--port", "18832", "--ws-port", "18832"]])
def test_demo_port_options_misused_are_exit_2(bad: list[str]) -> None:
    done = _demo(*bad)
    assert done.returncode == 2, done.stderr
    assert len(_lines(done.stderr, "tablectl demo:")) == 1 and "Traceback" not in done.stderr, done.stderr


def _mqtt_packet(kind: int, body: bytes) -> bytes:
    assert len(body) < 128
    return bytes([kind, len(body)]) + body


def _mqtt_str(text: str) -> bytes:
    return len(text).to_bytes(2, "big") + text.encode()


async def _subscribe_and_vanish(ws_url: str, n: int) -> None:
    """A browser tab: MQTT over WebSockets, every topic at QoS 1, then the tab closes (1001 going away)."""
    from websockets.asyncio.client import connect

    async with connect(ws_url, subprotocols=[Subprotocol("mqtt")]) as ws:
        connect_body = _mqtt_str("MQTT") + bytes([4, 0x02, 0, 60]) + _mqtt_str(f"tab-{n}")
        await ws.send(_mqtt_packet(0x10, connect_body))
        await ws.recv()  # CONNACK
        await ws.send(_mqtt_packet(0x82, (1).to_bytes(2, "big") + _mqtt_str("tables/#") + b"\x01"))
        # SUBACK, then retained and live messages, never acknowledged; amqtt may give up on such a client
        # first (it closes with 1011 now and then): the tab is gone either way, the demo's stderr is what counts
        with contextlib.suppress(ConnectionClosed):
            for _ in range(20):
                await ws.recv()
        await ws.close(code=1001)


async def test_browser_tabs_that_close_leave_no_traceback_in_the_demo_output(tmp_path: Path) -> None:
    """amqtt logs a WebSockets client gone while a QoS 1 message is on its way with a traceback; not the demo."""
    port, ws_port = free_port(), free_port()
    while ws_port == port:
        ws_port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *TABLECTL, "demo", "--speed", "fast", "--no-dashboard", "--quiet", "--port", str(port),
        "--ws-port", str(ws_port), "--state-dir", str(tmp_path / "state"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            while b"Journals:" not in await proc.stdout.readline():
                pass
        for n in range(8):
            await _subscribe_and_vanish(f"ws://127.0.0.1:{ws_port}", n)
            await asyncio.sleep(0.3)
        await asyncio.sleep(1)
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 60)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    text = err.decode()
    assert "Traceback" not in text and "Unhandled exception" not in text and "ConnectionClosed" not in text, text


def test_only_a_client_going_away_is_silenced() -> None:
    from websockets.exceptions import ConnectionClosedOK
    from websockets.frames import Close

    from controller.mqtt.embedded_broker import _ClientGone

    def logged(exc: BaseException) -> logging.LogRecord:
        try:
            raise exc
        except BaseException:
            return logging.LogRecord("amqtt.broker", logging.ERROR, __file__, 1, "Task failed", None, sys.exc_info())

    gone = _ClientGone()
    assert not gone.filter(logged(ConnectionClosedOK(Close(1001, ""), Close(1001, ""), True)))
    assert not gone.filter(logged(ConnectionResetError(104, "Connection reset by peer")))
    assert gone.filter(logged(ValueError("a real broker error")))
    assert gone.filter(logging.LogRecord("amqtt.broker", logging.WARNING, __file__, 1, "no exception", None, None))


async def test_a_client_that_connects_and_leaves_without_a_word_is_no_broker_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """A browser tab closed while its socket opened (or a port check): amqtt logs "No data to decode MQTT
    packet fixed header" as an ERROR and a warning; the peer only went away."""
    from websockets.asyncio.client import connect

    caplog.set_level(logging.DEBUG)
    async with EmbeddedBroker() as broker:
        for _ in range(3):
            _, writer = await asyncio.open_connection(broker.host, broker.port)
            writer.close()
            await writer.wait_closed()
            async with connect(broker.ws_url, subprotocols=[Subprotocol("mqtt")]) as ws:
                await ws.close(code=1001)
        await asyncio.sleep(0.5)
    shown = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not shown, [f"{r.name} {r.levelname} {r.getMessage()}" for r in shown]


async def test_a_send_task_that_failed_on_a_tab_gone_is_no_asyncio_error(caplog: pytest.LogCaptureFixture) -> None:
    """amqtt leaves the task that sent a message to a closed tab unawaited: when it is collected, asyncio
    logs "Task exception was never retrieved" with the ConnectionClosedOK traceback (seen with Chromium).
    The same exception from a task of the table's own (not raised in the broker's code) still shows."""
    import gc

    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosedOK
    from websockets.frames import Close

    async def table_task() -> None:
        raise ConnectionClosedOK(Close(1001, ""), Close(1001, ""), True)

    async with EmbeddedBroker() as broker:
        async with connect(broker.ws_url, subprotocols=[Subprotocol("mqtt")]) as ws:
            await ws.close(code=1001)
        for coro in (ws.send(b"\x30\x00"), table_task()):  # a send to a tab gone, raised inside websockets
            task = asyncio.get_running_loop().create_task(coro)
            await asyncio.sleep(0.05)
            assert task.done()
            del task
            gc.collect()
    shown = [(r.name, r.getMessage(), r.exc_info[2] if r.exc_info else None) for r in caplog.records
             if r.levelno >= logging.WARNING]
    assert [(name, "table_task" in text) for name, text, _ in shown] == [("asyncio", True)], shown
