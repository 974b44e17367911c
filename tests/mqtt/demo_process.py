"""A real ``tablectl demo`` on its own embedded broker, for tests that talk to that broker as a person would.

:func:`running_demo` starts the demo (no ``--broker``), reads the addresses and the login it prints and yields a
:class:`DemoBroker`; :meth:`DemoBroker.login_args` are the ``mosquitto_sub``/``mosquitto_pub`` options of a user,
its password read from the file the demo named (an anonymous broker prints none: then no options).
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from controller.mqtt.ports import free_port


@dataclass
class DemoBroker:
    """Where the demo's broker listens and the file of the passwords it made (None: anonymous)."""

    host: str
    port: int
    ws_port: int
    credentials: Path | None
    output: list[str] = field(default_factory=list)

    def password(self, user: str) -> str:
        assert self.credentials is not None
        users = tomllib.loads(self.credentials.read_text(encoding="utf-8"))["users"]
        return str(users[user]["password"])

    def login_args(self, user: str = "dashboard") -> list[str]:
        """``-u USER -P PASSWORD`` (nothing on an anonymous broker)."""
        return [] if self.credentials is None else ["-u", user, "-P", self.password(user)]

    def address_args(self) -> list[str]:
        return ["-h", self.host, "-p", str(self.port)]


@contextmanager
def running_demo(state_dir: Path, *extra: str) -> Iterator[DemoBroker]:
    """``tablectl demo --speed fast`` on its embedded broker until the block ends (then Ctrl-C, waited for)."""
    port, ws_port = free_port(), free_port()
    while ws_port == port:
        ws_port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--speed", "fast", "--no-dashboard", "--quiet",
         "--port", str(port), "--ws-port", str(ws_port), "--state-dir", str(state_dir), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("Journals:"):
                break
        else:
            raise AssertionError("the demo ended before it ran:\n" + "\n".join(lines) + (proc.stderr.read()
                                                                                        if proc.stderr else ""))
        found = re.search(r"password in (\S+credentials\.toml)", "\n".join(lines))
        yield DemoBroker("127.0.0.1", port, ws_port, Path(found.group(1)) if found else None, lines)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
