"""What the recorder reads, as typed records: a table's topic and payload turned into an event, a state's
position or ratings (sans-I/O: no broker, no database).

The recorder subscribes to ``<prefix>/+/events``, ``<prefix>/+/state``, ``<prefix>/+/ratings`` and
``<prefix>/+/ratings/open``; the table is the topic level after the prefix, which the broker vouches for (only
the table's own user may write under it). :func:`parse` returns one of :class:`EventIn`, :class:`StateIn`,
:class:`RatingsIn`, or raises :class:`Unreadable` naming the topic and why: a payload the recorder cannot
place (no ``seq``, not JSON) is dropped with that one line, never stored under a guessed ``seq``. The
recorder's own topics (``<prefix>/recorder/...``, which ``+`` matches too) are :data:`IGNORED`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["IGNORED", "RECORDER_LEVEL", "EventIn", "RatingsIn", "StateIn", "Unreadable", "parse", "subscriptions"]

#: the topic level of the recorder's own topics: ``<prefix>/recorder/<table_id>`` and ``<prefix>/recorder/alarms``
RECORDER_LEVEL: Final = "recorder"


class Unreadable(ValueError):
    """A message the recorder cannot place: the message names the topic and why (one line)."""


@dataclass(frozen=True, slots=True)
class EventIn:
    """One published event: the exact text the table published, and its ``seq``."""

    table_id: str
    seq: int
    body: str


@dataclass(frozen=True, slots=True)
class StateIn:
    """What a table's ``state`` says of its journal: the ``seq`` it reflects, the chain head there, its pit."""

    table_id: str
    seq: int
    journal_id: str | None
    head: str | None
    pit: str | None


@dataclass(frozen=True, slots=True)
class RatingsIn:
    """Ratings a table published: one ended rating (``ratings``) or the running ones (``ratings/open``)."""

    table_id: str
    bodies: tuple[str, ...]


#: a message the recorder skips without a word (its own topics)
IGNORED: Final = None


def subscriptions(prefix: str) -> tuple[tuple[str, int], ...]:
    """The recorder's subscriptions and their QoS. ``state`` is QoS 0: only the newest matters (its retained
    copy comes with every subscription), so a broker never queues a table's states for the recorder's
    session, which then holds what cannot be had again: events (QoS 1) and ended ratings."""
    return ((f"{prefix}/+/events", 1), (f"{prefix}/+/ratings", 1), (f"{prefix}/+/ratings/open", 1),
            (f"{prefix}/+/state", 0))


def _text(topic: str, payload: bytes) -> str:
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable(f"{topic}: the payload is not UTF-8") from None


def _object(topic: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise Unreadable(f"{topic}: the payload is not JSON ({e.msg})") from None


def _seq(topic: str, data: Any) -> int:
    seq = data.get("seq") if isinstance(data, dict) else None
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise Unreadable(f"{topic}: no positive integer seq")
    return seq


def _optional_str(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def parse(prefix: str, topic: str, payload: bytes) -> EventIn | StateIn | RatingsIn | None:
    """The record a message carries; ``None`` for a message the recorder skips (its own topics, an emptied
    retained message); raises :class:`Unreadable`."""
    head = f"{prefix}/"
    if not topic.startswith(head):
        raise Unreadable(f"{topic}: not under the prefix {prefix!r}")
    table_id, _, kind = topic[len(head):].partition("/")
    if table_id == RECORDER_LEVEL:
        return IGNORED
    if not table_id or kind not in ("events", "state", "ratings", "ratings/open"):
        raise Unreadable(f"{topic}: not a table's events, state or ratings")
    if not payload:
        return IGNORED  # a retained message cleared
    text = _text(topic, payload)
    data = _object(topic, text)
    if kind == "events":
        return EventIn(table_id, _seq(topic, data), text)
    if kind == "state":
        seq = _seq(topic, data)
        return StateIn(table_id, seq, _optional_str(data, "journal_id"), _optional_str(data, "head"),
                       _optional_str(data, "pit"))
    if kind == "ratings":
        if not isinstance(data, dict):
            raise Unreadable(f"{topic}: a rating is a JSON object")
        return RatingsIn(table_id, (text,))
    items = data if isinstance(data, list) else [data]
    if not all(isinstance(r, dict) for r in items):
        raise Unreadable(f"{topic}: the running ratings are a JSON list of objects")
    return RatingsIn(table_id, tuple(json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in items))
