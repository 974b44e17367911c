"""Plaintext off loopback only by name: ``broker-config`` (Mosquitto) and ``tablectl run`` (issue 33).

A pit broker written for ``--bind 0.0.0.0`` without ``--tls`` sent every password and rating in clear, and
``tablectl run`` took ``mqtt://`` to a remote broker without a word. Both now refuse in one line (exit 2)
unless ``--allow-plaintext`` (or the table's ``mqtt.allow_plaintext``) asks for it, then warn on stderr.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from controller.mqtt.plaintext import is_loopback
from tests.service.test_run import (
    _config,
    simulated_devices,  # noqa: F401 (the fixture, used here too)
)

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.1.1", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.7", False), ("pit-broker.casino.lan", False),
    ("localhost.evil.example", False),
])
def test_loopback_is_only_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("bind", ["0.0.0.0", "192.0.2.7"])
def test_broker_config_off_loopback_without_tls_is_refused_unless_asked_for_by_name(tmp_path: Path,
                                                                                    bind: str) -> None:
    d = tmp_path / "pit"
    refused = _tablectl("broker-config", "--dir", str(d), "--tables", "t01", "--bind", bind)
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1 and f"--bind {bind}" in line and "--allow-plaintext" in line, line
    assert not (d / "mosquitto.conf").exists() and not (d / "credentials.toml").exists()

    allowed = _tablectl("broker-config", "--dir", str(d), "--tables", "t01", "--bind", bind, "--allow-plaintext")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning" in allowed.stderr and "in clear" in allowed.stderr, allowed.stderr
    conf = (d / "mosquitto.conf").read_text()
    assert f"listener 1883 {bind}" in conf and conf.startswith("# warning:")  # said in the file too

    tls = _tablectl("broker-config", "--dir", str(tmp_path / "tls"), "--tables", "t01", "--bind", bind, "--tls")
    assert tls.returncode == 0 and "warning" not in tls.stderr, tls.stderr
    loop = _tablectl("broker-config", "--dir", str(tmp_path / "loop"), "--tables", "t01")
    assert loop.returncode == 0 and loop.stderr == "", loop.stderr


def test_run_to_a_remote_broker_in_clear_is_refused_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    path = _config(tmp_path, "mqtt://t05:hunter2@192.0.2.7:1883", tmp_path / "nowhere")
    done = _tablectl("run", "--config", str(path), "--new-journal")
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "192.0.2.7" in line and "--allow-plaintext" in line and "hunter2" not in line, line
    assert not (tmp_path / "state").exists() and not (tmp_path / "keys").exists()  # nothing made
    listed = _config(tmp_path, "mqtt://127.0.0.1:1883", tmp_path / "nowhere")
    listed.write_text(listed.read_text().replace('url = "mqtt://127.0.0.1:1883"',
                                                 'brokers = ["mqtt://127.0.0.1:1883", "ws://192.0.2.8:9001/mqtt"]'))
    second = _tablectl("run", "--config", str(listed), "--new-journal")
    assert second.returncode == 2 and "192.0.2.8" in second.stderr, second.stderr


@pytest.mark.parametrize("how", ["flag", "setting"])
async def test_run_to_a_remote_broker_in_clear_when_allowed_is_warned_at_start(
        tmp_path: Path, simulated_devices: Path, how: str) -> None:  # noqa: F811
    from controller.mqtt.ports import free_port

    # every interface (not loopback), where nothing listens: refused at once, the table plays on, warned
    url = f"mqtt://t05:hunter2@0.0.0.0:{free_port()}"
    extra = {"allow_plaintext": "true"} if how == "setting" else {}
    path = _config(tmp_path, url, simulated_devices, **extra)
    args = ["--allow-plaintext"] if how == "flag" else []
    proc = await asyncio.create_subprocess_exec(*TABLECTL, "run", "--config", str(path), "--new-journal", *args,
                                                stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    try:
        first = (await asyncio.wait_for(proc.stderr.readline(), 90)).decode()
        assert "warning" in first and "0.0.0.0" in first and "in clear" in first, first
        assert "hunter2" not in first
        await asyncio.sleep(1)
        assert proc.returncode is None  # it runs
    finally:
        proc.send_signal(signal.SIGTERM)
        rest = (await asyncio.wait_for(proc.stderr.read(), 90)).decode()
        code = await proc.wait()
    assert code == 0, rest
