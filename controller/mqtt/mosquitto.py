"""A Mosquitto broker run by tablectl on loopback: the soak's broker, and the tests'.

Each broker gets its own directory holding its ``mosquitto.conf`` and log, and two loopback
ports: MQTT over TCP and MQTT over WebSockets. The WebSockets listener sets
``socket_domain ipv4`` because Mosquitto 2.0.11 otherwise binds every interface for it.
``stop()`` then ``start()`` is an outage on the same ports; with ``persistence=True`` retained
messages and persistent sessions survive it, as on a pit's broker.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from controller.mqtt.broker_config import NODELAY_LINES
from controller.mqtt.ports import free_port

__all__ = ["Mosquitto", "MosquittoNotInstalled", "find_mosquitto"]

HOST = "127.0.0.1"
_START_TIMEOUT_S = 10.0


class MosquittoNotInstalled(RuntimeError):
    """No ``mosquitto`` executable was found."""


def find_mosquitto() -> str:
    """Path of the mosquitto executable (``$MOSQUITTO``, ``$PATH``, then ``/usr/sbin``)."""
    env = os.environ.get("MOSQUITTO")
    if env and os.access(env, os.X_OK):
        return env
    found = shutil.which("mosquitto")
    if found:
        return found
    for candidate in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise MosquittoNotInstalled("mosquitto is not installed (apt-get install mosquitto, or set $MOSQUITTO)")


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


class Mosquitto:
    """One Mosquitto process on loopback with its own config; restartable on the same ports."""

    def __init__(
        self,
        workdir: Path | str | None = None,
        *,
        port: int | None = None,
        ws_port: int | None = None,
        extra_config: str = "",
        persistence: bool = False,
    ) -> None:
        self.executable = find_mosquitto()
        self._own_dir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="mosquitto-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.host = HOST
        self.port = port if port is not None else free_port()
        self.ws_port = ws_port if ws_port is not None else free_port()
        while self.ws_port == self.port:
            self.ws_port = free_port()
        self.config_path = self.workdir / "mosquitto.conf"
        self.log_path = self.workdir / "mosquitto.log"
        self.extra_config = extra_config
        self.persistence = persistence
        self._proc: subprocess.Popen[bytes] | None = None
        self._write_config()

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.ws_port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _write_config(self) -> None:
        lines = [
            "# written by tablectl (controller/mqtt/mosquitto.py)",
            "per_listener_settings false",
            "allow_anonymous true",
            "persistence true" if self.persistence else "persistence false",
            f"persistence_location {self.workdir}/",
            f"log_dest file {self.log_path}",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            "log_timestamp true",
            *NODELAY_LINES,
            f"listener {self.port} {self.host}",
            "protocol mqtt",
            f"listener {self.ws_port} {self.host}",
            "protocol websockets",
            "socket_domain ipv4",
        ]
        if os.getuid() == 0:
            # Running as root, mosquitto would switch to user "mosquitto" and lose the log file.
            lines.insert(1, f"user {pwd.getpwuid(os.getuid()).pw_name}")
        self.config_path.write_text("\n".join(lines) + "\n" + self.extra_config + "\n")

    def start(self) -> None:
        """Start (or restart) the broker on its ports; return once both listeners accept."""
        if self.running:
            return
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            self._proc = subprocess.Popen(
                [self.executable, "-c", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            while time.monotonic() < deadline:
                if self._proc.poll() is not None:
                    break
                if _port_open(self.port) and _port_open(self.ws_port):
                    return
                time.sleep(0.02)
            err = b""
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            elif self._proc.stderr is not None:
                err = self._proc.stderr.read()
            self._proc = None
            if time.monotonic() >= deadline:
                log = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
                raise RuntimeError(
                    f"mosquitto did not start on {self.port}/{self.ws_port}: {err.decode(errors='replace')}\n{log}"
                )
            time.sleep(0.1)  # e.g. port still held by the previous instance; retry until the deadline

    def stop(self) -> None:
        """Stop the broker (SIGTERM, then SIGKILL); its clients see the connection drop."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()

    def log(self) -> str:
        """The broker's log so far (for assertion messages)."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def close(self) -> None:
        """Stop and remove the temporary directory if this object created it."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Mosquitto:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Mosquitto(url={self.url!r}, ws_url={self.ws_url!r}, running={self.running})"
