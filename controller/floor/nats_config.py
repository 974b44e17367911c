"""The floor's NATS cluster configuration: one config file per node, the users' passwords, a README.

:func:`write_nats_cluster` writes into one directory::

    DIR/n1/nats.conf ... DIR/nN/nats.conf   each node (mode 0600: three bcrypt hashes, and the routes' own
                                            password, which a node presents when it dials another)
    DIR/n1/jetstream/ ...                   each node's JetStream store (MQTT sessions, retained messages)
    DIR/auth/                               mode 0700: the auth callout's service.toml (its login, the nodes),
                                            issuer.nk (the key its answers are signed with) and users.json
                                            (every user's bcrypt hash, role, permissions; reserved client ids)
    DIR/cluster.toml                        the nodes' names and ports, read by ``tablectl cluster``
    DIR/credentials.toml                    mode 0600: each user's role and generated password, the brokers
    DIR/README                              how to start the nodes and what each user may do

Each node: ``server_name``, a NATS client listener, a ``cluster`` block whose routes name every other
node and which admits only a route that presents the cluster's own login (``floor-route``: the node checks a
bcrypt hash; with ``--tls`` the route's certificate as well, :func:`route_login_text`), ``jetstream
{store_dir}``, an MQTT listener (3.1.1, for the tables and tools), an MQTT-over-WebSocket
listener (``no_tls``: path ``/mqtt``, for the dashboards), and two accounts: ``FLOOR`` (JetStream; every
user of the pit) and ``AUTH`` (the callout service alone). The node itself knows only the cluster's own
tools' users; every other connection goes to the auth callout (:mod:`controller.floor.auth_service`),
which checks the password and the MQTT client id (:mod:`controller.floor.auth_policy`: nobody takes a
table's or the recorder's) and grants the user of :func:`controller.floor.grants.floor_grants` its
permissions on the NATS subjects of its MQTT topics. A table may connect over MQTT only
(``allowed_connection_types``); people and screens over MQTT or MQTT over WebSockets; nobody over the NATS
protocol (that port serves the cluster's own tools). NATS answers an MQTT publish it refuses with a PUBACK
all the same and drops it (MQTT 3.1.1 has no refusal): what the grants promise is that nobody else sees it.
"""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from controller.floor.auth_policy import FLOOR_ACCOUNT, FloorAuth, FloorUser, hash_password, reserved_client_ids
from controller.floor.auth_service import AUTH_ACCOUNT, AUTH_USER
from controller.floor.grants import Grant, GrantError, floor_grants
from controller.floor.nats_jwt import new_account_seed, signer
from controller.floor.subjects import mqtt_filter_subjects, mqtt_topic_subject
from controller.mqtt.limits import MAX_MESSAGE_BYTES
from controller.mqtt.options import NATS_JS_API_TIMEOUT_S
from controller.mqtt.plaintext import PlaintextRefused, check_plaintext
from controller.private_files import write_private

__all__ = [
    "ADMIN_USER",
    "CLUSTER_NAME",
    "ROUTE_USER",
    "NatsClusterFiles",
    "NatsConfigError",
    "NodePorts",
    "check_bind",
    "consecutive_ports",
    "node_config_text",
    "permissions_of",
    "require_floor_extra",
    "route_login_text",
    "route_urls",
    "size_limit_lines",
    "write_nats_cluster",
]

CLUSTER_NAME = "floor"
#: the cluster's own tools (the ``TABLES`` stream, later the recorder): the NATS protocol only, JetStream's API
ADMIN_USER = "floor-admin"
#: the cluster's own login on its routes: a node admits a route only with it (a stranger's server gets nothing)
ROUTE_USER = "floor-route"
#: seconds a node waits for the auth callout's answer before it refuses the client
AUTH_TIMEOUT_S = 5.0
_TABLE_CONNECTIONS = ("MQTT",)
_PERSON_CONNECTIONS = ("MQTT", "MQTT_WS")


class NatsConfigError(ValueError):
    """Bad input to the cluster's configuration: names what and why (never a password)."""


@dataclass(frozen=True, slots=True)
class NodePorts:
    """One node's listeners (all on the same bind address)."""

    mqtt: int
    ws: int
    cluster: int
    client: int


@dataclass(frozen=True)
class NatsClusterFiles:
    """What :func:`write_nats_cluster` wrote. ``passwords`` is kept out of ``repr``."""

    dir: Path
    configs: tuple[Path, ...]
    credentials: Path
    readme: Path
    layout: Path
    prefix: str
    grants: tuple[Grant, ...]
    mqtt_urls: tuple[str, ...]
    ws_urls: tuple[str, ...]
    passwords: dict[str, str] = field(default_factory=dict, repr=False)
    ca: Path | None = None


def consecutive_ports(nodes: int, *, mqtt: int = 1883, ws: int = 9001, cluster: int = 6222,
                      client: int = 4222) -> tuple[NodePorts, ...]:
    """Node ``k`` (from 0) listens on each base port plus ``k``: 1883, 1884, 1885 for MQTT."""
    ports = tuple(NodePorts(mqtt + k, ws + k, cluster + k, client + k) for k in range(nodes))
    _check_ports(ports)
    return ports


def _check_ports(ports: Sequence[NodePorts]) -> None:
    used: list[int] = []
    for p in ports:
        for name, n in (("MQTT", p.mqtt), ("WebSocket", p.ws), ("cluster", p.cluster), ("client", p.client)):
            if not 1 <= n <= 65535:
                raise NatsConfigError(f"{name} port {n}: expected 1 to 65535")
            used.append(n)
    if len(set(used)) != len(used):
        raise NatsConfigError("ports: two listeners of the cluster would share a port "
                              "(give --port, --ws-port, --cluster-port, --client-port bases far enough apart)")


def _q(s: str) -> str:
    """A NATS configuration string (JSON's quoting is what the NATS parser reads)."""
    return json.dumps(s)


def _list(items: Sequence[str]) -> str:
    return "[" + ", ".join(_q(i) for i in items) + "]"


def permissions_of(grant: Grant) -> dict[str, dict[str, list[str]]]:
    """The NATS permissions of one user: its MQTT grant on the converted subjects."""
    publish = [mqtt_topic_subject(t) for t in grant.publish]
    read = [s for f in grant.read for s in mqtt_filter_subjects(f)]
    deny = [s for f in grant.deny_read for s in mqtt_filter_subjects(f)]
    perms: dict[str, dict[str, list[str]]] = {
        # a user that may publish nothing is denied everything (an empty allow list would allow all)
        "publish": {"allow": publish} if publish else {"deny": [">"]},
        "subscribe": {"allow": read},
    }
    if deny:
        perms["subscribe"]["deny"] = deny
    return perms


def _admin_block(password_hash: str) -> str:
    return (f"    # the cluster's own tools (tablectl cluster makes the TABLES stream): NATS protocol, JetStream API\n"
            f"    {{user: {_q(ADMIN_USER)}, password: {_q(password_hash)}, allowed_connection_types: [\"STANDARD\"],\n"
            f"     permissions: {{publish: {{allow: [\"$JS.API.>\"]}}, subscribe: {{allow: [\"_INBOX.>\"]}}}}}}")


def _auth_block(password_hash: str) -> str:
    return (f"    # the auth callout service (tablectl floor-auth): NATS protocol, alone in its account\n"
            f"    {{user: {_q(AUTH_USER)}, password: {_q(password_hash)}, allowed_connection_types: [\"STANDARD\"]}}")


def node_config_text(d: Path, name: str, index: int, ports: Sequence[NodePorts], *, bind: str,
                     hashes: Mapping[str, str], issuer: str, route_password: str, tls: bool = False) -> str:
    """The configuration file of node ``name`` (``ports[index]`` are its own listeners). With ``tls`` every
    listener speaks TLS with the certificate in ``d`` (routes verify each other against ``d/ca.crt``).

    ``hashes``: the bcrypt hashes of the users the node knows itself (``floor-admin``, ``floor-auth``, and
    ``floor-route`` on the routes); every other user is the auth callout's (``issuer``: the public key its
    answers are signed with). ``route_password``: what this node presents when it dials the others."""
    own = ports[index]
    cert = f"cert_file: {_q(str(d / 'server.crt'))}, key_file: {_q(str(d / 'server.key'))}"
    tls_block = f", tls {{{cert}}}" if tls else ""
    route_cert = f"cert_file: {_q(str(d / 'route.crt'))}, key_file: {_q(str(d / 'route.key'))}"
    route_tls = f", tls {{{route_cert}, ca_file: {_q(str(d / 'ca.crt'))}}}" if tls else ""
    routes = route_urls(ports, index, bind, route_password)
    replicas = min(3, len(ports))
    return "\n".join([
        f"# Written by `tablectl broker-config --engine nats`: node {name} of the floor's cluster",
        "# (DESIGN.md, \"The casino floor\"). Mode 0600: bcrypt hashes, and the routes' password, which",
        "# this node presents when it dials the others.",
        f"# Start with: nats-server -c {d / name / 'nats.conf'}   (or all nodes: tablectl cluster --dir {d})",
        f"server_name: {_q(name)}",
        *size_limit_lines(),
        "# the NATS protocol: the cluster's own tools (no user of the pit may connect here)",
        f"listen: {_q(f'{bind}:{own.client}')}",
        *([f"tls {{{cert}}}"] if tls else []),
        f"jetstream {{store_dir: {_q(str(d / name / 'jetstream'))}}}",
        # one node (the demo's broker) has no routes: a cluster block would make JetStream wait for its peers;
        # the routes admit only a node presenting the cluster's own login (floor-route); each node presents the
        # password itself when it dials the others (so this file is mode 0600)
        *([f"cluster {{name: {_q(CLUSTER_NAME)}, listen: {_q(f'{bind}:{own.cluster}')}, "
           f"{route_login_text(hashes[ROUTE_USER])}, routes: {_list(routes)}{route_tls}}}"] if routes else []),
        "# MQTT 3.1.1 for the tables and tools; sessions and retained messages live in JetStream,",
        f"# replicated on {replicas} node(s)",
        "# js_api_timeout: how long a client's packet waits on JetStream before NATS refuses it or closes the",
        "# connection; the tables give up on a silent node just after it (controller/mqtt/options.py)",
        f"mqtt {{listen: {_q(f'{bind}:{own.mqtt}')}, stream_replicas: {replicas}, "
        f"js_api_timeout: \"{NATS_JS_API_TIMEOUT_S:g}s\"{tls_block}}}",
        "# MQTT over WebSockets (path /mqtt) for the pit dashboards",
        f"websocket {{listen: {_q(f'{bind}:{own.ws}')}{tls_block if tls else ', no_tls: true'}}}",
        "# Accounts: FLOOR holds every table, screen, person and tool (their MQTT sessions, retained messages,",
        "# the TABLES stream); AUTH holds the auth callout service alone. No pit user is defined here: each",
        "# MQTT connection is put to the callout (tablectl floor-auth), which checks the password against",
        "# auth/users.json and refuses a client id reserved for another user (a table's, the recorder's).",
        "accounts {",
        f"  {AUTH_ACCOUNT} {{users: [",
        _auth_block(hashes[AUTH_USER]),
        "  ]}",
        f"  {FLOOR_ACCOUNT} {{jetstream: enabled, users: [",
        _admin_block(hashes[ADMIN_USER]),
        "  ]}",
        "  SYS {}",
        "}",
        "system_account: SYS",
        "authorization {",
        f"  timeout: {AUTH_TIMEOUT_S:g}",
        f"  auth_callout {{issuer: {_q(issuer)}, account: {AUTH_ACCOUNT}, "
        f"auth_users: {_list([AUTH_USER, ADMIN_USER])}}}",
        "}",
        "",
    ])


def require_floor_extra(what: str) -> None:
    """Raise :class:`NatsConfigError` naming ``what`` and the missing module unless the floor extra's Python
    modules import: bcrypt (the users' hashes), nkeys (the callout's issuer key), nats-py (the callout)."""
    try:
        import bcrypt  # noqa: F401
        import nats  # noqa: F401
        import nkeys  # noqa: F401
    except ImportError as exc:
        raise NatsConfigError(f"{what} needs the floor extra ({exc.name} is not installed): "
                              "pip install 'blackjack-table-controller[floor]'") from None


def check_bind(bind: str, *, tls: bool, allow_plaintext: bool) -> str | None:
    """Every listener of a node (MQTT, WebSocket, routes, NATS) binds ``bind``: off loopback without TLS only
    with ``allow_plaintext``; then the warning to say (:mod:`controller.mqtt.plaintext`)."""
    try:
        return check_plaintext(f"--bind {bind}", bind, tls=tls, allowed=allow_plaintext)
    except PlaintextRefused as exc:
        raise NatsConfigError(str(exc)) from None


def size_limit_lines() -> list[str]:
    """``max_payload``: the largest message a node takes, MQTT publishes included (:mod:`controller.mqtt.limits`)."""
    return ["# the largest message the product sends is ~135 KB (docs/mqtt.md, \"Message size limit\")",
            f"max_payload: {MAX_MESSAGE_BYTES}"]


def route_login_text(password_hash: str) -> str:
    """The ``cluster`` block's ``authorization``: a route is admitted only with the cluster's own login
    (checked against its bcrypt hash; NATS compares a ``$2`` password as bcrypt)."""
    return f"authorization {{user: {_q(ROUTE_USER)}, password: {_q(password_hash)}, timeout: {AUTH_TIMEOUT_S:g}}}"


def route_urls(ports: Sequence[NodePorts], index: int, bind: str, password: str) -> list[str]:
    """The routes node ``index`` dials: every other node, presenting the cluster's own login (a route URL
    carries the password itself: NATS has no other way for a node to present it)."""
    return [f"nats-route://{ROUTE_USER}:{password}@{bind}:{p.cluster}" for i, p in enumerate(ports) if i != index]


def _write_route_cert(d: Path, bind: str) -> None:
    """``route.crt`` and ``route.key``: each node's certificate on the routes, signed by the pit's CA in ``d``.

    NATS routes are mutual TLS: a node presents its certificate as a client too, so this one allows both
    server and client authentication (the broker's ``server.crt`` allows only the first).
    """
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_cert = x509.load_pem_x509_certificate((d / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        if str(ipaddress.ip_address(bind)) != "127.0.0.1":
            names.append(x509.IPAddress(ipaddress.ip_address(bind)))
    except ValueError:
        names.append(x509.DNSName(bind))
    now = dt.datetime.now(dt.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tablectl floor route")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                       critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    write_private(d / "route.key", key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()).decode())
    (d / "route.crt").write_bytes(cert.public_bytes(pem) + ca_cert.public_bytes(pem))




def _write_auth(d: Path, files: NatsClusterFiles, hashes: Mapping[str, str], seed: bytes,
                ports: Sequence[NodePorts], bind: str, *, force: bool) -> None:
    """``DIR/auth/``: what the auth callout service reads (:mod:`controller.floor.auth_service`)."""
    auth = d / "auth"
    if force and auth.exists():
        shutil.rmtree(auth)
    auth.mkdir(mode=0o700)
    users = {g.user: FloorUser(g.user, g.role, hashes[g.user],
                               _TABLE_CONNECTIONS if g.role == "table" else _PERSON_CONNECTIONS, permissions_of(g))
             for g in files.grants}
    tables = [g.user for g in files.grants if g.role == "table"]
    recorder = next(g.user for g in files.grants if g.role == "recorder")
    policy = FloorAuth(users, reserved_client_ids(files.prefix, tables, recorder), FLOOR_ACCOUNT)
    write_private(auth / "users.json", policy.to_json() + "\n")
    write_private(auth / "issuer.nk", seed.decode() + "\n")
    scheme = "tls" if files.ca is not None else "nats"
    service = [
        "# Written by `tablectl broker-config --engine nats`: the auth callout service's login and the nodes",
        "# (tablectl floor-auth --dir DIR --node NAME). Mode 0600.",
        f"user = {_q(AUTH_USER)}",
        f"password = {_q(files.passwords[AUTH_USER])}",
        *([f"ca = {_q(str(files.ca))}"] if files.ca is not None else []),
        "",
        "[servers]",
        *(f"n{k + 1} = {_q(f'{scheme}://{bind}:{p.client}')}" for k, p in enumerate(ports)),
    ]
    write_private(auth / "service.toml", "\n".join(service) + "\n")


def _readme(files: NatsClusterFiles, names: Sequence[str]) -> str:
    lines = [
        "The floor's NATS cluster, written by `tablectl broker-config --engine nats`.",
        "",
        "Start every node on this machine (Ctrl-C stops them):",
        f"    tablectl cluster --dir {files.dir}",
        "or each node on its own machine (edit the addresses first; see docs/floor.md), each with the",
        "auth callout service beside it (it admits every user: password, and no table's client id taken):",
        *(f"    nats-server -c {c}   and   tablectl floor-auth --dir {files.dir} --node {c.parent.name}"
          for c in files.configs),
        "",
        "MQTT (tables, tools):        " + ",".join(files.mqtt_urls),
        "MQTT over WebSockets (/mqtt): " + ",".join(files.ws_urls),
        "A table's settings: [mqtt] brokers = [the MQTT addresses above]; it moves to another node when",
        "it loses its own. With fewer than two of three nodes up no MQTT client can connect.",
        "",
        f"Passwords: {files.credentials} (mode 0600); give each user only its own.",
        "",
        "Users (DESIGN.md, \"Operators and roles\"): what each may publish and read, as MQTT topics:",
    ]
    for g in files.grants:
        lines.append(f"  {g.role} {g.user}: publish {', '.join(g.publish) or 'nothing'}; read "
                     f"{', '.join(g.read)}{'; never ' + ', '.join(g.deny_read) if g.deny_read else ''}")
    lines += ["", f"Nodes: {', '.join(names)}; each keeps its JetStream store in DIR/<node>/jetstream.", ""]
    return "\n".join(lines)


def _credentials(files: NatsClusterFiles) -> str:
    lines = [
        "# Written by `tablectl broker-config --engine nats`: the generated passwords of the floor's users.",
        "# Keep it secret (mode 0600); give each table, screen and person only its own entry.",
        "",
        "[broker]",
        "engine = \"nats\"",
        f"prefix = {_q(files.prefix)}",
        f"mqtt = {_list(files.mqtt_urls)}",
        f"websockets = {_list(files.ws_urls)}",
        *([f"ca = {_q(str(files.ca))}"] if files.ca is not None else []),
    ]
    roles = {g.user: g.role for g in files.grants} | {ADMIN_USER: "admin", AUTH_USER: "auth-service",
                                                       ROUTE_USER: "route"}
    for user, password in files.passwords.items():
        lines += ["", f"[users.{_q(user)}]", f"role = {_q(roles[user])}", f"password = {_q(password)}"]
    return "\n".join(lines) + "\n"


def _layout(names: Sequence[str], ports: Sequence[NodePorts], bind: str, ca: Path | None) -> str:
    lines = ["# Written by `tablectl broker-config --engine nats`: the nodes `tablectl cluster` starts.",
             f"bind = {_q(bind)}", *([f"ca = {_q(str(ca))}"] if ca is not None else [])]
    for name, p in zip(names, ports, strict=True):
        lines += ["", "[[nodes]]", f"name = {_q(name)}", f"mqtt = {p.mqtt}", f"ws = {p.ws}",
                  f"cluster = {p.cluster}", f"client = {p.client}"]
    return "\n".join(lines) + "\n"


def write_nats_cluster(
    directory: Path | str,
    tables: Sequence[str],
    *,
    prefix: str = "tables",
    people: Mapping[str, Sequence[str]] | None = None,
    nodes: int = 3,
    ports: Sequence[NodePorts] | None = None,
    bind: str = "127.0.0.1",
    force: bool = False,
    tls: bool = False,
    screens: int = 1,
    allow_plaintext: bool = False,
) -> NatsClusterFiles:
    """Write the floor's cluster configuration into ``directory`` (see the module docstring).

    ``people`` maps ``pit``/``surveillance``/``technician`` to user names; ``ports`` (one per node)
    defaults to :func:`consecutive_ports`. Raises :class:`NatsConfigError` for bad input, including a
    directory that already holds a configuration (unless ``force``: new passwords, fresh stores), and
    listeners off loopback without ``tls`` unless ``allow_plaintext`` (:func:`check_bind`).
    """
    if nodes < 1 or nodes > 9:
        raise NatsConfigError(f"--nodes {nodes}: expected 1 to 9 (3 for a floor: it survives one node lost)")
    check_bind(bind, tls=tls, allow_plaintext=allow_plaintext)
    require_floor_extra("--engine nats")
    try:
        grants = floor_grants(prefix, tables, dict(people or {}), screens=screens)
    except GrantError as exc:
        raise NatsConfigError(str(exc)) from None
    ports = tuple(ports) if ports is not None else consecutive_ports(nodes)
    if len(ports) != nodes:
        raise NatsConfigError(f"ports: {len(ports)} given for {nodes} node(s)")
    _check_ports(ports)
    d = Path(directory).resolve()
    names = tuple(f"n{k + 1}" for k in range(nodes))
    if d.exists() and not d.is_dir():
        raise NatsConfigError(f"--dir {directory}: not a directory")
    earlier = [d / "cluster.toml", d / "credentials.toml", d / "auth", *(d / n for n in names)]
    if not force and any(p.exists() for p in earlier):
        raise NatsConfigError(f"--dir {directory}: already holds a cluster configuration "
                              "(--force writes a new one: new passwords, empty JetStream stores)")
    d.mkdir(parents=True, exist_ok=True)
    for own in (ADMIN_USER, AUTH_USER, ROUTE_USER):
        if own in {g.user for g in grants}:
            raise NatsConfigError(f"{own!r}: the cluster's own tools' user, not a person's or a table's name")
    passwords = {g.user: secrets.token_urlsafe(24) for g in (*grants,)}
    passwords[ADMIN_USER] = secrets.token_urlsafe(24)
    passwords[AUTH_USER] = secrets.token_urlsafe(24)
    passwords[ROUTE_USER] = secrets.token_urlsafe(24)  # URL-safe: it goes into each route's URL
    files = NatsClusterFiles(
        dir=d,
        configs=tuple(d / n / "nats.conf" for n in names),
        credentials=d / "credentials.toml",
        readme=d / "README",
        layout=d / "cluster.toml",
        prefix=prefix,
        grants=grants,
        mqtt_urls=tuple(f"{'mqtts' if tls else 'mqtt'}://{bind}:{p.mqtt}" for p in ports),
        ws_urls=tuple(f"{'wss' if tls else 'ws'}://{bind}:{p.ws}/mqtt" for p in ports),
        passwords=passwords,
        ca=d / "ca.crt" if tls else None,
    )
    if tls:
        from controller.mqtt.broker_config import write_tls  # the pit's CA and broker certificate, as for Mosquitto

        write_tls(d, bind)
        _write_route_cert(d, bind)
    hashes = {u: hash_password(passwords[u]) for u in passwords}
    seed = new_account_seed()
    issuer = signer(seed).public_key.decode()
    _write_auth(d, files, hashes, seed, ports, bind, force=force)
    for k, name in enumerate(names):
        node_dir = d / name
        if force and node_dir.exists():
            shutil.rmtree(node_dir)
        node_dir.mkdir(mode=0o700)
        write_private(files.configs[k], node_config_text(d, name, k, ports, bind=bind, hashes=hashes,
                                                          issuer=issuer, tls=tls,
                                                          route_password=passwords[ROUTE_USER]))
    write_private(files.credentials, _credentials(files))
    files.layout.write_text(_layout(names, ports, bind, files.ca), encoding="utf-8")
    files.readme.write_text(_readme(files, names), encoding="utf-8")
    return files
