"""The demo's embedded broker: one NATS node on loopback (TCP and WebSockets), authenticated, usable by the publisher,
delivering exactly what each subscription asks for."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from controller.floor.embedded_broker import BrokerStartError, EmbeddedBroker
from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.ports import free_port
from controller.mqtt.publisher import MqttPublisher
from tests.mqtt.mqtt_helpers import recording


@contextlib.asynccontextmanager
async def embedded(tmp_path: Path, tables: tuple[str, ...] = ("t01",), **kw: int) -> AsyncIterator[EmbeddedBroker]:
    async with EmbeddedBroker(tmp_path / "broker", list(tables), **kw) as broker:
        yield broker


async def test_tcp_and_websocket_clients_exchange_messages(tmp_path: Path) -> None:
    async with embedded(tmp_path) as broker:
        assert broker.url == f"mqtt://127.0.0.1:{broker.port}"
        assert broker.ws_url == f"ws://127.0.0.1:{broker.ws_port}/mqtt"
        assert broker.credentials.stat().st_mode & 0o077 == 0, "the passwords' file is the owner's alone"
        user, password = broker.login("dashboard")
        async with (
            aiomqtt.Client(broker.host, broker.ws_port, transport="websockets", websocket_path="/mqtt",
                           username=user, password=password) as ws,
            aiomqtt.Client(broker.host, broker.port, username="t01", password=broker.passwords["t01"],
                           identifier="tables-t01") as tcp,
        ):
            await ws.subscribe("tables/t01/state", qos=1)
            await tcp.publish("tables/t01/state", b"hi", qos=1)
            async with asyncio.timeout(5):
                async for m in ws.messages:
                    assert m.payload == b"hi"
                    break
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", broker.port)) != 0, "listener still open after stop"


async def test_a_subscriber_gets_the_retained_message_of_its_topic_and_no_other(tmp_path: Path) -> None:
    """amqtt 0.12.1 sent a new client the retained messages of topics other sessions had subscribed to."""
    async with embedded(tmp_path, ("t01", "t02")) as broker:
        for table in ("t01", "t02"):
            async with aiomqtt.Client(broker.host, broker.port, username=table, password=broker.passwords[table],
                                      identifier=f"tables-{table}") as pub:
                for kind in ("status", "alarms", "state"):
                    await pub.publish(f"tables/{table}/{kind}", f"{table} {kind}".encode(), qos=1, retain=True)
        async with recording(broker.host, broker.port, "tables/#", login=broker.login("dashboard")) as everything:
            await everything.wait_for(lambda r: len(r.messages) >= 6)
        for _ in range(5):  # a fresh client each time: only the topic it asked for
            async with recording(broker.host, broker.port, "tables/t01/state", login=broker.login("dashboard")) as one:
                await one.wait_for(lambda r: len(r.messages) >= 1)
                await asyncio.sleep(0.3)
            assert [(m.topic, m.payload) for m in one.messages] == [("tables/t01/state", b"t01 state")]


async def test_a_client_without_the_password_is_refused(tmp_path: Path) -> None:
    async with embedded(tmp_path) as broker:
        for login in ({}, {"username": "dashboard", "password": "not-it"}, {"username": "t01", "password": "x"}):
            with pytest.raises(aiomqtt.MqttError):
                async with aiomqtt.Client(broker.host, broker.port, **login):
                    pass


async def test_publisher_runs_against_the_embedded_broker(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "t.journal")
    async with (embedded(tmp_path) as broker,
                recording(broker.host, broker.port, "tables/t01/#", login=broker.login("dashboard")) as rec):
        async with MqttPublisher(journal, table_id="t01", broker=BrokerOptions(
                [broker.url], username="t01", password=broker.passwords["t01"])) as pub:
            for i in range(20):
                _, seqs = journal.commit_event({"type": "tick", "i": i}, [{"type": "tick"}])
                pub.publish_state(seqs[-1], {"seq": seqs[-1]})
            await pub.wait_drained(5)
            await rec.wait_for(lambda r: len(r.on("/events")) >= 20)
        await rec.wait_for(lambda r: r.on("/status")[-1].payload == b"offline")
    assert rec.event_seqs() == list(range(1, 21))
    journal.close()


async def test_a_taken_port_is_reported(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(BrokerStartError, match=f"127.0.0.1:{port} \\(MQTT\\): address already in use"):
            await EmbeddedBroker(tmp_path / "broker", ["t01"], port=port).start()


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


async def _subscribe_and_vanish(ws_url: str, n: int, password: str) -> None:
    """A browser tab: MQTT over WebSockets, every topic at QoS 1, then the tab closes (1001 going away)."""
    from websockets.asyncio.client import connect

    async with connect(ws_url, subprotocols=[Subprotocol("mqtt")]) as ws:
        connect_body = (_mqtt_str("MQTT") + bytes([4, 0xC2, 0, 60]) + _mqtt_str(f"tab-{n}")  # user, password
                        + _mqtt_str("dashboard") + _mqtt_str(password))
        await ws.send(_mqtt_packet(0x10, connect_body))
        await ws.recv()  # CONNACK
        await ws.send(_mqtt_packet(0x82, (1).to_bytes(2, "big") + _mqtt_str("tables/#") + b"\x01"))
        # SUBACK, then retained and live messages, never acknowledged; the broker may give up on such a client
        # first: the tab is gone either way, the demo's stderr is what counts
        with contextlib.suppress(ConnectionClosed):
            for _ in range(20):
                await ws.recv()
        await ws.close(code=1001)


async def test_browser_tabs_that_close_leave_no_traceback_in_the_demo_output(tmp_path: Path) -> None:
    """A WebSockets client gone while a QoS 1 message is on its way (amqtt logged a traceback): not the demo's."""
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
        printed = b""
        async with asyncio.timeout(30):
            while b"Journals:" not in printed:
                printed += await proc.stdout.readline()
        credentials = re.search(rb"password in (\S+)", printed)
        assert credentials, printed
        password = tomllib.loads(Path(credentials.group(1).decode()).read_text())["users"]["dashboard"]["password"]
        for n in range(8):
            await _subscribe_and_vanish(f"ws://127.0.0.1:{ws_port}/mqtt", n, password)
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


def _nats_servers_of(directory: Path) -> list[int]:
    """The pids of the nats-server processes running a configuration in ``directory``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if any(str(directory).encode() in a for a in argv) and any(a.endswith(b"nats-server") for a in argv):
                found.append(int(pid))
    return found


def test_a_demo_killed_leaves_no_broker_behind(tmp_path: Path) -> None:
    """The broker is a child process of the demo's: ``kill -9`` of the demo must not leave it holding its ports."""
    port, ws_port = free_port(), free_port()
    while ws_port == port:
        ws_port = free_port()
    state = tmp_path / "state"
    proc = subprocess.Popen([*TABLECTL, "demo", "--speed", "fast", "--no-dashboard", "--quiet", "--port", str(port),
                             "--ws-port", str(ws_port), "--state-dir", str(state)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("Journals:"):
                break
        assert _nats_servers_of(state / "broker"), "the demo runs its broker"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while _nats_servers_of(state / "broker") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _nats_servers_of(state / "broker"), "nats-server still running after its demo was killed"
    again = _demo("--port", str(port), "--ws-port", str(ws_port), "--state-dir", str(state))
    assert again.returncode == 0, again.stderr  # the resumed demo gets its ports back


async def test_a_second_broker_on_the_same_directory_is_refused_and_the_first_serves_on(tmp_path: Path) -> None:
    """A second demo on a state dir in use must not rewrite the running broker's passwords and store."""
    async with embedded(tmp_path) as broker:
        before = broker.credentials.read_bytes()
        with pytest.raises(BrokerStartError, match="in use by another demo's broker"):
            await EmbeddedBroker(tmp_path / "broker", ["t01"]).start()
        assert broker.credentials.read_bytes() == before
        async with aiomqtt.Client(broker.host, broker.port, username="dashboard",
                                  password=broker.passwords["dashboard"]):
            pass
    async with embedded(tmp_path):  # once stopped, the directory is free again
        pass
