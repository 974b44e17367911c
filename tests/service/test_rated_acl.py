"""A rated table under the pit's generated ACL on a real Mosquitto (``tablectl broker-config``): the table's own
user publishes its ratings, and only ``tracking`` and surveillance read the card numbers; the screens, the
pit and the technicians get the table, masked, and nothing of the ratings topics."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiomqtt

from controller.profiles import load_rules
from tests.mqtt.pit_broker import PIT, PREFIX, SURVEILLANCE, TECHNICIAN, Broker
from tests.service.test_table_service import _opts, _until, table_running

READERS = ("tracking", SURVEILLANCE, "dashboard", PIT, TECHNICIAN)


@contextlib.asynccontextmanager
async def listening(pit: Broker, user: str, got: list[tuple[str, bytes]]) -> AsyncIterator[None]:
    """``user`` subscribed to everything it may ask for: the whole prefix and the ratings topics."""
    async with pit.client(user) as client:
        for topic in (f"{PREFIX}/#", f"{PREFIX}/+/ratings", f"{PREFIX}/+/ratings/open"):
            await client.subscribe(topic, qos=1)

        async def pump(c: aiomqtt.Client) -> None:
            async for m in c.messages:
                got.append((str(m.topic), bytes(m.payload)))  # type: ignore[arg-type]

        task = asyncio.create_task(pump(client))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_under_the_generated_acl_only_tracking_and_surveillance_read_the_card_numbers(
        pit: Broker, tmp_path: Path) -> None:
    url = f"mqtt://t01:{pit.password('t01')}@127.0.0.1:{pit.port}"
    opts = _opts(load_rules("house-h17"), rounds=None, seed=6, prefix=PREFIX)
    opts.carded = 5
    got: dict[str, list[tuple[str, bytes]]] = {user: [] for user in READERS}
    async with contextlib.AsyncExitStack() as stack:
        for user in READERS:
            await stack.enter_async_context(listening(pit, user, got[user]))
        table, task = await stack.enter_async_context(table_running(opts, tmp_path / "state", url))
        await table.publisher.wait_connected(10)
        await _until(lambda: table.core.table.rounds_settled >= 2 or task.done(), 60, "two rounds")
        assert not task.done()
        leaving = table.carded[0]
        assert table.sim.cards is not None
        table.sim.cards.remove(leaving.spot)  # the player takes the card: the rating ends at the next round
        await _until(lambda: any(t == f"{PREFIX}/t01/ratings" for t, _ in got["tracking"]) or task.done(), 60,
                     "the ended rating on tracking's subscription")
        await table.publisher.wait_drained(10)
        await asyncio.sleep(0.5)
    numbers = [p.number.encode() for p in table.carded]
    for user in ("tracking", SURVEILLANCE):
        ended = [p for t, p in got[user] if t == f"{PREFIX}/t01/ratings"]
        assert len(ended) == 1 and leaving.number.encode() in ended[0], user
        running = [p for t, p in got[user] if t == f"{PREFIX}/t01/ratings/open"]
        assert running and all(n in running[-1] for n in numbers[1:]), user
    assert {t for t, _ in got["tracking"]} <= {f"{PREFIX}/t01/ratings", f"{PREFIX}/t01/ratings/open"}
    for user in ("dashboard", PIT, TECHNICIAN):
        topics = {t for t, _ in got[user]}
        assert f"{PREFIX}/t01/state" in topics and f"{PREFIX}/t01/events" in topics, (user, topics)
        assert not [t for t in topics if "/ratings" in t], (user, topics)
        leaks = [(t, n) for t, p in got[user] for n in numbers if n in p]
        assert not leaks, (user, leaks[:3])
        assert any(b'"rated":true' in p for t, p in got[user] if t == f"{PREFIX}/t01/state"), user
