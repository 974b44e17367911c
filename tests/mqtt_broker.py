"""A real Mosquitto for tests: pytest plugin with the ``mosquitto`` fixtures.

Each broker gets a fresh temporary directory holding its own ``mosquitto.conf`` and log, and
two free loopback ports: MQTT over TCP and MQTT over WebSockets. The WebSockets listener sets
``socket_domain ipv4`` because Mosquitto 2.0.11 otherwise binds every interface for it.

Fixtures (registered from ``tests/conftest.py``)::

    def test_x(mosquitto):            # a fresh broker for this test (function scope)
        mosquitto.host, mosquitto.port, mosquitto.ws_port
        mosquitto.url                 # "mqtt://127.0.0.1:PORT"
        mosquitto.ws_url              # "ws://127.0.0.1:WSPORT"
        mosquitto.stop()              # broker outage; retained messages and sessions are lost
                                      # (Mosquitto(dir, persistence=True) keeps them across a restart)
        mosquitto.start()             # back on the SAME ports

    def test_y(mosquitto_session):    # one broker shared by the session: do not stop it

``Mosquitto`` (controller/mqtt/mosquitto.py) also works outside pytest (benchmarks, the soak)::

    with Mosquitto(tmp_dir) as broker: ...

When ``mosquitto`` is not installed the fixtures skip with a message saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.mqtt.mosquitto import Mosquitto, MosquittoNotInstalled, find_mosquitto
from controller.mqtt.ports import free_port

__all__ = ["Mosquitto", "MosquittoNotInstalled", "find_mosquitto", "free_port"]


def _make(path: Path) -> Mosquitto:
    try:
        return Mosquitto(path)
    except MosquittoNotInstalled as exc:
        pytest.skip(str(exc))


@pytest.fixture
def mosquitto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """A fresh Mosquitto for one test; ``stop()``/``start()`` simulate an outage on the same ports."""
    broker = _make(tmp_path_factory.mktemp("mosquitto"))
    broker.start()
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def mosquitto_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    """One Mosquitto shared by the whole session (cheaper; do not stop it in a test)."""
    broker = _make(tmp_path_factory.mktemp("mosquitto-session"))
    broker.start()
    try:
        yield broker
    finally:
        broker.close()
