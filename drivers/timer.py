"""The one asyncio timer a sans-I/O link needs, shared by the drivers and the simulators.

The link (:mod:`drivers.link`) only says when it next wants to be polled; each end
keeps a single loop timer armed for the earliest such deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


def rearm(timer: asyncio.TimerHandle | None, deadline: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
    """Return a timer firing ``callback`` by ``deadline``: ``timer`` itself if it fires no later."""
    if timer is not None:
        if timer.when() <= deadline:
            return timer
        timer.cancel()
    return asyncio.get_running_loop().call_at(deadline, callback)
