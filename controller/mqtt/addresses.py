"""Where a table's broker is and who the table is to it: broker URLs, client ids, TLS.

A broker is named by one URL (``mqtt://``, ``mqtts://``, ``ws://`` or ``wss://``, optionally with
``user:password@``); :func:`parse_broker_url` turns it into a :class:`BrokerAddress` and says what is
wrong with a bad one. URLs may carry a password, so :func:`redact_url` is the only form of one that
is ever logged or printed. Nothing here opens a connection.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from typing import Final
from urllib.parse import unquote, urlsplit

__all__ = [
    "DEFAULT_PORTS",
    "BrokerAddress",
    "client_id_for",
    "parse_broker_url",
    "redact_url",
    "tls_context",
]

#: The port of each scheme when the URL names none.
DEFAULT_PORTS: Final = {"mqtt": 1883, "tcp": 1883, "mqtts": 8883, "ssl": 8883, "ws": 80, "wss": 443}


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A parsed broker URL: ``mqtt://``, ``mqtts://``, ``ws://`` or ``wss://`` host, port, path."""

    host: str
    port: int
    tls: bool
    transport: str  # "tcp" or "websockets"
    path: str | None = None
    username: str | None = None
    password: str | None = None


def client_id_for(prefix: str, table_id: str) -> str:
    """MQTT client id holding prefix and table id, so two demos can share a broker.

    A prefix's ``/`` becomes ``-`` and its ``.`` becomes ``_``: NATS (2.14 and later) refuses a client id that
    is not a valid NATS name (``.``, ``*``, ``>``, spaces), so a table under ``casino.floor/...`` could not
    connect to the floor's cluster (a prefix holds letters, digits, ``_``, ``-``, ``.`` and ``/`` only)."""
    safe = prefix.strip("/").replace("/", "-").replace(".", "_") or "root"
    return f"tablectl-{safe}-{table_id}"[:64]


def witness_client_id(prefix: str, name: str) -> str:
    """The client id that reads a journal's witnesses at start: ``name``'s (a table id, reserved for that table on
    the floor: :func:`controller.floor.auth_policy.reserved_client_ids`), or ``pit`` for a reader of many tables."""
    return f"{client_id_for(prefix, name)[:55]}-witness"


def redact_url(url: str) -> str:
    """``url`` with the password of its ``user:password@`` part replaced by ``***``, for logs and messages.

    Broker URLs may carry credentials; only this form of one is ever logged or printed.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    # Up to the last "@": a password with an unencoded "/" or "@" is hidden too (at worst, more is).
    userinfo, at, after = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{after}"


def parse_broker_url(url: str) -> BrokerAddress:
    """Parse a broker URL; raises ``ValueError`` naming what is wrong (never its password)."""
    shown = redact_url(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        raise ValueError(f"broker URL {shown!r}: not a URL") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise ValueError(f"broker URL {shown!r}: scheme must be mqtt://, mqtts://, ws:// or wss://")
    if not parts.hostname:
        raise ValueError(f"broker URL {shown!r}: no host")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise ValueError(f"broker URL {shown!r}: bad port") from None
    websockets = scheme in ("ws", "wss")
    return BrokerAddress(
        host=parts.hostname,
        port=port,
        tls=scheme in ("mqtts", "ssl", "wss"),
        transport="websockets" if websockets else "tcp",
        path=(parts.path or "/mqtt") if websockets else None,
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def tls_context(tls: bool, ca: str | os.PathLike[str] | None, cert: str | os.PathLike[str] | None,
                key: str | os.PathLike[str] | None) -> ssl.SSLContext | None:
    """The TLS context for a broker (``mqtts``/``wss``, or a CA or client certificate given), else None."""
    if not tls and ca is None and cert is None:
        return None
    ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
    if cert is not None:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx
