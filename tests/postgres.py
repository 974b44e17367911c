"""A real PostgreSQL for tests: pytest plugin with the ``postgres`` fixtures, and :class:`PostgresServer` for
benchmarks and soaks.

The server is Debian's (``make system`` installs ``postgresql``; the binaries are found with ``pg_config
--bindir`` or under ``/usr/lib/postgresql/*/bin``). :class:`PostgresServer` runs ``initdb`` into a fresh
temporary directory and ``pg_ctl start`` on a free loopback port, its Unix socket inside that directory
(never ``/var/run/postgresql``), trust authentication for the ``postgres`` user on loopback only. initdb
refuses to run as root, and CI runs as root: then every server command runs as the ``postgres`` system user
(``runuser -u postgres``) on a directory it owns.

Fixtures::

    def test_x(postgres_url):          # a fresh, empty database of the session's server (function scope)
        open_store(postgres_url)
    def test_y(postgres_server):       # the session's server: .url(db), .fresh_database(), .restart()
        postgres_server.stop(); ...; postgres_server.start()   # "PostgreSQL restarted": same port, same data

One server per pytest-xdist worker: initdb and start took 0.9 s here, a restart 0.2 s, each database made from
``template0`` 0.2 s (2026-11-27, a loaded 2-core machine; ``PostgresServer.startup_s``), cheaper than sharing
one server between workers behind a file lock. When PostgreSQL is not installed the fixtures skip with a
message saying so (CI turns a skip into a failure: tests/skip_policy.py).
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from controller.mqtt.ports import free_port

__all__ = ["PostgresNotInstalled", "PostgresServer", "find_postgres_bindir"]

HOST = "127.0.0.1"
_START_TIMEOUT_S = 60


class PostgresNotInstalled(RuntimeError):
    """No PostgreSQL server binaries (initdb, pg_ctl) were found."""


def find_postgres_bindir() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``: ``$PG_BINDIR``, ``pg_config --bindir``, the newest Debian one."""
    candidates: list[str] = []
    if os.environ.get("PG_BINDIR"):
        candidates.append(os.environ["PG_BINDIR"])
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if out.returncode == 0:
            candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name)
                         if Path(p).parent.name.isdigit() else 0, reverse=True)
    for c in candidates:
        if os.access(Path(c) / "initdb", os.X_OK) and os.access(Path(c) / "pg_ctl", os.X_OK):
            return Path(c)
    raise PostgresNotInstalled("PostgreSQL is not installed (make system; apt-get install postgresql)")


class PostgresServer:
    """One PostgreSQL cluster in its own temporary directory on a loopback port; restartable on that port."""

    def __init__(self) -> None:
        self.bindir = find_postgres_bindir()
        self.dir = Path(tempfile.mkdtemp(prefix="tablectl-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "postgres.log"
        self.port = free_port()
        self.host = HOST
        self._as_postgres = os.geteuid() == 0
        self._names = itertools.count(1)
        self.startup_s = 0.0
        if self._as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        t0 = time.monotonic()
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync",
                  "--no-instructions")
        self.start()
        self.startup_s = time.monotonic() - t0

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bindir / tool), *args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=_START_TIMEOUT_S + 30)
        if out.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{tool} failed ({out.returncode}): {out.stderr.strip()[-2000:]}\n{log}")

    def start(self) -> None:
        """Start the server (again) on the same port and data; returns once it accepts connections."""
        options = (f"-p {self.port} -k {self.dir} -c listen_addresses={HOST} -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=16MB")
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "-t", str(_START_TIMEOUT_S), "start")

    def stop(self) -> None:
        """Stop the server at once (``-m fast``: sessions are cut, as in a restart of the casino's PostgreSQL)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", str(_START_TIMEOUT_S), "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def running(self) -> bool:
        """Whether the server runs (its ``postmaster.pid``: removed by a clean stop, kept by a crash)."""
        return (self.data / "postmaster.pid").exists()

    def ensure_started(self) -> None:
        """Start the server if a test left it stopped."""
        if not self.running:
            self.start()

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/{database}"

    def fresh_database(self) -> str:
        """A new, empty database; its URL."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def close(self) -> None:
        try:
            if self.running:
                self.stop()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL (one per xdist worker). A test that stops it starts it again before it ends."""
    try:
        server = PostgresServer()
    except PostgresNotInstalled as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the session's server, as a ``postgresql://`` URL."""
    postgres_server.ensure_started()
    return postgres_server.fresh_database()
