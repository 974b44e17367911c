"""Exponential backoff, sans-I/O: how long to wait before the next try of something that failed.

The one reconnect policy of the devices: the serial drivers (:mod:`drivers.base`) and the dealer console
(:mod:`drivers.console`) reopen a lost port after these delays. It only counts: the caller sleeps, so it is
tested without a clock (tests/drivers/test_backoff.py). The brokers' failover
(:mod:`controller.mqtt.failover`) doubles the same way with jitter, but keeps its own few lines: the MQTT
layer imports nothing of the drivers (tests/test_layers.py).
"""

from __future__ import annotations

__all__ = ["Backoff"]


class Backoff:
    """Delays from ``first`` doubling up to ``cap``; :meth:`reset` after a success starts again at ``first``."""

    __slots__ = ("_delay", "cap", "first")

    def __init__(self, first: float, cap: float) -> None:
        self.first = first
        self.cap = cap
        self._delay = first

    @property
    def current(self) -> float:
        """The delay the next :meth:`next` returns."""
        return self._delay

    def next(self) -> float:
        """The seconds to wait now; the one after doubles, up to ``cap``."""
        delay = self._delay
        self._delay = min(self.cap, delay * 2)
        return delay

    def reset(self) -> None:
        """A try succeeded: the next outage starts at ``first`` again."""
        self._delay = self.first
