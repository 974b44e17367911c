"""``tablectl cluster --dir DIR`` as an operator runs it: starts the nodes, makes the stream, stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from controller.floor.cluster import loopback_ports
from controller.floor.nats_config import write_nats_cluster


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _auth_services(directory: Path) -> dict[str, int]:
    """The running ``tablectl floor-auth`` processes of ``directory``: node name -> pid."""
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().split()[2]
        except OSError:
            continue
        if b"floor-auth" in argv and str(directory).encode() in argv and state != "Z":
            found[argv[argv.index(b"--node") + 1].decode()] = int(proc.name)
    return found


def test_cluster_serves_then_stops_every_node_cleanly_on_sigterm(tmp_path: Path) -> None:
    ports = loopback_ports(3)
    write_nats_cluster(tmp_path / "floor", ["t01"], ports=ports)
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", "cluster", "--dir", str(tmp_path / "floor")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(5)]
        assert "serves MQTT" in lines[0], (lines, proc.stderr.read() if proc.poll() is not None else "")
        assert "stream TABLES: tables.*.events, 3 replica(s)" in lines[1]
        assert all(_listening(p.mqtt) and _listening(p.ws) for p in ports)
        services = _auth_services(tmp_path / "floor")
        assert sorted(services) == ["n1", "n2", "n3"]  # an auth callout service beside each node
        os.kill(services["n2"], signal.SIGKILL)  # one dies on its own: started again, and said so
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "the auth service beside node n2 exited; started again" in line, line
        deadline = time.monotonic() + 15  # said when it is started: its process may not have exec'd the program yet
        while (again := _auth_services(tmp_path / "floor").get("n2")) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert again is not None and again != services["n2"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 5
    while any(_listening(p.mqtt) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_listening(p.mqtt) or _listening(p.cluster) for p in ports)  # no node left behind
    assert _auth_services(tmp_path / "floor") == {}  # nor an auth service
