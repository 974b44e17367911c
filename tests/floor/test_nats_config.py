"""The floor's cluster configuration as files: subjects, grants, modes, and bad input refused in one line."""

from __future__ import annotations

import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from controller.floor.grants import GrantError, floor_grants
from controller.floor.nats_config import NatsConfigError, consecutive_ports, permissions_of, write_nats_cluster
from controller.floor.subjects import mqtt_filter_subjects, mqtt_topic_subject


def test_topics_become_the_subjects_nats_checks_permissions_against() -> None:
    assert mqtt_topic_subject("tables/t01/cmd/pit/jane.doe/open") == "tables.t01.cmd.pit.jane//doe.open"
    assert mqtt_topic_subject("tables/+/cmd/+/+/+/result") == "tables.*.cmd.*.*.*.result"
    assert mqtt_filter_subjects("tables/#") == ("tables", "tables.>")  # '#' matches its parent too
    assert mqtt_filter_subjects("#") == (">",)
    for bad in ("/tables", "tables/", "tables//t01", "tables/#/x", "tables/a+b", "tables/a b"):
        with pytest.raises(ValueError):
            mqtt_topic_subject(bad)


def test_each_person_may_publish_only_its_own_roles_verbs_under_its_own_name() -> None:
    grants = {g.user: g for g in floor_grants("tables", ["t01"], {"pit": ["jane.doe"], "technician": ["tom"]})}
    assert grants["jane.doe"].publish == tuple(
        f"tables/+/cmd/pit/jane.doe/{v}" for v in ("open", "close", "set_limits", "decks_changed", "ack_alarm",
                                                         "selfcheck", "set_dealer"))
    assert grants["tom"].publish == ("tables/+/cmd/technician/tom/ack_alarm",)
    assert permissions_of(grants["dashboard"])["publish"] == {"deny": [">"]}  # never an empty allow list
    assert "tables.*.ratings" in permissions_of(grants["tom"])["subscribe"]["deny"]
    assert "t01" in grants and grants["t01"].read == ("tables/t01/#", "tables/recorder/t01")


@pytest.mark.parametrize(("tables", "people", "why"), [
    ([], {}, "at least one table"),
    (["t 1"], {}, "not a table id"),
    (["dashboard"], {}, "dashboard"),
    (["t01"], {"pit": ["Jane"]}, "lower case"),
    (["t01"], {"pit": ["t01"]}, "already the user of a table"),
    (["t01"], {"pit": ["sam"], "surveillance": ["sam"]}, "one user, one role"),
    (["t01"], {"boss": ["x"]}, "unknown role"),
])
def test_a_bad_or_repeated_name_is_refused_naming_it(tables: list[str], people: dict[str, list[str]],
                                                      why: str) -> None:
    with pytest.raises(GrantError, match=why):
        floor_grants("tables", tables, people)


def test_the_files_hold_every_node_and_keep_passwords_private(tmp_path: Path) -> None:
    files = write_nats_cluster(tmp_path / "floor", ["t01", "t02"], people={"pit": ["jane.doe"]},
                               ports=consecutive_ports(3, mqtt=21883, ws=29001, cluster=26222, client=24222))
    assert [c.parent.name for c in files.configs] == ["n1", "n2", "n3"]
    for conf in (*files.configs, files.credentials):
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600
    n2 = files.configs[1].read_text()
    login = f"floor-route:{files.passwords['floor-route']}@"
    assert f'"nats-route://{login}127.0.0.1:26222"' in n2 and f'"nats-route://{login}127.0.0.1:26224"' in n2
    assert "127.0.0.1:26223\"" not in n2.split("routes: ")[1].split("]")[0]  # no route to itself
    assert 'mqtt {listen: "127.0.0.1:21884"' in n2 and 'websocket {listen: "127.0.0.1:29002", no_tls: true}' in n2
    creds = tomllib.loads(files.credentials.read_text())
    assert creds["broker"]["mqtt"] == ["mqtt://127.0.0.1:21883", "mqtt://127.0.0.1:21884", "mqtt://127.0.0.1:21885"]
    assert set(creds["users"]) == {"t01", "t02", "dashboard", "tracking", "recorder", "jane.doe", "floor-admin",
                                   "floor-auth", "floor-route"}
    auth = files.dir / "auth"
    assert stat.S_IMODE(auth.stat().st_mode) == 0o700
    for private in ("users.json", "issuer.nk", "service.toml"):
        assert stat.S_IMODE((auth / private).stat().st_mode) == 0o600
    for user, entry in creds["users"].items():
        assert entry["password"] == files.passwords[user]
        assert entry["password"] not in files.readme.read_text()
    assert "passwords" not in repr(files)
    with pytest.raises(NatsConfigError, match="already holds"):
        write_nats_cluster(tmp_path / "floor", ["t01"])
    again = write_nats_cluster(tmp_path / "floor", ["t01"], force=True)
    assert again.passwords["t01"] != files.passwords["t01"]


def test_ports_that_collide_are_refused() -> None:
    with pytest.raises(NatsConfigError, match="share a port"):
        consecutive_ports(3, mqtt=1883, ws=1884)


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", *args], capture_output=True, text=True,
                          timeout=60)


def test_broker_config_engine_nats_writes_the_cluster_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    ok = _tablectl("broker-config", "--engine", "nats", "--nodes", "3", "--dir", str(tmp_path / "c"),
                   "--tables", "t01,t02", "--pit", "jane.doe", "--surveillance", "sam", "--technician", "tom")
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "c" / "n3" / "nats.conf").is_file() and (tmp_path / "c" / "README").is_file()
    tls = _tablectl("broker-config", "--engine", "nats", "--dir", str(tmp_path / "tls"), "--tables", "t01", "--tls")
    assert tls.returncode == 0 and "mqtts://127.0.0.1:8883" in tls.stdout and "ca.crt" in tls.stdout, tls.stderr
    conf = (tmp_path / "tls" / "n1" / "nats.conf").read_text()
    assert "no_tls" not in conf and conf.count("cert_file") == 4  # client port, routes, MQTT, WebSockets
    for args, why in (
        (["--tables", "t01", "--pit", "Jane"], "--pit 'Jane'"),
        (["--tables", "t01", "--nodes", "0"], "--nodes 0"),
        (["--tables", "t01", "--supervisor", "s.jones"], "--supervisor"),
    ):
        bad = _tablectl("broker-config", "--engine", "nats", "--dir", str(tmp_path / "bad"), *args)
        assert bad.returncode == 2
        assert len(bad.stderr.strip().splitlines()) == 1 and why in bad.stderr, bad.stderr


def test_cluster_without_a_configuration_exits_2_naming_the_file(tmp_path: Path) -> None:
    r = _tablectl("cluster", "--dir", str(tmp_path))
    assert r.returncode == 2
    assert "cluster.toml: missing" in r.stderr and len(r.stderr.strip().splitlines()) == 1
