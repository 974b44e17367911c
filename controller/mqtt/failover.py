"""Which broker to try next and how long to wait first, sans-I/O: the one failover policy of the table's
publisher (:mod:`controller.mqtt.publisher`) and the recorder (:mod:`controller.recorder.service`).

A table or the recorder may name several brokers (the nodes of the floor's cluster, DESIGN.md "The casino
floor"). It connects to the first that answers; when it loses its broker, or one does not answer, it tries the
next in the list at once; once every broker has failed in turn (a round of the list) it waits (exponential
backoff with jitter: the devices' :class:`drivers.backoff.Backoff` spread, so tables that lost the same broker
do not come back in step) and goes round again. A connection resets the backoff and starts a new round from
the broker it had. Connection errors are logged once per outage: the operator's line, the retries quiet.

The loop that drives it tells it what happened (:meth:`Failover.connected`, :meth:`Failover.failed`,
:meth:`Failover.ended`) and does what it answers; nothing here sleeps or logs, so it is tested alone
(tests/mqtt/test_failover.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Failover", "Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """What to do after a connection ended or a try failed."""

    #: the index of the broker to try next
    broker: int
    #: seconds to wait before that try (None: at once, the next broker of a round)
    wait: float | None
    #: True when it moved to another broker (several are listed)
    moved: bool
    #: True when the connection that ended had been made (a lost broker, not one that did not answer)
    was_connected: bool


class Failover:
    """The failover policy over ``brokers`` brokers (at least one), tried in order from ``start`` (the first)."""

    __slots__ = ("_brokers", "_current", "_delay", "_jitter", "_max", "_min", "_outage_logged", "_round_start", "_up")

    def __init__(self, brokers: int, *, backoff_min: float, backoff_max: float,
                 jitter: Callable[[], float] | None = random.random, start: int = 0) -> None:
        if brokers < 1:
            raise ValueError("no broker given")
        if not 0 <= start < brokers:
            raise ValueError(f"start: {start} is not a broker's index (0 to {brokers - 1})")
        self._brokers = brokers
        self._min, self._max, self._jitter = backoff_min, backoff_max, jitter
        self._delay = backoff_min
        self._current = start
        self._round_start = start  # the broker the round of the list started from
        self._outage_logged = False
        self._up = False  # the try in hand connected

    @property
    def current(self) -> int:
        """The index of the broker in use, or tried next."""
        return self._current

    @property
    def delay(self) -> float:
        """The backoff the next round's wait is based on (before jitter)."""
        return self._delay

    def connected(self) -> None:
        """The try in hand connected: the backoff and the outage's log line start again."""
        self._up = True
        self._delay = self._min
        self._outage_logged = False

    def failed(self) -> bool:
        """The try in hand failed, or its connection was lost, with a connection error: True for the first
        since the last connection (log it as the operator's line), False for the retries (quiet)."""
        first = not self._outage_logged
        self._outage_logged = True
        return first

    def ended(self) -> Retry:
        """The try in hand is over (failed or lost): the broker to try next and how long to wait first."""
        was_connected, self._up = self._up, False
        moved = self._brokers > 1
        if moved:
            if was_connected:  # a lost broker starts a new round from it
                self._round_start = self._current
            self._current = (self._current + 1) % self._brokers
            if self._current != self._round_start:
                return Retry(self._current, None, moved, was_connected)
        return Retry(self._current, self._wait(), moved, was_connected)

    def _wait(self) -> float:
        """The round's wait: the backoff spread over half to one and a half times it; the next one doubles."""
        delay = self._delay
        self._delay = min(self._max, delay * 2)
        return delay if self._jitter is None else delay * (0.5 + self._jitter())
