"""Who may connect to the floor's cluster, under which MQTT client id: the auth callout's decision, pure.

NATS binds no MQTT client id to a user (unlike Mosquitto's ``use_username_as_clientid``): any user of an
account who connects with a table's client id takes the table's session and knocks it off the broker, and
one who takes the recorder's (``recorder``) can acknowledge the recorder's queued events so they never
reach the central record. DESIGN.md ("Operators and roles"): no user may take a table's client id. So the
cluster defines no pit user itself: every MQTT connection is put to the auth callout
(:mod:`controller.floor.auth_service`), which asks this module, and these are the rules, in order:

1. the user is one of the floor's (``DIR/auth/users.json``, written with the node configs);
2. its password matches the bcrypt hash kept there (the node configs hold no password of a pit user);
3. it connects over MQTT (the NATS protocol is the cluster's own tools', who do not come here);
4. its client id is not one **reserved** for another user: each table's session id
   (``tablectl-<prefix>-<table>``) and the id of its start witness belong to that table's user alone,
   ``recorder`` to the recorder.

A user allowed gets its account and the permissions of its role (the same :class:`~controller.floor.grants.Grant`
as the Mosquitto ACL), and the connection types of its role, which the server enforces (a table over
WebSockets is refused). A refusal names the rule, never the password.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.mqtt.addresses import client_id_for, witness_client_id

__all__ = [
    "FLOOR_ACCOUNT",
    "AuthPolicyError",
    "Decision",
    "FloorAuth",
    "FloorUser",
    "hash_password",
    "reserved_client_ids",
]

#: the account every pit user, table, screen and tool of the floor is placed in (its MQTT sessions, its
#: retained messages and the ``TABLES`` stream live in its JetStream)
FLOOR_ACCOUNT = "FLOOR"
#: bcrypt's cost for the floor's passwords. They are generated (24 random bytes, 192 bits): no dictionary or
#: brute force reaches one, whatever the cost, so the cost is kept low (about 15 ms a check here; cost 10 is
#: 0.2 s, 40 s to write a floor of 200 tables and as much CPU for their first connects after a node loss).
#: A checked password is remembered by the service (:class:`FloorAuth`): a reconnect storm hashes nothing.
BCRYPT_ROUNDS = 6
#: what the witness appends to a table's session id (:mod:`controller.mqtt.witness`)


class AuthPolicyError(ValueError):
    """``users.json`` is missing or not what ``broker-config --engine nats`` writes: says which and why."""


def hash_password(password: str) -> str:
    """The bcrypt hash of ``password`` (what NATS's own config and ``users.json`` keep)."""
    import bcrypt

    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_ROUNDS)).decode()


def reserved_client_ids(prefix: str, tables: Sequence[str], recorder: str) -> dict[str, str]:
    """Each reserved MQTT client id and its owner: a table's session and witness ids, the recorder's."""
    out: dict[str, str] = {}
    for t in tables:
        session = client_id_for(prefix, t)
        out[session] = t
        out[witness_client_id(prefix, t)] = t
    out[recorder] = recorder
    return out


@dataclass(frozen=True, slots=True)
class FloorUser:
    """One user of the floor: its role, password hash, connection types and NATS permissions."""

    name: str
    role: str
    password_hash: str
    connection_types: tuple[str, ...]
    permissions: Mapping[str, Mapping[str, Sequence[str]]]


@dataclass(frozen=True, slots=True)
class Decision:
    """The callout's answer: ``user`` allowed (with ``claims`` for its user JWT) or refused for ``reason``."""

    allowed: bool
    reason: str = ""
    user: FloorUser | None = None

    def user_claims(self, account: str) -> dict[str, Any]:
        """The ``nats`` part and names of the user JWT of an allowed decision."""
        assert self.user is not None
        perms = self.user.permissions
        return {
            "name": self.user.name,
            "aud": account,
            "nats": {
                "pub": {k: list(v) for k, v in perms["publish"].items()},
                "sub": {k: list(v) for k, v in perms["subscribe"].items()},
                "subs": -1, "data": -1, "payload": -1,
                "allowed_connection_types": list(self.user.connection_types),
                "type": "user", "version": 2,
            },
        }


def _refused(reason: str) -> Decision:
    return Decision(False, reason)


@dataclass
class FloorAuth:
    """The floor's users and reserved client ids (``DIR/auth/users.json``), and the decision on each connect."""

    users: Mapping[str, FloorUser]
    reserved: Mapping[str, str]
    account: str = FLOOR_ACCOUNT
    #: passwords already checked against their hash, by a keyed digest (never the password itself)
    _checked: set[bytes] = field(default_factory=set, init=False, repr=False)
    _pepper: bytes = field(default_factory=lambda: os.urandom(16), init=False, repr=False)

    def password_ok(self, user: FloorUser, password: str) -> bool:
        """bcrypt's check, once per (user, password) in this process: a reconnect storm costs no hashing."""
        import bcrypt

        key = hmac.new(self._pepper, f"{user.name}\0{user.password_hash}\0{password}".encode(),
                       hashlib.sha256).digest()
        if key in self._checked:
            return True
        try:
            ok = bcrypt.checkpw(password.encode(), user.password_hash.encode())
        except ValueError:
            return False
        if ok:
            self._checked.add(key)
        return ok

    def decide(self, *, user: str | None, password: str | None, client_id: str | None,
               client_type: str | None) -> Decision:
        """Whether ``user`` may connect with ``password`` under MQTT ``client_id`` (rules in the module doc)."""
        found = self.users.get(user or "")
        if found is None:
            return _refused(f"unknown user {user!r}" if user else "no user name given")
        if not password or not self.password_ok(found, password):
            return _refused(f"wrong password for {found.name!r}")
        if client_type != "mqtt" or not client_id:
            return _refused(f"{found.name!r}: only MQTT connections (the NATS protocol is the cluster's own tools')")
        owner = self.reserved.get(client_id)
        if owner is not None and owner != found.name:
            return _refused(f"client id {client_id!r} is reserved for {owner!r}: {found.name!r} may not take "
                            "it (DESIGN.md, 'Operators and roles': no user may take a table's client id; nor the "
                            "recorder's, whose session holds the events it has not recorded)")
        return Decision(True, user=found)

    # -- the file ------------------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps({
            "format": "tablectl-floor-users",
            "version": 1,
            "account": self.account,
            "users": {u.name: {"role": u.role, "password_hash": u.password_hash,
                               "connection_types": list(u.connection_types),
                               "permissions": {k: {kk: list(vv) for kk, vv in v.items()}
                                               for k, v in u.permissions.items()}}
                      for u in self.users.values()},
            "reserved_client_ids": dict(self.reserved),
        }, indent=1)

    @classmethod
    def load(cls, path: Path) -> FloorAuth:
        """Read ``users.json``; :class:`AuthPolicyError` names the file and what is wrong."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise AuthPolicyError(f"{path}: missing (written by `tablectl broker-config --engine nats`)") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise AuthPolicyError(f"{path}: unreadable: {exc}") from None
        try:
            if raw["format"] != "tablectl-floor-users" or raw["version"] != 1:
                raise ValueError("format")
            users = {
                str(name): FloorUser(str(name), str(u["role"]), str(u["password_hash"]),
                                     tuple(str(t) for t in u["connection_types"]),
                                     {str(k): {str(kk): [str(s) for s in vv] for kk, vv in v.items()}
                                      for k, v in u["permissions"].items()})
                for name, u in raw["users"].items()
            }
            reserved = {str(k): str(v) for k, v in raw["reserved_client_ids"].items()}
            account = str(raw["account"])
        except (KeyError, TypeError, ValueError, AttributeError):
            raise AuthPolicyError(f"{path}: not what `tablectl broker-config --engine nats` writes") from None
        unknown = sorted(set(reserved.values()) - set(users))
        if unknown:
            raise AuthPolicyError(f"{path}: client ids reserved for users it does not define: {unknown}")
        return cls(users, reserved, account)
