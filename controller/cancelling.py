"""Stopping a service's tasks, even one whose cancellation was swallowed.

Why not ``cancel()`` then ``gather()``: on Python 3.11 a cancellation that arrives as an awaited
``asyncio.wait_for`` completes is lost (the result is returned, the ``CancelledError`` dropped: CPython
gh-86296, fixed in 3.12), and the task then waits on, its ``cancelling()`` count set and nothing to end it:
``tablectl run`` hung on SIGTERM under load, its shoe worker back at ``queue.get()``. Each task still
running after a moment is cancelled again, until all have ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

#: how long a cancelled task is given before it is cancelled again
RECANCEL_AFTER_S = 0.5


async def cancel_and_wait(tasks: Collection[asyncio.Future[Any]]) -> None:
    """Cancel ``tasks`` and return once every one has ended (their results and errors are not raised)."""
    pending = {t for t in tasks if not t.done()}
    for task in pending:
        task.cancel()
    while pending:
        _, pending = await asyncio.wait(pending, timeout=RECANCEL_AFTER_S)
        for task in pending:  # a cancellation lost: sent again
            task.cancel()
    for task in tasks:
        if not task.cancelled():
            task.exception()  # retrieved: asyncio would report it as never retrieved otherwise
