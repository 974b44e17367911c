"""SIGINT and SIGTERM, delivered to an asyncio loop however busy it is.

Why not ``loop.add_signal_handler``: asyncio learns of such a signal only from the byte the C-level handler
writes into the loop's self-pipe, the pipe every ``call_soon_threadsafe`` also writes to (aiomqtt registers
its writer that way at each publish). A loop busy for a moment under load lets a few hundred of those fill
the pipe, and the signal's byte is dropped: a Ctrl-C nobody sees (the demo played on for ten minutes).
A Python-level handler is run by the interpreter itself (its flag is set whatever the pipe holds, and the
blocking select returns on the signal) and hands the stop to the loop with ``call_soon_threadsafe``, as
asyncio's own ``Runner`` hands over its Ctrl-C.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def on_stop_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], object]) -> Callable[[], None]:
    """Call ``stop`` on ``loop`` at each SIGINT or SIGTERM; returns what puts the previous handlers back.

    From the main thread only (Python runs signal handlers there)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(stop)

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
