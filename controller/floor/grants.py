"""Who may publish and read what on the floor's cluster: DESIGN.md "Operators and roles" as data.

Each user gets a :class:`Grant` of MQTT topics and filters (what it may publish, what it may read and
what it may never read); :mod:`controller.floor.nats_config` turns them into NATS permissions on the
converted subjects (:mod:`controller.floor.subjects`). A person writes only commands that name its own
role and user name, and only the verbs that role has: ``<prefix>/+/cmd/<role>/<user>/<verb>``. A table
writes only its own topics and reads only its own subtree. The table checks the role again on each
command, so a broker with wider permissions never lets a pit user clear an integrity alarm.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DASHBOARD_USER",
    "ROLE_VERBS",
    "TABLE_WRITES",
    "TRACKING_USER",
    "Grant",
    "GrantError",
    "floor_grants",
]

DASHBOARD_USER = "dashboard"
TRACKING_USER = "tracking"
#: what a table publishes under its own root (DESIGN.md, MQTT and "Operators and roles")
TABLE_WRITES = ("status", "state", "events", "alarms", "history", "analytics", "ratings", "ratings/open",
                "cmd/+/+/+/result")
#: the command verbs each person's role may send (DESIGN.md, "Operators and roles")
ROLE_VERBS: dict[str, tuple[str, ...]] = {
    "pit": ("open", "close", "set_limits", "decks_changed", "ack_alarm"),
    "surveillance": ("ack_alarm",),  # integrity alarms, shuffle_quality among them, always with a reason
    "technician": ("ack_alarm",),
}
#: the rated-play topics only ``tracking`` and ``surveillance`` read
_RATINGS = ("+/ratings", "+/ratings/open")

_PERSON = re.compile(r"^[a-z0-9._-]{1,64}$")
_TABLE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")


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


def _check(prefix: str, tables: Sequence[str], people: Mapping[str, Sequence[str]]) -> None:
    if not _PREFIX.match(prefix) or len(prefix) > 100:
        raise GrantError(f"--prefix {prefix!r}: a topic prefix such as 'tables' (letters, digits, '_', '-', '.', "
                         "levels separated by '/'; no wildcards)")
    if not tables:
        raise GrantError("--tables: name at least one table, e.g. t01,t02")
    seen: dict[str, str] = {DASHBOARD_USER: "the dashboard", TRACKING_USER: "player tracking"}
    for t in tables:
        if not _TABLE.match(t):
            raise GrantError(f"--tables: {t!r} is not a table id (letters, digits, '_' or '-', up to 32)")
        if t in seen:
            raise GrantError(f"--tables: {t!r} is already the user of {seen[t]}")
        seen[t] = f"table {t}"
    for role, names in people.items():
        for n in names:
            if not _PERSON.match(n):
                raise GrantError(f"--{role} {n!r}: a user name is 1 to 64 of a-z 0-9 . _ - (lower case)")
            if n in seen:
                raise GrantError(f"--{role} {n!r}: already the user of {seen[n]}")
            seen[n] = f"{role} {n}"


def floor_grants(prefix: str, tables: Sequence[str], people: Mapping[str, Sequence[str]]) -> tuple[Grant, ...]:
    """Every user of the floor with its grant; ``people`` maps a role (``pit``, ``surveillance``,
    ``technician``) to its users' names. Raises :class:`GrantError` for a bad or repeated name."""
    unknown = set(people) - set(ROLE_VERBS)
    if unknown:
        raise GrantError(f"unknown role(s) {sorted(unknown)}: expected {sorted(ROLE_VERBS)}")
    _check(prefix, tables, people)
    everything = (f"{prefix}/#",)
    no_ratings = tuple(f"{prefix}/{r}" for r in _RATINGS)
    grants = [  # a table reads its own subtree and the recorder's position of it (its witnesses at start)
        Grant(t, "table", tuple(f"{prefix}/{t}/{k}" for k in TABLE_WRITES),
              (f"{prefix}/{t}/#", f"{prefix}/recorder/{t}"))
        for t in tables
    ]
    grants.append(Grant(DASHBOARD_USER, "dashboard", (), everything, no_ratings))
    grants.append(Grant(TRACKING_USER, "tracking", (), no_ratings))
    for role, names in people.items():
        for n in names:
            writes = tuple(f"{prefix}/+/cmd/{role}/{n}/{verb}" for verb in ROLE_VERBS[role])
            grants.append(Grant(n, role, writes, everything, () if role == "surveillance" else no_ratings))
    return tuple(grants)
