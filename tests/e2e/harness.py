"""Helpers shared by the dashboard's browser tests and ``docs/screenshots/make.py``.

:class:`Publisher` runs ``tests/e2e/publisher.py`` in a subprocess and drives it over stdin;
:func:`find_chromium` locates Debian's Chromium (never a downloaded one); :class:`BrokerWatch`
subscribes to the broker itself, so a test compares the page with the messages as delivered.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue
from typing import Any, Protocol

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]


def find_chromium() -> str | None:
    """Debian's Chromium: ``$CHROMIUM``, ``/usr/bin/chromium``, or ``chromium`` on ``$PATH``."""
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


class BrokerAddress(Protocol):
    """Where a broker's MQTT-over-TCP listener is (Mosquitto or the embedded amqtt)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


class Publisher:
    """``tests/e2e/publisher.py`` in a subprocess, driven line by line over its stdin."""

    def __init__(self, broker: BrokerAddress, prefix: str = "tables", tables: str = "t01,t02") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.publisher", "--port", str(broker.port), "--prefix", prefix,
             "--tables", tables],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._lines: Queue[str] = Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.expect("ready")

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put("<eof>")

    def expect(self, word: str, timeout: float = 10.0) -> str:
        """The next stdout line, which must start with ``word``."""
        try:
            line = self._lines.get(timeout=timeout)
        except Empty:
            raise AssertionError(f"publisher said nothing within {timeout} s (waiting for {word!r})") from None
        if not line.startswith(word):
            err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
            raise AssertionError(f"publisher: expected {word!r}, got {line!r} {err}")
        return line

    def send(self, command: str, answer: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.expect(answer)

    def step(self) -> str:
        return self.send("step", "step")

    def kill(self) -> None:
        """SIGKILL: the broker publishes each table's last will (``offline``)."""
        self.proc.kill()
        self.proc.wait(timeout=5)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()




class BrokerWatch:
    """A plain MQTT subscriber to ``<prefix>/#``: the last ``state``/``status``/``alarms`` per table."""

    def __init__(self, broker: BrokerAddress, prefix: str = "tables") -> None:
        self.prefix = prefix
        self.latest: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"e2e-watch-{os.getpid()}")
        self._client.on_message = self._on_message
        self._client.connect(broker.host, broker.port)
        self._client.subscribe(f"{prefix}/#", qos=1)
        self._client.loop_start()

    def _on_message(self, _c: paho.Client, _u: object, msg: paho.MQTTMessage) -> None:
        parts = msg.topic.split("/")
        if len(parts) != 3:
            return
        text = msg.payload.decode()
        value: Any = text if parts[2] == "status" else json.loads(text) if text else None
        with self._lock:
            self.latest[(parts[1], parts[2])] = value

    def get(self, table: str, kind: str) -> Any:
        with self._lock:
            return self.latest.get((table, kind))

    def state_with_seq(self, table: str, seq: int, timeout: float = 5.0) -> dict[str, Any]:
        """The ``state`` of ``table`` once its ``seq`` is ``seq`` (as the broker delivered it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.get(table, "state")
            if isinstance(state, dict) and state.get("seq") == seq:
                return state
            time.sleep(0.01)
        raise AssertionError(f"no state with seq {seq} for {table}; last: {self.get(table, 'state')}")

    def publish(self, topic: str, payload: str, *, retain: bool = False) -> None:
        """Publish as an outside client would (QoS 1), and wait until the broker has it."""
        self._client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(timeout=5)

    def close(self) -> None:
        self._client.loop_stop()
        self._client.disconnect()
