"""A pit's Mosquitto started from what ``tablectl broker-config`` wrote, and its ``pit`` fixture.

A pytest plugin (``tests/conftest.py``), shared by the role tests and the dashboard's login tests.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomqtt
import pytest

from controller.mqtt.broker_config import BrokerFiles, write_broker_config
from controller.mqtt.mosquitto import MosquittoNotInstalled, find_mosquitto
from controller.mqtt.ports import free_port

PREFIX = "tables"
#: the pit's people, one of each role (and a second pit supervisor, to impersonate)
PIT = "s.jones"
PIT2 = "a.li"
SURVEILLANCE = "eye.one"
TECHNICIAN = "tech.kim"
#: a second surveillance user that reads everything, ratings included, and never publishes: the tests' observer
OBSERVER = "eye.two"
SUPERVISOR = SURVEILLANCE


class Broker:
    """``mosquitto -c DIR/mosquitto.conf`` as broker-config wrote it (its log in DIR/mosquitto.log)."""

    def __init__(self, files: BrokerFiles, port: int, ws_port: int) -> None:
        self.files, self.port, self.ws_port = files, port, ws_port
        self.log_path = files.dir / "mosquitto.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen([find_mosquitto(), "-c", str(files.conf)], stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log)
        deadline = time.monotonic() + 10
        while not (_open(port) and _open(ws_port)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mosquitto did not start: {self.log()}")
            time.sleep(0.02)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def password(self, user: str) -> str:
        return self.files.passwords[user]

    def client(self, user: str | None, password: str | None = None, **kw: Any) -> aiomqtt.Client:
        if user is not None and password is None:
            password = self.password(user)
        return aiomqtt.Client("127.0.0.1", self.port, username=user, password=password, **kw)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def _open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _pit(tmp: Path, *, tls: bool = False) -> Broker:
    try:
        find_mosquitto()
    except MosquittoNotInstalled as exc:
        pytest.skip(str(exc))
    port, ws_port = free_port(), free_port()
    files = write_broker_config(tmp / "pit", ["t01", "t02"], prefix=PREFIX, port=port, ws_port=ws_port,
                                pit=[PIT, PIT2], surveillance=[SURVEILLANCE, OBSERVER], technician=[TECHNICIAN],
                                screens=2, tls=tls)
    if os.geteuid() == 0:
        # broker-config run by root writes "user mosquitto" (the broker never keeps root), and that account
        # cannot reach pytest's folders (root's, mode 0700): the test rig, not the product, runs it as root
        conf = files.conf.read_text().replace("\nuser mosquitto\n", "\nuser root\n")
        files.conf.write_text(conf)
    return Broker(files, port, ws_port)


@pytest.fixture
def pit(tmp_path: Path) -> Iterator[Broker]:
    broker = _pit(tmp_path)
    try:
        yield broker
    finally:
        broker.close()


@pytest.fixture(scope="session")
def pit_shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """One pit broker for the tests that only try the ACL (no table journal whose witness it would be)."""
    broker = _pit(tmp_path_factory.mktemp("pit-shared"))
    try:
        yield broker
    finally:
        broker.close()
