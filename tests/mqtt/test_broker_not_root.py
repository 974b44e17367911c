"""``broker-config`` run by root never writes a broker that keeps root (issue 33: it wrote ``user root``)."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from controller.mqtt.mosquitto import MosquittoNotInstalled, find_mosquitto
from controller.mqtt.ports import free_port

TABLECTL = [sys.executable, "-m", "controller.cli"]
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="what broker-config writes when root runs it")


def _tablectl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, *args], capture_output=True, text=True, timeout=60)


@root_only
def test_broker_config_as_root_writes_a_broker_that_runs_as_mosquitto_and_starts() -> None:
    try:
        mosquitto = find_mosquitto()
        account = pwd.getpwnam("mosquitto")
    except (MosquittoNotInstalled, KeyError) as exc:
        pytest.skip(str(exc))
    top = Path(tempfile.mkdtemp(prefix="h1-not-root-"))
    top.chmod(0o755)  # where a pit keeps it (/etc/mosquitto/...): the broker's account may pass through
    try:
        d = top / "pit"
        port, ws_port = free_port(), free_port()
        done = _tablectl("broker-config", "--dir", str(d), "--tables", "t01", "--port", str(port),
                         "--ws-port", str(ws_port))
        assert done.returncode == 0, done.stderr
        conf = (d / "mosquitto.conf").read_text().splitlines()
        assert "user root" not in conf and "user mosquitto" in conf
        assert (d / "passwd").stat().st_uid == account.pw_uid and (d / "credentials.toml").stat().st_uid == 0
        log = (top / "mosquitto.log").open("wb")
        proc = subprocess.Popen([mosquitto, "-c", str(d / "mosquitto.conf")], stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    assert proc.poll() is None and time.monotonic() < deadline, (top / "mosquitto.log").read_text()
                    time.sleep(0.1)
            status = Path(f"/proc/{proc.pid}/status").read_text()
            uid = next(line.split()[1:] for line in status.splitlines() if line.startswith("Uid:"))
            assert set(uid) == {str(account.pw_uid)}, status  # real, effective, saved: none root
        finally:
            proc.terminate()
            proc.wait(10)
            log.close()
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)


@root_only
def test_broker_config_refuses_to_run_the_broker_as_root_in_one_line(tmp_path: Path) -> None:
    done = _tablectl("broker-config", "--dir", str(tmp_path / "pit"), "--tables", "t01", "--user", "root")
    assert done.returncode == 2
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "--user root" in line and "never runs as root" in line, line
    assert not (tmp_path / "pit" / "mosquitto.conf").exists()
