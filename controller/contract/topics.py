"""A table's MQTT topics and the bytes of their payloads (docs/mqtt.md, DESIGN's contract).

Every table publishes under ``<prefix>/<table_id>``; :class:`Topics` spells each topic of that
root once, so the publisher, the test double and the command reader cannot drift apart.
:func:`json_payload` is the one way a value becomes a payload: bytes as they are, text as UTF-8,
anything else compact JSON (money is already a decimal string by then).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["CommandTopic", "Json", "Topics", "compact_json", "json_payload", "topic_root"]

#: What a table publishes: JSON-able mappings and lists, or text and bytes taken as they are.
Json = Mapping[str, Any] | Sequence[Any] | str | bytes


def topic_root(prefix: str, table_id: str) -> str:
    """``<prefix>/<table_id>`` (prefix may itself contain ``/``)."""
    return f"{prefix.strip('/')}/{table_id}" if prefix.strip("/") else table_id


#: what orjson leaves to :mod:`json`: what json itself would refuse (dataclasses, datetimes) or write otherwise
#: (subclasses of str and int: enums)
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def compact_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """A value as compact JSON, UTF-8 as is: what the journal stores and hashes and a table publishes.

    orjson's: the same bytes as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` for the values
    a table writes (but for a float under 1e-4, written without its exponent, and a NaN, written null: valid JSON
    both), an order of magnitude sooner (a card's 2.7 KB ``state``: 2 us against 30); a value orjson will not
    write (an integer key, an integer past 64 bits, an enum) goes to :mod:`json` as before. ``sort_keys``: every
    object's keys in order (a signed text: :mod:`controller.journal.anchor`)."""
    try:
        return orjson.dumps(value, option=(_ORJSON_OPTIONS | orjson.OPT_SORT_KEYS) if sort_keys else _ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys).encode()


def json_payload(value: Json) -> bytes:
    """The bytes published for a value: bytes as they are, text as UTF-8, else :func:`compact_json`."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return compact_json(value)


@dataclass(frozen=True, slots=True)
class CommandTopic:
    """Who sent a command and what it asks, as its topic ``<root>/cmd/<role>/<user>/<verb>`` says.

    Taken as they are from the topic: the role and the user are checked by the table
    (:mod:`controller.contract.roles`), the broker's ACL having let only ``user`` write its own name.
    """

    role: str
    user: str
    verb: str


@dataclass(frozen=True, slots=True)
class Topics:
    """The topics of one table, all under ``root``; built once (:meth:`under`), read on every publish.

    Retained and QoS are the contract's too: everything is QoS 1; ``status``, ``state``, ``alarms``,
    ``history`` and ``analytics`` are retained, ``events``, commands and their results are not.
    """

    root: str
    status: str
    state: str
    events: str
    alarms: str
    history: str
    analytics: str
    #: the subscription that takes every command in: ``<root>/cmd/+/+/+`` (role, user, verb)
    commands: str

    @classmethod
    def under(cls, root: str) -> Topics:
        """The topics of the table whose root is ``root`` (see :func:`topic_root`)."""
        return cls(root=root, status=f"{root}/status", state=f"{root}/state", events=f"{root}/events",
                   alarms=f"{root}/alarms", history=f"{root}/history", analytics=f"{root}/analytics",
                   commands=f"{root}/cmd/+/+/+")

    def published(self) -> dict[str, str]:
        """Each topic the table publishes on its own, by its short name (``"state"`` -> ``<root>/state``)."""
        return {"status": self.status, "state": self.state, "events": self.events, "alarms": self.alarms,
                "history": self.history, "analytics": self.analytics}

    @property
    def ratings(self) -> str:
        """``<root>/ratings``: each ended rating (QoS 1, not retained; tracking and surveillance read it)."""
        return f"{self.root}/ratings"

    @property
    def ratings_open(self) -> str:
        """``<root>/ratings/open``: the running ratings (retained; tracking and surveillance read it)."""
        return f"{self.root}/ratings/open"

    def command(self, topic: str) -> CommandTopic | None:
        """The sender and verb of a command topic ``<root>/cmd/<role>/<user>/<verb>``; None for any other.

        A broker may hand a new session retained messages of topics it never subscribed to (amqtt
        does), and each part is one level: ``<root>/cmd/r/u/v/result`` is not a command.
        """
        prefix = f"{self.root}/cmd/"
        if not topic.startswith(prefix):
            return None
        parts = topic[len(prefix):].split("/")
        if len(parts) != 3:
            return None
        return CommandTopic(*parts)

    def result(self, command: CommandTopic) -> str:
        """Where the answer to ``command`` goes: ``<root>/cmd/<role>/<user>/<verb>/result``."""
        return f"{self.root}/cmd/{command.role}/{command.user}/{command.verb}/result"
