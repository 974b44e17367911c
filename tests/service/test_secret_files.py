"""Files holding a password are refused unless mode 0600, as the journal key is (issue #33, "readable secrets").

Each as a real ``tablectl`` process on real files: one line on stderr, exit 2, no traceback.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controller.mqtt.broker_config import write_broker_config

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _tablectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def _one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, done.stderr
    for needle in needles:
        assert needle in line, line
    return line


def _table_config(tmp: Path, mqtt: str) -> Path:
    path = tmp / "t05.toml"
    path.write_text(f"""
table_id = "t05"
profile = "house-h17"
state_dir = "{tmp / 'state'}"
journal_key = "{tmp / 'keys' / 't05.key'}"
anchor_dir = "{tmp / 'anchors'}"

[devices.shoe]
port = "{tmp / 'nowhere' / 'shoe'}"
[devices.shuffler]
port = "{tmp / 'nowhere' / 'shuffler'}"
[devices.chips]
port = "{tmp / 'nowhere' / 'chips'}"
[devices.console]
backend = "sim"

[mqtt]
{mqtt}
""")
    return path


@pytest.mark.parametrize("mqtt", ['url = "mqtt://127.0.0.1:1883"\nusername = "t05"\npassword = "hunter2"',
                                  'url = "mqtt://t05:hunter2@127.0.0.1:1883"',
                                  'brokers = ["mqtt://127.0.0.1:1883", "mqtt://t05:hunter2@127.0.0.1:1884"]'])
def test_a_table_config_holding_the_broker_password_is_refused_unless_0600(tmp_path: Path, mqtt: str) -> None:
    path = _table_config(tmp_path, mqtt)
    _bad_sync(path)
    path.chmod(0o644)
    line = _one_line(_tablectl("run", "--config", str(path), "--new-journal"), str(path), "0644", "chmod 600")
    assert "hunter2" not in line
    path.chmod(0o600)  # then it is read on: the next key's check answers (nothing is started)
    _one_line(_tablectl("run", "--config", str(path), "--new-journal"), "journal_sync")


def _bad_sync(path: Path) -> None:
    """A key refused after the file is read, so a run stops there (a file taken gets as far as it)."""
    text = path.read_text()
    path.write_text(text.replace('anchor_dir = ', 'journal_sync = "SOMETIMES"\nanchor_dir = ', 1))


def test_a_table_config_without_a_password_may_be_read_by_others(tmp_path: Path) -> None:
    path = _table_config(tmp_path, 'url = "mqtt://127.0.0.1:1883"')
    _bad_sync(path)
    path.chmod(0o644)
    _one_line(_tablectl("run", "--config", str(path), "--new-journal"), "journal_sync")


@pytest.mark.parametrize("option", ["--password-file", "--stream-password-file"])
def test_the_recorders_password_file_is_refused_unless_0600(tmp_path: Path, option: str) -> None:
    secret = tmp_path / "recorder.pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o640)
    args = ["recorder", "--broker", "mqtt://127.0.0.1:1", "--db", str(tmp_path / "rec.db"), option, str(secret)]
    if option == "--stream-password-file":
        args += ["--stream", "nats://127.0.0.1:1"]
    line = _one_line(_tablectl(*args), str(secret), "0640")
    assert "hunter2" not in line


def test_the_floors_credentials_and_the_auth_callouts_secrets_are_refused_unless_0600(tmp_path: Path) -> None:
    from controller.floor.cluster import ClusterError, NatsCluster
    from controller.floor.nats_config import write_nats_cluster

    files = write_nats_cluster(tmp_path / "floor", tables=["t01"], nodes=3)
    NatsCluster(files.dir)  # as written: taken
    for secret in (files.credentials, files.dir / "auth" / "service.toml", files.dir / "auth" / "issuer.nk"):
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600, secret
        secret.chmod(0o644)
        with pytest.raises(ClusterError, match="0644"):
            NatsCluster(files.dir)
        if secret.parent.name == "auth":
            _one_line(_tablectl("floor-auth", "--dir", str(files.dir)), str(secret), "0644")
        secret.chmod(0o600)


def test_broker_config_writes_its_credentials_0600(tmp_path: Path) -> None:
    files = write_broker_config(tmp_path / "pit", tables=["t01"])
    assert stat.S_IMODE(files.credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.passwd.stat().st_mode) == 0o600
