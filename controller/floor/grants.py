"""Who may publish and read what on the floor's cluster: the role table of :mod:`controller.contract.roles`, per user.

The same roles as the Mosquitto ACL, from the same data (DESIGN.md, "Operators and roles"): each user gets a
:class:`Grant` of MQTT topics and filters (what it may publish, read, and never read) made by
:func:`controller.contract.roles.grants`; :mod:`controller.floor.nats_config` turns them into NATS permissions on
the converted subjects (:mod:`controller.floor.subjects`). Names are checked as ``broker-config`` checks them
for Mosquitto. The table checks the role again on each command, so a broker with wider permissions never
lets a pit user clear an integrity alarm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from controller.contract.roles import grants as role_grants
from controller.mqtt.broker_config import (
    PERSON_OPTIONS,
    SYSTEM_USERS,
    BrokerConfigError,
    check_people,
    check_prefix,
    check_tables,
    screen_users,
)

__all__ = ["Grant", "GrantError", "floor_grants"]


class GrantError(ValueError):
    """A name that cannot be a user of the floor: says which and why."""


@dataclass(frozen=True, slots=True)
class Grant:
    """One broker user: its role, the topics it may publish, the filters it may and may never read."""

    user: str
    role: str
    publish: tuple[str, ...]
    read: tuple[str, ...]
    deny_read: tuple[str, ...] = ()


def floor_grants(prefix: str, tables: Sequence[str], people: Mapping[str, Sequence[str]], *,
                 screens: int = 1) -> tuple[Grant, ...]:
    """Every user of the floor with its grant: the tables, ``screens`` pit screens (``dashboard``,
    ``dashboard-2``, ...), the tracking system, the central recorder, and ``people``
    (``pit``/``surveillance``/``technician`` to user names). Raises :class:`GrantError` for a bad or repeated name."""
    unknown = sorted(set(people) - set(PERSON_OPTIONS))
    if unknown:
        raise GrantError(f"unknown role(s) {unknown}: expected {sorted(PERSON_OPTIONS)}")
    try:
        check_prefix(prefix)
        table_ids = check_tables(tables)
        screen = screen_users(screens)
        persons = check_people({role: list(names) for role, names in people.items()},
                               [*table_ids, *screen, *SYSTEM_USERS])
    except BrokerConfigError as exc:
        raise GrantError(str(exc)) from None
    users = {t: "table" for t in table_ids} | dict.fromkeys(screen, "dashboard") | SYSTEM_USERS | persons
    out = []
    for user, role in users.items():
        g = role_grants(role, prefix=prefix, user=user)
        out.append(Grant(user, role, g.writes, g.reads, g.denies))
    return tuple(out)
