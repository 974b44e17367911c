"""A broker that cannot be reached at start: one plain line on stderr, the table plays on, no password shown."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from controller.mqtt.addresses import redact_url
from controller.mqtt.ports import free_port

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _demo(broker: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, "demo", "--broker", broker, "--rounds", "2", "--speed", "max", "--no-dashboard",
                           *extra], capture_output=True, text=True, timeout=120)


def test_demo_on_a_closed_port_says_so_once_and_plays_its_rounds() -> None:
    url = f"mqtt://127.0.0.1:{free_port()}"  # nothing listens there
    done = _demo(url)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "MQTT broker" in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].endswith(f"t01: MQTT broker {url} not reachable (Connection refused): playing on, "
                             "publishing from the journal once it is up"), lines[0]
    assert "t01: rounds 2 " in done.stdout, done.stdout


@pytest.mark.parametrize("log", [[], ["--log-level", "DEBUG", "--log-format", "json"]])
def test_a_password_in_the_broker_url_never_shows_on_stderr(log: list[str]) -> None:
    url = f"mqtt://pit:hunter2@127.0.0.1:{free_port()}"
    done = _demo(url, *log)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stderr, done.stderr
    assert "MQTT broker mqtt://pit:***@127.0.0.1:" in done.stderr, done.stderr


def test_a_bad_broker_url_names_it_without_its_password() -> None:
    done = _demo("mqtt://pit:hunter2@127.0.0.1:99999")
    assert done.returncode == 2
    assert "hunter2" not in done.stderr and "mqtt://pit:***@127.0.0.1:99999" in done.stderr, done.stderr


@pytest.mark.parametrize(("url", "shown"), [
    ("mqtt://127.0.0.1:1883", "mqtt://127.0.0.1:1883"),
    ("mqtt://pit@broker", "mqtt://pit@broker"),
    ("mqtts://pit:s3cret@broker:8883", "mqtts://pit:***@broker:8883"),
    ("wss://pit:p%40ss@broker/mqtt", "wss://pit:***@broker/mqtt"),
    ("mqtt://pit:pa/ss@broker:1", "mqtt://pit:***@broker:1"),  # unencoded: hidden all the same
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert not re.search(r"s3cret|p%40ss|pa/ss", redact_url(url))
