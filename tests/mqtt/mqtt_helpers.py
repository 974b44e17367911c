"""Test helpers: a subscriber that records every message it gets from a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiomqtt


@dataclass
class Seen:
    topic: str
    payload: bytes
    retain: bool

    def json(self) -> Any:
        return json.loads(self.payload)


@dataclass
class Recorder:
    messages: list[Seen] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on(self, suffix: str) -> list[Seen]:
        return [m for m in self.messages if m.topic.endswith(suffix)]

    def event_seqs(self) -> list[int]:
        return [int(m.json()["seq"]) for m in self.on("/events")]

    async def wait_for(self, predicate: Callable[[Recorder], bool], timeout: float = 10.0) -> None:
        """Wait until ``predicate(self)``; ``TimeoutError`` after ``timeout`` seconds.

        The 0.1 s re-check is a nested ``asyncio.timeout``, not ``asyncio.wait_for``: on Python
        3.11 a ``wait_for`` whose future completes as the outer deadline cancels it swallows the
        cancellation, and a wait that should fail then spun until the test's own time limit.
        """
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.1):
                        await self.changed.wait()


@contextlib.asynccontextmanager
async def recording(
    host: str, port: int, topic: str = "#", *, client_id: str | None = None, clean_session: bool = True,
    login: tuple[str, str] | None = None,
) -> AsyncIterator[Recorder]:
    """Subscribe to ``topic`` (QoS 1) and record everything until the block ends.

    A message the client acknowledged is recorded even if it arrived while the block was ending
    or the broker went away: a persistent session (``clean_session=False``) would not send it
    again, so dropping it here would look like a gap that the product never made.
    """
    rec = Recorder()

    def record(m: aiomqtt.Message) -> None:
        payload = m.payload if isinstance(m.payload, bytes | bytearray) else str(m.payload).encode()
        rec.messages.append(Seen(m.topic.value, bytes(payload), bool(m.retain)))
        rec.changed.set()

    user, password = login or (None, None)
    client = aiomqtt.Client(host, port, identifier=client_id, clean_session=clean_session, username=user,
                            password=password)
    try:
        async with client:
            await client.subscribe(topic, qos=1)

            async def pump() -> None:
                async for m in client.messages:
                    record(m)

            task = asyncio.create_task(pump())
            try:
                yield rec
            finally:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                    await task
    finally:
        queue = client._queue
        while not queue.empty():
            record(queue.get_nowait())
        lost = client._disconnected  # a broker stopped under the block: its reason, read so asyncio
        if lost.done() and not lost.cancelled():  # does not report it as never retrieved
            lost.exception()
