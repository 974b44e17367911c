"""A table's broker list (``mqtt.brokers``): the single ``url`` keeps working, a bad list is refused in one line,
and a publisher given several brokers tries them in order (real sockets, nothing listening on the first)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.journal import Journal
from controller.mqtt.options import BrokerOptions
from controller.mqtt.ports import free_port
from controller.mqtt.publisher import MqttPublisher
from controller.service.settings import ConfigError, TableSettings, load_settings
from tests.mqtt_broker import Mosquitto
from tests.service.test_run import simulated_devices  # noqa: F401 (the fixture, used here too)

MINIMAL = """
table_id = "t05"
[devices.shoe]
port = "/dev/ttyS1"
[devices.shuffler]
port = "/dev/ttyS2"
[devices.chips]
port = "/dev/ttyS3"
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.upper().startswith("TABLECTL_"):
            monkeypatch.delenv(key)


def _load(tmp_path: Path, text: str) -> TableSettings:
    path = tmp_path / "table.toml"
    path.write_text(MINIMAL + text)
    return load_settings(path)


def test_a_table_takes_a_list_of_brokers_and_the_single_url_keeps_working(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "table.toml"
    path.write_text(MINIMAL + '[mqtt]\nbrokers = ["mqtt://n1:1883", "mqtt://n2:1883", "mqtt://n3:1883"]\n')
    assert load_settings(path).mqtt.broker_urls == ("mqtt://n1:1883", "mqtt://n2:1883", "mqtt://n3:1883")
    path.write_text(MINIMAL + '[mqtt]\nurl = "mqtt://pit:1884"\n')
    assert load_settings(path).mqtt.broker_urls == ("mqtt://pit:1884",)
    path.write_text(MINIMAL)
    monkeypatch.setenv("TABLECTL_MQTT__BROKERS", '["mqtt://a:1", "mqtt://b:2"]')
    assert load_settings(path).mqtt.broker_urls == ("mqtt://a:1", "mqtt://b:2")


@pytest.mark.parametrize(("text", "expected"), [
    ('[mqtt]\nbrokers = ["mqtt://a:1", "http://b"]\n', "mqtt.brokers: broker 2: broker URL 'http://b'"),
    ('[mqtt]\nbrokers = ["mqtt://a:1", "mqtt://a:1"]\n', "mqtt.brokers: a broker is listed twice"),
    ('[mqtt]\nbrokers = ["mqtt://a:1", "mqtts://b:2"]\n', "not a mix"),
    ('[mqtt]\nurl = "mqtt://a:1"\nbrokers = ["mqtt://b:1"]\n', "url and brokers: give one"),
    ('[mqtt]\nbrokers = "mqtt://a:1"\n', "mqtt.brokers"),
])
def test_a_bad_broker_list_is_refused_naming_the_key(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text)
    assert expected in str(info.value) and "\n" not in str(info.value), str(info.value)


async def test_a_publisher_connects_to_the_first_broker_that_answers(mosquitto: Mosquitto, tmp_path: Path) -> None:
    dead = f"mqtt://127.0.0.1:{free_port()}"  # nothing listens there
    journal = Journal(tmp_path / "t01.journal")
    pub = MqttPublisher(journal, table_id="t01", broker=BrokerOptions([dead, mosquitto.url], backoff_min=5.0))
    try:
        async with pub:
            await pub.wait_connected(3)  # well before the backoff: the next broker is tried at once
            assert pub.broker_url == mosquitto.url
    finally:
        journal.close()


async def test_tablectl_run_takes_its_brokers_from_the_config(
        mosquitto: Mosquitto, tmp_path: Path, simulated_devices: Path) -> None:  # noqa: F811
    """The table service as deployed (``tablectl run``): the first broker of the list does not answer, the
    table serves on the second."""
    import asyncio
    import signal
    import sys

    from tests.mqtt.mqtt_helpers import recording
    from tests.service.test_run import _config

    dead = f"mqtt://127.0.0.1:{free_port()}"
    path = _config(tmp_path, mosquitto.url, simulated_devices)
    path.write_text(path.read_text().replace(f'url = "{mosquitto.url}"', f'brokers = ["{dead}", "{mosquitto.url}"]'))
    async with recording(mosquitto.host, mosquitto.port, "runs/t05/#") as rec:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "controller.cli", "run", "--config",
                                                    str(path), "--new-journal", stderr=asyncio.subprocess.PIPE)
        try:
            await rec.wait_for(lambda r: any(m.json()["phase"] == "betting" for m in r.on("/state")), 30)
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.stderr is not None
            err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
            code = await proc.wait()
    assert code == 0, err
    running = [e for e in map(json.loads, filter(str.strip, err.splitlines())) if e["msg"] == "table service running"]
    assert running[0]["broker"] == f"{dead},{mosquitto.url}"  # it says which brokers it was given
