"""A table's broker list (``mqtt.brokers``): the single ``url`` keeps working, a bad list is refused in one line,
and a publisher given several brokers tries them in order (real sockets, nothing listening on the first)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.mqtt.embedded_broker import free_port
from controller.mqtt.publisher import MqttPublisher
from controller.service.journal import Journal
from controller.service.settings import ConfigError, TableSettings, load_settings
from tests.mqtt_broker import Mosquitto

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
    pub = MqttPublisher(journal, table_id="t01", brokers=[dead, mosquitto.url], backoff_min=5.0)
    try:
        async with pub:
            await pub.wait_connected(3)  # well before the backoff: the next broker is tried at once
            assert pub.broker_url == mosquitto.url
    finally:
        journal.close()
