"""A ready Mosquitto configuration for a pit that enforces the roles of DESIGN.md ("Operators and roles").

:func:`write_broker_config` writes into one directory:

``mosquitto.conf``
    listeners on 127.0.0.1 (or ``bind``): MQTT on ``port``, MQTT over WebSockets on ``ws_port``
    (with ``socket_domain ipv4``: Mosquitto 2.0.11 otherwise binds every interface for it), each with
    ``use_username_as_clientid true`` (at the top of the file 2.0.11 ignores it), so nobody can take
    a table's client id and knock it off the broker; ``per_listener_settings false``,
    ``allow_anonymous false``, ``password_file``, ``acl_file``, persistence in the directory, log to
    stderr. With ``tls`` both listeners speak TLS (MQTT over TLS and WSS) with the generated broker
    certificate. Since a user's client id is its name, two sessions of one user knock each other
    off: every person and every pit screen has a user of its own (``screens``: ``dashboard``,
    ``dashboard-2``, ...).
``acl``
    one block per user, generated from the role table (:mod:`controller.contract.roles`): a table (user =
    its id) reads its own subtree (and the recorder's ``<prefix>/recorder/<id>``) and writes only its
    own ``status``, ``state``, ``events``, ``alarms``, ``history``, ``analytics``, ``ratings``,
    ``ratings/open`` and ``cmd/+/+/+/result``; the dashboard
    users read ``<prefix>/#`` but the ratings (``topic deny``) and write nothing; each person writes
    only ``<prefix>/+/cmd/<role>/<own name>/<verb>`` for its role's verbs, and reads ``<prefix>/#``
    (surveillance the ratings too; pit and technicians not); ``tracking`` reads only the ratings.
    Mosquitto refuses everything an ACL does not grant.
``passwd``
    Mosquitto's hashed password file: ``user:$7$101$<salt>$<hash>``, PBKDF2-HMAC-SHA512 with 101
    iterations and a 12-byte salt, base64 (what ``mosquitto_passwd`` writes by default); made here
    with :mod:`hashlib`, so no password is ever on a command line.
``credentials.toml`` (mode 0600)
    each user's role and generated password (:mod:`secrets`), and the broker's addresses.
``ca.crt``, ``ca.key``, ``server.crt``, ``server.key`` (with ``tls``)
    a CA made for this pit and the broker's certificate (for ``localhost``, ``127.0.0.1`` and
    ``bind``) signed by it; clients verify the broker against ``ca.crt``. Keys are mode 0600.

Passwords are written to ``credentials.toml`` and nowhere else: not in a log line, not in an
error message, not in the return value's ``repr``.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import json
import os
import pwd
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from controller.contract.roles import ROLES, check_user, grants
from controller.mqtt.limits import MAX_MESSAGE_BYTES, MAX_PACKET_BYTES
from controller.mqtt.plaintext import PlaintextRefused, check_plaintext, is_loopback, plaintext_warning
from controller.private_files import write_private

__all__ = [
    "DASHBOARD_USER",
    "RECORDER_USER",
    "SYSTEM_USERS",
    "TRACKING_USER",
    "BrokerConfigError",
    "BrokerFiles",
    "acl_text",
    "hash_password",
    "verify_password",
    "write_broker_config",
]

DASHBOARD_USER = "dashboard"
TRACKING_USER = "tracking"
#: the central recorder's user (and client id: its persistent session; DESIGN.md, "The casino floor")
RECORDER_USER = "recorder"
#: the users of the pit's systems, whatever tables and people it has
SYSTEM_USERS = {TRACKING_USER: "tracking", RECORDER_USER: "recorder"}
#: the options that name each role's people, by role
PERSON_OPTIONS = {"pit": "--pit", "surveillance": "--surveillance", "technician": "--technician"}
#: what Mosquitto queues per persistent session: the recorder down for an hour on a floor of 200 tables at
#: ~1,500 events an hour each is 300,000; this holds three such hours (or 600 tables for an hour)
MAX_QUEUED_MESSAGES = 1_000_000
PBKDF2_ITERATIONS = 101  # mosquitto_passwd 2.0's default for sha512-pbkdf2 ($7$)
SALT_BYTES = 12

_TABLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


class BrokerConfigError(ValueError):
    """Bad input: names what and why (never a password)."""


@dataclass(frozen=True)
class BrokerFiles:
    """What :func:`write_broker_config` wrote. ``passwords`` is kept out of ``repr``."""

    dir: Path
    conf: Path
    acl: Path
    passwd: Path
    credentials: Path
    prefix: str
    tables: tuple[str, ...]
    #: each person's role, by user name (``--pit``, ``--surveillance``, ``--technician``)
    people: dict[str, str]
    #: the pit screens' users (``dashboard``, ``dashboard-2``, ...)
    screens: tuple[str, ...]
    mqtt_url: str
    ws_url: str
    ca: Path | None = None
    passwords: dict[str, str] = field(default_factory=dict, repr=False)

    def roles(self) -> dict[str, str]:
        """Every user and its role (:data:`controller.contract.roles.ROLES`): what cluster permissions are made of."""
        return ({t: "table" for t in self.tables} | dict.fromkeys(self.screens, "dashboard") | self.people
                | SYSTEM_USERS)


# ---------------------------------------------------------------------------------------------- checks


def check_prefix(prefix: str) -> str:
    if not _PREFIX.match(prefix) or len(prefix) > 100:
        raise BrokerConfigError(f"--prefix {prefix!r}: a topic prefix such as 'tables' "
                                "(letters, digits, '_', '-', '.', levels separated by '/'; no wildcards)")
    return prefix


def check_tables(tables: Sequence[str]) -> tuple[str, ...]:
    if not tables:
        raise BrokerConfigError("--tables: name at least one table, e.g. t01,t02")
    for t in tables:
        if not _TABLE.match(t):
            raise BrokerConfigError(f"--tables: {t!r} is not a table id (letters, digits, '_' or '-', up to 32)")
    if len(set(tables)) != len(tables):
        raise BrokerConfigError("--tables: a table is named twice")
    for t in tables:
        if t in (TRACKING_USER, DASHBOARD_USER) or t.startswith(f"{DASHBOARD_USER}-"):
            raise BrokerConfigError(f"--tables: {t!r} is the user of a screen or the tracking system, not a table id")
        if t == RECORDER_USER:
            raise BrokerConfigError("--tables: 'recorder' is the central recorder's topic level, not a table id")
        if t == "alarms":  # <prefix>/recorder/alarms would be both its position and the recorder's alarms
            raise BrokerConfigError("--tables: 'alarms' is the recorder's alarm topic, not a table id")
    return tuple(tables)


def screen_users(screens: int) -> tuple[str, ...]:
    """The pit screens' users: ``dashboard``, ``dashboard-2``, ... (each screen its own: one client id each)."""
    if not 1 <= screens <= 999:
        raise BrokerConfigError(f"--screens {screens}: expected 1 to 999 (each pit screen has a user of its own)")
    return (DASHBOARD_USER, *(f"{DASHBOARD_USER}-{n}" for n in range(2, screens + 1)))


def check_people(people: dict[str, Sequence[str]], taken: Sequence[str]) -> dict[str, str]:
    """Each person's role by name; a name that is no user name, or given twice, is refused naming the option."""
    out: dict[str, str] = {}
    for role, names in people.items():
        option = PERSON_OPTIONS[role]
        for n in names:
            why = check_user(n)
            if why is not None:
                raise BrokerConfigError(f"{option} {n!r}: {why}")
            if n in taken:
                raise BrokerConfigError(f"{option} {n!r}: already the user of a table, a screen or a system "
                                        "(tracking, recorder)")
            if n in out:
                twice = "twice" if out[n] == role else f"also {PERSON_OPTIONS[out[n]]}: one user, one role"
                raise BrokerConfigError(f"{option} {n!r}: given {twice}")
            out[n] = role
    return out


def _check_port(name: str, port: int) -> int:
    if not 1 <= port <= 65535:
        raise BrokerConfigError(f"{name} {port}: expected 1 to 65535")
    return port


# ---------------------------------------------------------------------------------------------- passwords


def hash_password(password: str, *, salt: bytes | None = None, iterations: int = PBKDF2_ITERATIONS) -> str:
    """Mosquitto's ``$7$`` hash of ``password`` (the part after ``user:`` in the password file)."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    return f"$7${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_password(password: str, hashed: str) -> bool:
    """Whether ``hashed`` (a ``$7$`` entry) is the hash of ``password``."""
    try:
        _, kind, iterations, salt, digest = hashed.split("$")
        if kind != "7":
            return False
        expected = base64.b64decode(digest)
        got = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(salt), int(iterations))
    except (ValueError, TypeError):
        return False
    return secrets.compare_digest(got, expected)


# ---------------------------------------------------------------------------------------------- texts


_ROLE_NOTES = {
    "table": "writes only its own topics and command results; reads its own subtree (its retained state: a witness)",
    "dashboard": "a read-only pit screen: reads the pit but the ratings, writes nothing",
    "pit": "sends open, close, set_limits, decks_changed, ack_alarm (procedure and device alarms), selfcheck as "
           "itself",
    "surveillance": "acknowledges integrity and journal alarms as itself, with a reason; sends selfcheck; reads "
                    "everything",
    "technician": "acknowledges device alarms as itself; reads the pit but the ratings",
    "tracking": "the player-tracking system: reads only the ratings",
    "recorder": "the central recorder: reads every table's events, state and ratings; writes only its positions "
                "and alarms (a table's witness: nobody else may write them)",
}


def acl_text(prefix: str, users: dict[str, str]) -> str:
    """The ACL file from the role table: ``users`` maps each user to its role; anything not granted is refused."""
    lines = [
        "# Written by `tablectl broker-config` from controller/contract/roles.py: the roles of DESIGN.md, \"Operators",
        "# and roles\". Mosquitto refuses every publish and subscription an entry below does not grant; a",
        "# `topic deny` wins over a grant. A person writes only topics that end in its own name (the table",
        "# reads the sender from the topic). Anonymous clients are refused at connect (allow_anonymous false).",
        "",
    ]
    for user, role in users.items():
        g = grants(role, prefix=prefix, user=user)
        lines += [f"# {role} {user}: {_ROLE_NOTES[role]}", f"user {user}"]
        lines += [f"topic deny {t}" for t in g.denies]
        lines += [f"topic read {t}" for t in g.reads]
        lines += [f"topic write {t}" for t in g.writes]
        lines.append("")
    return "\n".join(lines)


def size_limit_lines() -> list[str]:
    """The message size limit (:mod:`controller.mqtt.limits`): a larger publish is dropped, a larger packet
    closes its connection; a pit login's 20 MB retained flood is refused."""
    return [
        "# the largest message the product sends is ~135 KB (docs/mqtt.md, \"Message size limit\"): larger is",
        "# dropped (message_size_limit), a packet larger than that and the longest topic closes the connection",
        f"message_size_limit {MAX_MESSAGE_BYTES}",
        f"max_packet_size {MAX_PACKET_BYTES}",
    ]


#: Mosquitto leaves Nagle on by default: the second of two PUBACKs then waits for the client's delayed ACK, 40 ms
#: at the end of every burst of a table's publishes (its delivered mark, a drain at close); measured in
#: tests/mqtt/test_puback_delay.py
NODELAY_LINES: Final[tuple[str, ...]] = (
    "# acknowledgements and messages leave at once (TCP_NODELAY): with Nagle on, the second of two PUBACKs waits",
    "# for the client's delayed ACK, 40 ms at the end of every burst",
    "set_tcp_nodelay true",
)


def conf_text(d: Path, *, bind: str, port: int, ws_port: int, tls: bool, user: str | None) -> str:
    domain = "ipv6" if ":" in bind else "ipv4"
    tls_lines = [f"cafile {d / 'ca.crt'}", f"certfile {d / 'server.crt'}", f"keyfile {d / 'server.key'}",
                 "tls_version tlsv1.2"] if tls else []
    lines = [
        "# Written by `tablectl broker-config` for a pit (DESIGN.md, \"Operators and roles\").",
        f"# Start with: mosquitto -c {d / 'mosquitto.conf'}",
        *([f"user {user}"] if user else []),
        "per_listener_settings false",
        "allow_anonymous false",
        f"password_file {d / 'passwd'}",
        f"acl_file {d / 'acl'}",
        "persistence true",
        f"persistence_location {d}/",
        "# the recorder's persistent session bridges an outage of an hour or more: Mosquitto's default of",
        "# 1000 queued messages per client would drop events beyond it (a table publishes ~1,500 events an",
        "# hour: 300,000 for 200 tables; state is read at QoS 0, never queued). No byte limit.",
        f"max_queued_messages {MAX_QUEUED_MESSAGES}",
        *size_limit_lines(),
        *NODELAY_LINES,
        "log_dest stderr",
        "connection_messages true",
        "log_timestamp true",
        "",
        f"# MQTT{' over TLS' if tls else ''} (tables, supervisors' tools)",
        f"listener {port} {bind}",
        "protocol mqtt",
        "# the client id is the user name: nobody takes a table's id (and knocks it off the broker)",
        "use_username_as_clientid true",
        *tls_lines,
        "",
        f"# MQTT over WebSockets{' (WSS)' if tls else ''} (the pit dashboard); socket_domain: Mosquitto 2.0.11",
        "# otherwise binds every interface for a websockets listener",
        f"listener {ws_port} {bind}",
        "protocol websockets",
        "use_username_as_clientid true",
        f"socket_domain {domain}",
        *tls_lines,
        "",
    ]
    return "\n".join(lines)


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a TOML basic string for the printable ASCII used here


def credentials_text(files: BrokerFiles, roles: dict[str, str]) -> str:
    lines = [
        "# Written by `tablectl broker-config`: the generated MQTT passwords of this pit. Keep it secret",
        "# (mode 0600); give each table, screen and person only its own entry.",
        "",
        "[broker]",
        f"prefix = {_toml_str(files.prefix)}",
        f"mqtt = {_toml_str(files.mqtt_url)}",
        f"websockets = {_toml_str(files.ws_url)}",
    ]
    if files.ca is not None:
        lines.append(f"ca = {_toml_str(str(files.ca))}")
    for user, password in files.passwords.items():
        lines += ["", f"[users.{_toml_str(user)}]", f"role = {_toml_str(roles[user])}",
                  f"password = {_toml_str(password)}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------- TLS




def write_tls(d: Path, bind: str) -> Path:
    """The pit's CA and the broker's certificate (for ``bind``, localhost and 127.0.0.1) into ``d`` (keys mode
    0600); the CA's path. Mosquitto's configuration and the floor's NATS nodes (:mod:`controller.floor.nats_config`)
    use the same files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tablectl pit CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name).issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    try:
        ip = ipaddress.ip_address(bind)
        if not ip.is_unspecified and str(ip) != "127.0.0.1":
            names.append(x509.IPAddress(ip))
    except ValueError:
        names.append(x509.DNSName(bind))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tablectl pit broker")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=825))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM

    def private(k: ec.EllipticCurvePrivateKey) -> bytes:
        return k.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    write_private(d / "ca.key", private(ca_key))
    (d / "ca.crt").write_bytes(ca_cert.public_bytes(pem))
    write_private(d / "server.key", private(key))
    (d / "server.crt").write_bytes(cert.public_bytes(pem) + ca_cert.public_bytes(pem))
    return d / "ca.crt"


# ---------------------------------------------------------------------------------------------- all


#: the account a broker written by root runs as (Mosquitto's own, made by its package)
BROKER_ACCOUNT = "mosquitto"


def _default_user() -> str | None:
    """Whoever runs this; for root, Mosquitto's own account (the broker never keeps root)."""
    if os.geteuid() == 0:
        return BROKER_ACCOUNT
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return None


def _broker_account(user: str | None, explicit: bool) -> pwd.struct_passwd | None:
    """The account of the ``user`` line, checked: never root; one that exists when root writes the files
    (they are handed to it). None when there is no ``user`` line or the account is unknown to a non-root run
    (the files then belong to whoever runs this, who starts the broker)."""
    if user is None:
        return None
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        if os.geteuid() == 0:
            how = "give --user ACCOUNT" if not explicit else "make the account first"
            raise BrokerConfigError(f"--user {user}: no such account to run the broker as "
                                    f"({how}; never root)") from None
        return None
    if account.pw_uid == 0:
        raise BrokerConfigError(f"--user {user}: the broker never runs as root (give an account of its own, "
                                f"e.g. {BROKER_ACCOUNT})")
    return account


def _hand_to(account: pwd.struct_passwd | None, paths: Sequence[Path]) -> None:
    """Written by root for a broker that runs as ``account``: it must read (and for the directory, write:
    persistence) these; the passwords' list (credentials.toml) and the CA's key stay root's."""
    if account is None or os.geteuid() != 0:
        return
    for path in paths:
        if path.exists():
            os.chown(path, account.pw_uid, account.pw_gid)


def write_broker_config(
    directory: Path | str,
    tables: Sequence[str],
    *,
    prefix: str = "tables",
    port: int | None = None,
    ws_port: int | None = None,
    pit: Sequence[str] = (),
    surveillance: Sequence[str] = (),
    technician: Sequence[str] = (),
    screens: int = 1,
    tls: bool = False,
    bind: str = "127.0.0.1",
    user: str | None = "",
    force: bool = False,
    allow_plaintext: bool = False,
) -> BrokerFiles:
    """Write the pit's broker configuration into ``directory`` (see the module docstring).

    ``user``: the ``user`` line of mosquitto.conf (the account the broker runs as when started by
    root; it must be able to read the files written here): "" = whoever runs this (for root, the
    ``mosquitto`` account, handed the files it reads), None = no line. Never root.
    Raises :class:`BrokerConfigError` for bad input, including a directory that already holds a
    ``credentials.toml`` (unless ``force``: new passwords for every user), and :class:`OSError`.
    Listeners off loopback without ``tls`` are refused unless ``allow_plaintext``
    (:func:`controller.mqtt.plaintext.check_plaintext`).
    """
    check_prefix(prefix)
    tables = check_tables(list(tables))
    screen_names = screen_users(screens)
    people = check_people({"pit": list(pit), "surveillance": list(surveillance), "technician": list(technician)},
                          (*tables, *screen_names, *SYSTEM_USERS))
    port = _check_port("--port", port if port is not None else (8883 if tls else 1883))
    ws_port = _check_port("--ws-port", ws_port if ws_port is not None else (9443 if tls else 9001))
    if port == ws_port:
        raise BrokerConfigError(f"--port and --ws-port are both {port}: two listeners need two ports")
    if not bind or any(c.isspace() for c in bind):
        raise BrokerConfigError(f"--bind {bind!r}: an address such as 127.0.0.1")
    try:
        check_plaintext(f"--bind {bind}", bind, tls=tls, allowed=allow_plaintext)
    except PlaintextRefused as exc:
        raise BrokerConfigError(str(exc)) from None
    explicit = user != ""
    if user == "":
        user = _default_user()
    elif user is not None and not re.match(r"^[a-z_][a-z0-9_.-]*\$?$", user):
        raise BrokerConfigError(f"--user {user!r}: a system account name")
    account = _broker_account(user, explicit)
    d = Path(directory).expanduser().resolve()
    if any(c.isspace() for c in str(d)):
        raise BrokerConfigError(f"--dir {str(d)!r}: Mosquitto's configuration cannot name a path with spaces")
    if d.exists() and not d.is_dir():
        raise BrokerConfigError(f"--dir {d}: exists and is not a directory")
    if (d / "credentials.toml").exists() and not force:
        raise BrokerConfigError(f"--dir {d}: already holds a credentials.toml (--force writes new passwords)")
    d.mkdir(parents=True, exist_ok=True)

    users = ({t: "table" for t in tables} | dict.fromkeys(screen_names, "dashboard") | people | SYSTEM_USERS)
    assert set(users.values()) <= set(ROLES)
    passwords = {u: secrets.token_urlsafe(24) for u in users}
    host = "127.0.0.1" if bind in ("0.0.0.0", "::") else bind
    url_host = f"[{host}]" if ":" in host else host
    files = BrokerFiles(
        dir=d, conf=d / "mosquitto.conf", acl=d / "acl", passwd=d / "passwd", credentials=d / "credentials.toml",
        prefix=prefix, tables=tables, people=people, screens=screen_names,
        mqtt_url=f"{'mqtts' if tls else 'mqtt'}://{url_host}:{port}",
        ws_url=f"{'wss' if tls else 'ws'}://{url_host}:{ws_port}",
        ca=write_tls(d, bind) if tls else None, passwords=passwords,
    )
    write_private(files.passwd, "".join(f"{u}:{hash_password(p)}\n" for u, p in passwords.items()).encode())
    write_private(files.credentials, credentials_text(files, files.roles()).encode())
    files.acl.write_text(acl_text(prefix, files.roles()))
    conf = conf_text(d, bind=bind, port=port, ws_port=ws_port, tls=tls, user=user)
    if not tls and not is_loopback(bind):
        conf = (f"# {plaintext_warning(f'listeners on {bind}')}\n"
                "# (written with broker-config --allow-plaintext)\n") + conf
    files.conf.write_text(conf)
    _hand_to(account, [d, files.passwd, files.acl, *(d / n for n in ("ca.crt", "server.crt", "server.key"))])
    return files
