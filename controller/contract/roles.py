"""The roles of a pit as data (DESIGN.md, "Operators and roles"): the one source of every check.

MQTT carries no sender identity, so a command names its sender in the topic,
``<prefix>/<table>/cmd/<role>/<user>/<verb>``, and the broker vouches for it: its ACL lets each user
write only topics that end in its own name and its own roles' verbs. :data:`ROLES` says, per role,
which verbs it may send, which kinds of alarm its ``ack_alarm`` may clear, and which topics it reads,
may not read and writes. Everything that enforces a role is generated from it:

* the table's own check of each command (:func:`refusal`), so a pit user clearing an integrity alarm
  is refused by the table even under a broker with no ACL;
* Mosquitto's ACL (``controller.mqtt.broker_config``, through :func:`grants`);
* a cluster's permissions (NATS, issue #26) from the same :func:`grants`.

Topic patterns are MQTT filters with placeholders: ``{prefix}`` (the pit's topic prefix), ``{table}``
(for the table role: its own id) and ``{user}`` (the user's own name). Which role clears which alarm
reads the alarm's kind from :func:`controller.contract.alarms.alarm_kind`, its one home.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from controller.contract.alarms import alarm_kind
from controller.contract.names import NAME_PATTERN, why_not_a_name

__all__ = [
    "COMMAND_ROLES",
    "ROLES",
    "USER_PATTERN",
    "VERBS",
    "Grants",
    "Role",
    "check_user",
    "command_topic",
    "grants",
    "refusal",
]

#: every command verb a table takes (controller/service/commands.py)
VERBS: Final = ("open", "close", "set_limits", "ack_alarm", "decks_changed", "selfcheck", "set_dealer")

#: a user name: 1 to 64 of a-z 0-9 . _ - (lower case ASCII: no blank, no look-alike letter); the whole name
USER_PATTERN: Final = NAME_PATTERN

_READ_ALL: Final = ("{prefix}/#",)
#: what only tracking and surveillance read (player card numbers): the exceptions of "read everything"
_RATINGS: Final = ("{prefix}/+/ratings", "{prefix}/+/ratings/open")
#: what the central recorder keeps of every table (DESIGN.md, "The casino floor")
_RECORDED: Final = ("{prefix}/+/events", "{prefix}/+/state", *_RATINGS)


@dataclass(frozen=True, slots=True)
class Role:
    """One role: the verbs it sends, the alarms it clears, the topics it reads (but ``denies``) and writes."""

    name: str
    #: commands it may send (each on ``<prefix>/<table>/cmd/<role>/<user>/<verb>``)
    verbs: frozenset[str]
    #: the kinds of alarm its ``ack_alarm`` may clear
    alarm_kinds: frozenset[str]
    reads: tuple[str, ...]
    #: topics it may not read although ``reads`` covers them (Mosquitto: ``topic deny``)
    denies: tuple[str, ...]
    writes: tuple[str, ...]
    #: every acknowledgement it sends gives a ``reason``
    reason_required: bool = False
    #: each user of the role is a person named on the command line (not a table, a screen or a system)
    persons: bool = False


def _command_writes(role: str, verbs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{{prefix}}/+/cmd/{role}/{{user}}/{verb}" for verb in verbs)


#: ``selfcheck``: the program checked again now (DESIGN "Program authentication": "a supervisor's request"), by a
#: pit supervisor or surveillance; a mismatch halts the table with an integrity alarm only surveillance clears.
#: ``set_dealer``: the pit assigns the dealer on duty (DESIGN "The dealer on duty"), under its own name only
_PIT_VERBS: Final = ("open", "close", "set_limits", "decks_changed", "ack_alarm", "selfcheck", "set_dealer")
_SURVEILLANCE_VERBS: Final = ("ack_alarm", "selfcheck")

#: DESIGN.md's table of roles, as data
ROLES: Final[Mapping[str, Role]] = {
    r.name: r for r in (
        Role("table", frozenset(), frozenset(),
             # its own subtree (its retained state is a witness of its journal) and the recorder's position of it
             reads=("{prefix}/{table}/#", "{prefix}/recorder/{table}"),
             denies=(),
             writes=tuple(f"{{prefix}}/{{table}}/{k}" for k in (
                 "status", "state", "events", "alarms", "history", "analytics", "ratings", "ratings/open",
                 "cmd/+/+/+/result"))),
        Role("dashboard", frozenset(), frozenset(), reads=_READ_ALL, denies=_RATINGS, writes=()),
        Role("pit", frozenset(_PIT_VERBS), frozenset({"procedure", "device"}), reads=_READ_ALL, denies=_RATINGS,
             writes=_command_writes("pit", _PIT_VERBS), persons=True),
        Role("surveillance", frozenset(_SURVEILLANCE_VERBS), frozenset({"integrity", "journal"}), reads=_READ_ALL,
             denies=(), writes=_command_writes("surveillance", _SURVEILLANCE_VERBS), reason_required=True,
             persons=True),
        Role("technician", frozenset({"ack_alarm"}), frozenset({"device"}), reads=_READ_ALL, denies=_RATINGS,
             writes=_command_writes("technician", ("ack_alarm",)), persons=True),
        Role("tracking", frozenset(), frozenset(), reads=_RATINGS, denies=(), writes=()),
        # the central recorder (a system): reads what it records, writes only its own positions and alarms,
        # which tables read as a witness of their journals, so nobody else may write there
        Role("recorder", frozenset(), frozenset(), reads=_RECORDED, denies=(), writes=("{prefix}/recorder/#",)),
    )
}
#: the roles whose users send commands
COMMAND_ROLES: Final = tuple(name for name, role in ROLES.items() if role.verbs)


@dataclass(frozen=True, slots=True)
class Grants:
    """What one user may do on the broker: topic filters it reads, may not read, and writes."""

    reads: tuple[str, ...]
    denies: tuple[str, ...]
    writes: tuple[str, ...]


def grants(role: str, *, prefix: str, user: str) -> Grants:
    """The topics ``user`` of ``role`` reads, may not read and writes (a table's user is its id)."""
    r = ROLES[role]

    def fill(patterns: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(p.format(prefix=prefix, table=user, user=user) for p in patterns)

    return Grants(fill(r.reads), fill(r.denies), fill(r.writes))


def check_user(name: str) -> str | None:
    """Why ``name`` is not a user name (1 to 64 of ``a-z 0-9 . _ -``, lower case), or None when it is."""
    return why_not_a_name("user name", name)


def command_topic(root: str, role: str, user: str, verb: str) -> str:
    """Where ``user`` of ``role`` sends ``verb`` to the table whose root is ``root``."""
    return f"{root}/cmd/{role}/{user}/{verb}"


def _cut(text: str) -> str:
    """A name from a topic, as a message shows it: at most 64 characters (a topic level may be far longer)."""
    return text if len(text) <= 64 else text[:61] + "..."


def refusal(role: str, verb: str, *, alarm: tuple[str, bool] | None = None, reason: str | None = None) -> str | None:
    """Why ``role`` may not send ``verb`` (for ``ack_alarm``: clear ``alarm``, its code and whether it
    halts), or None when it may. The table asks this of every command, whatever the broker let through."""
    r = ROLES.get(role)
    if r is None or not r.verbs:
        return f"role {_cut(role)!r} sends no commands (roles that do: {', '.join(COMMAND_ROLES)})"
    if verb not in r.verbs:
        may = sorted(name for name in COMMAND_ROLES if verb in ROLES[name].verbs)
        if not may:
            return f"unknown command {_cut(verb)!r}; known: {', '.join(VERBS)}"
        return f"role {role} may not send {verb} (only {', '.join(may)})"
    if alarm is not None:
        kind = alarm_kind(*alarm)
        if kind not in r.alarm_kinds:
            may = sorted(name for name in COMMAND_ROLES if kind in ROLES[name].alarm_kinds)
            article = "an" if kind[:1] in "aeiou" else "a"
            return f"role {role} may not acknowledge {article} {kind} alarm ({alarm[0]}; only {', '.join(may)})"
        if r.reason_required and not reason:
            return f"role {role} acknowledges an alarm only with a reason"
    return None
