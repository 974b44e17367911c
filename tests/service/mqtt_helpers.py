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
        async with asyncio.timeout(timeout):
            while not predicate(self):
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 0.1)


@contextlib.asynccontextmanager
async def recording(
    host: str, port: int, topic: str = "#", *, client_id: str | None = None, clean_session: bool = True
) -> AsyncIterator[Recorder]:
    """Subscribe to ``topic`` (QoS 1) and record everything until the block ends."""
    rec = Recorder()
    async with aiomqtt.Client(host, port, identifier=client_id, clean_session=clean_session) as client:
        await client.subscribe(topic, qos=1)

        async def pump() -> None:
            async for m in client.messages:
                payload = m.payload if isinstance(m.payload, bytes | bytearray) else str(m.payload).encode()
                rec.messages.append(Seen(m.topic.value, bytes(payload), bool(m.retain)))
                rec.changed.set()

        task = asyncio.create_task(pump())
        try:
            yield rec
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, aiomqtt.MqttError):
                await task
