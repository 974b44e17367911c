"""The floor's nodes listen in clear off loopback only by name: ``broker-config --engine nats`` and
``tablectl cluster`` (issue 33: the WebSocket listener was ``no_tls`` off loopback without a word)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.floor.cluster import find_nats_server, loopback_ports
from controller.floor.nats_config import NatsConfigError, write_nats_cluster

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _tablectl(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=timeout)


def test_broker_config_nats_off_loopback_without_tls_is_refused_unless_asked_for_by_name(tmp_path: Path) -> None:
    d = tmp_path / "floor"
    refused = _tablectl("broker-config", "--engine", "nats", "--dir", str(d), "--tables", "t01", "--bind", "0.0.0.0")
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1 and "--bind 0.0.0.0" in line and "--allow-plaintext" in line, line
    assert not d.exists() or not any(d.iterdir())
    allowed = _tablectl("broker-config", "--engine", "nats", "--dir", str(d), "--tables", "t01", "--bind", "0.0.0.0",
                        "--allow-plaintext")
    assert allowed.returncode == 0, allowed.stderr
    assert "warning" in allowed.stderr and "in clear" in allowed.stderr, allowed.stderr
    assert 'websocket {listen: "0.0.0.0:9001", no_tls: true}' in (d / "n1" / "nats.conf").read_text()
    with pytest.raises(NatsConfigError, match="--allow-plaintext"):  # the library refuses as the command does
        write_nats_cluster(tmp_path / "lib", ["t01"], bind="192.0.2.7")


def test_cluster_starts_nodes_in_clear_off_loopback_only_by_name_and_warns_at_every_start(tmp_path: Path) -> None:
    find_nats_server()
    d = tmp_path / "floor"
    write_nats_cluster(d, ["t01"], nodes=3, ports=loopback_ports(3), bind="0.0.0.0", allow_plaintext=True)
    refused = _tablectl("cluster", "--dir", str(d), "--timeout", "20")
    assert refused.returncode == 2, refused.stderr
    line = refused.stderr.strip()
    assert len(line.splitlines()) == 1 and "0.0.0.0" in line and "--allow-plaintext" in line, line
    assert not (d / "n1" / "nats.log").exists()  # no node was started
    for _start in range(2):  # warned at each start
        proc = subprocess.Popen([*TABLECTL, "cluster", "--dir", str(d), "--allow-plaintext", "--timeout", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline()
            assert "serves MQTT" in first, first
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert "warning" in err and "in clear" in err, err
