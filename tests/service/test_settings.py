"""Table settings: TOML + environment overrides; a bad config names the key and the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.mqtt.options import BrokerOptions
from controller.service.settings import ConfigError, TableSettings, load_settings

ROOT = Path(__file__).resolve().parents[2]

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


def _write(tmp_path: Path, text: str, name: str = "table.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_minimal_config_gets_defaults(tmp_path: Path) -> None:
    s = load_settings(_write(tmp_path, MINIMAL))
    assert s.table_id == "t05"
    assert s.profile == "ny-4620"
    assert s.mqtt.url == "mqtt://127.0.0.1:1883"
    assert s.mqtt.prefix == "tables"
    assert s.devices.shoe.port == "/dev/ttyS1"
    assert s.devices.console.backend == "libusb"
    assert s.journal_path == Path("/var/lib/tablectl/t05.journal")
    assert s.load_rules().decks >= 1


@pytest.mark.parametrize("name", ["t01.toml", "sim.toml"])
def test_shipped_example_configs_load(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / "config" / "tables" / name
    if name == "t01.toml":
        # The example points at the table PC's certificates; stand them in.
        for env, file in (("TLS_CA", "ca.pem"), ("TLS_CERT", "t.crt"), ("TLS_KEY", "t.key")):
            (tmp_path / file).write_text("x")
            monkeypatch.setenv(f"TABLECTL_MQTT__{env}", str(tmp_path / file))
    s = load_settings(path)
    assert s.table_id == "t01"


def test_the_bench_config_keeps_its_journal_outside_the_repository_and_logs_at_info() -> None:
    s = load_settings(ROOT / "config" / "tables" / "sim.toml")
    assert not s.journal_path.resolve().is_relative_to(ROOT), s.journal_path
    assert s.log_level == "INFO"


def test_environment_overrides_the_file_including_nested_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLECTL_TABLE_ID", "t09")
    monkeypatch.setenv("TABLECTL_MQTT__URL", "mqtts://broker.pit:8884")
    monkeypatch.setenv("TABLECTL_MQTT__PASSWORD", "s3cret")
    monkeypatch.setenv("TABLECTL_DEVICES__SHOE__PORT", "/dev/ttyUSB7")
    monkeypatch.setenv("TABLECTL_LOG_LEVEL", "debug")
    s = load_settings(_write(tmp_path, MINIMAL))
    assert s.table_id == "t09"
    assert s.mqtt.url == "mqtts://broker.pit:8884" and s.mqtt.tls
    assert s.mqtt.password is not None and s.mqtt.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(s)
    assert s.devices.shoe.port == "/dev/ttyUSB7"
    assert s.devices.shuffler.port == "/dev/ttyS2"  # untouched sibling kept from the file
    assert s.log_level == "DEBUG"


def test_rule_overrides_reach_the_engine_rules(tmp_path: Path) -> None:
    s = load_settings(_write(tmp_path, 'profile = "house-h17"\n' + MINIMAL + '[rules]\nmin_bet = "25"\n'))
    assert s.load_rules().min_bet == 2500


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    s = load_settings(_write(tmp_path, 'state_dir = "state"\n' + MINIMAL))
    assert s.journal_path == tmp_path.resolve() / "state" / "t05.journal"


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        (MINIMAL.replace('table_id = "t05"', ""), {}, "table_id: required key missing"),
        (MINIMAL.replace("t05", "t 05"), {}, "table_id: String should match pattern"),
        (MINIMAL + '[mqtt]\nurl = "http://x"\n', {}, "mqtt.url: broker URL 'http://x': scheme must be"),
        (MINIMAL, {"TABLECTL_MQTT__URL": "mqtt://"}, "mqtt.url: broker URL 'mqtt://': no host"),
        (MINIMAL + "[mqtt]\nkeepalive = 0\n", {}, "mqtt.keepalive: Input should be greater than or equal to 2"),
        (MINIMAL + '[mqtt]\ntls_ca = "/nope/ca.pem"\n', {}, "mqtt.tls_ca: no such file: /nope/ca.pem"),
        (MINIMAL + "colour = 1\n", {}, "colour: unknown key"),
        (MINIMAL + "[devices.shoe]\n", {}, "not valid TOML"),
        (MINIMAL.replace("[devices.chips]\nport", "[devices.chips]\nspots = [9]\nport"), {}, "devices.chips.spots"),
        (MINIMAL.replace('port = "/dev/ttyS1"', ""), {}, "devices.shoe.port: required key missing"),
        ('profile = "atlantis"\n' + MINIMAL, {}, "unknown profile 'atlantis'"),
        (MINIMAL + '[rules]\nties = "coin_flip"\n', {}, "ties"),
        (MINIMAL, {"TABLECTL_LOG_LEVEL": "loud"}, "log_level: Input should be"),
        (MINIMAL + "[mqtt]\nretained_refresh_s = -5\n", {}, "mqtt.retained_refresh_s: 0 (off) or 0.5 to 3600 s"),
        (MINIMAL + "[mqtt]\nretained_refresh_s = 0.1\n", {}, "mqtt.retained_refresh_s: 0 (off) or 0.5 to 3600"),
        (MINIMAL + "[mqtt]\nretained_refresh_s = 86400\n", {}, "mqtt.retained_refresh_s: 0 (off) or 0.5 to 3600"),
        (MINIMAL + "[mqtt]\nretained_refresh_s = nan\n", {}, "mqtt.retained_refresh_s: 0 (off) or 0.5 to 3600"),
        (MINIMAL + "[mqtt]\nretained_refresh_s = true\n", {}, "mqtt.retained_refresh_s: a number of seconds, not"),
        (MINIMAL, {"TABLECTL_MQTT__RETAINED_REFRESH_S": "soon"}, "mqtt.retained_refresh_s: Input should be a valid"),
    ],
)
def test_bad_config_fails_naming_the_key_and_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, env: dict[str, str], expected: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert expected in message, message
    assert "\n" not in message


def test_env_variable_name_is_given_for_a_bad_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLECTL_MQTT__KEEPALIVE", "-1")
    with pytest.raises(ConfigError, match="TABLECTL_MQTT__KEEPALIVE"):
        load_settings(_write(tmp_path, MINIMAL))


def test_tls_key_needs_a_certificate(tmp_path: Path) -> None:
    (tmp_path / "k.pem").write_text("x")
    with pytest.raises(ConfigError, match="tls_cert and tls_key"):
        load_settings(_write(tmp_path, MINIMAL + f'[mqtt]\ntls_key = "{tmp_path / "k.pem"}"\n'))


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_settings(tmp_path / "absent.toml")


def test_the_retained_refresh_is_30_s_by_default_0_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings(_write(tmp_path, MINIMAL)).mqtt.retained_refresh_s == 30.0
    assert load_settings(_write(tmp_path, MINIMAL + "[mqtt]\nretained_refresh_s = 0\n")).mqtt.retained_refresh_s == 0
    monkeypatch.setenv("TABLECTL_MQTT__RETAINED_REFRESH_S", "2.5")
    assert load_settings(_write(tmp_path, MINIMAL)).mqtt.retained_refresh_s == 2.5


async def test_the_table_service_publishes_with_the_retained_refresh_it_is_given(tmp_path: Path) -> None:
    from controller.journal import Journal
    from controller.mqtt.publisher import MqttPublisher
    from controller.service.runner import build_service

    settings = load_settings(_write(tmp_path, MINIMAL + "[mqtt]\nretained_refresh_s = 12\n"))
    journal = Journal(tmp_path / "t05.journal")
    try:
        publisher = build_service(settings, journal).core.publisher
        assert isinstance(publisher, MqttPublisher)
        assert publisher.retained_refresh == 12.0
    finally:
        journal.close()


def test_overrides_argument_merges_nested(tmp_path: Path) -> None:
    s = load_settings(_write(tmp_path, MINIMAL), overrides={"mqtt": {"prefix": "demo/a"}, "table_id": "t02"})
    assert (s.table_id, s.mqtt.prefix, s.mqtt.url) == ("t02", "demo/a", "mqtt://127.0.0.1:1883")
    assert isinstance(s, TableSettings)


def test_the_mqtt_section_produces_the_publishers_broker_options(tmp_path: Path) -> None:
    """``[mqtt]`` is read into the one :class:`BrokerOptions` the publisher takes: every broker in order, the
    credentials, the TLS files and the keepalive; the timings not in the file keep the publisher's defaults."""
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (tmp_path / name).write_text("x")
    config = _write(tmp_path, MINIMAL + f"""[mqtt]
brokers = ["mqtts://n1:8883", "mqtts://n2:8883"]
username = "t05"
password = "secret"
tls_ca = "{tmp_path / 'ca.pem'}"
tls_cert = "{tmp_path / 'cert.pem'}"
tls_key = "{tmp_path / 'key.pem'}"
keepalive = 30
""")
    config.chmod(0o600)  # it holds a password
    assert load_settings(config).mqtt.broker_options() == BrokerOptions(
        ("mqtts://n1:8883", "mqtts://n2:8883"), username="t05", password="secret", tls_ca=tmp_path / "ca.pem",
        tls_cert=tmp_path / "cert.pem", tls_key=tmp_path / "key.pem", keepalive=30)
    assert load_settings(_write(tmp_path, MINIMAL, "plain.toml")).mqtt.broker_options() == BrokerOptions()
