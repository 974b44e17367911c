"""One table's four simulated devices in one loop, read by the real drivers: what the demo does.

A simulated dealer and players drive the simulators' in-process APIs; the
drivers deliver typed events through a :class:`DeviceGroup`, and the host's
commands (peek, shuffle, lights) reach the devices.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from drivers import Button, ChipsDriver, DeviceEvent, ShoeDriver, ShufflerDriver
from drivers.console import ConsoleDriver
from drivers.group import DeviceGroup
from simulators import SimTable


async def wait_for(devices: DeviceGroup, name: str, kind: str, seen: list[tuple[str, DeviceEvent]]) -> DeviceEvent:
    """The first not yet claimed ``kind`` event of device ``name`` (events read meanwhile go to ``seen``)."""
    for i, (dev, event) in enumerate(seen):
        if dev == name and event.type == kind and i not in CLAIMED:
            CLAIMED.add(i)
            return event

    async def find() -> DeviceEvent:
        async for dev, event in devices.events():
            seen.append((dev, event))
            if dev == name and event.type == kind:
                CLAIMED.add(len(seen) - 1)
                return event
        raise AssertionError("stream ended")

    return await asyncio.wait_for(find(), 3)


CLAIMED: set[int] = set()


@pytest.mark.parametrize("backend", ["pty", "sim"])
async def test_a_round_of_device_traffic_with_every_device(tmp_path: Path, backend: str) -> None:
    seen: list[tuple[str, DeviceEvent]] = []
    CLAIMED.clear()
    table = SimTable(tmp_path, seed=21, decks=2, shuffle_time=0.01, backend=backend)
    async with table as sim, sim.device_group() as devices:
        shoe, shuffler, chips, console = (devices[n] for n in ("shoe", "shuffler", "chips", "console"))
        assert isinstance(shoe, ShoeDriver) and isinstance(shuffler, ShufflerDriver)
        assert isinstance(chips, ChipsDriver) and isinstance(console, ConsoleDriver)
        await asyncio.gather(shoe.wait_ready(2), shuffler.wait_ready(2), chips.wait_ready(2))
        assert devices.health == {"shoe": "ok", "shuffler": "ok", "chips": "ok", "console": "ok"}

        # The shuffler prepares the other deck set while this one is dealt.
        await shuffler.start_shuffle("B")

        # Players bet; the dealer closes betting on the console.
        sim.chips.set_wager(1, 500)
        sim.chips.set_wager(6, 2500)
        sim.console.tap(Button.NO_MORE_BETS)
        await wait_for(devices, "console", "button_released", seen)
        while chips.wager(1) != 500 or chips.wager(6) != 2500:
            await wait_for(devices, "chips", "wager", seen)

        # The dealer deals: two rounds of cards to 2 spots, the hole card face down.
        sim.shoe.stack(["9C", "TS", "AS", "6H", "7D", "KD"])
        dealt = [sim.shoe.deal(), sim.shoe.deal(), sim.shoe.deal(), sim.shoe.deal(), sim.shoe.deal(face_down=True)]
        cards: list[str] = []
        while len(cards) < 4:
            cards.append((await wait_for(devices, "shoe", "card", seen)).to_json()["card"])
        assert cards == dealt[:4]
        await wait_for(devices, "shoe", "hole_dealt", seen)
        assert await shoe.request_peek("6") is False

        # Lights and a decision from the console.
        await console.set_lights([Button.STAND_NEXT], [1])
        assert sim.console.lights == (frozenset({Button.STAND_NEXT}), frozenset({1}), 0)
        sim.console.press(1)
        sim.console.tap(Button.STAND_NEXT)
        sim.console.release(1)
        await wait_for(devices, "console", "button_pressed", seen)

        # The shuffle finished meanwhile.
        ready = await wait_for(devices, "shuffler", "deck_set_ready", seen)
        assert ready.to_json() == {"type": "deck_set_ready", "deck_set": "B"}

        await shoe.reveal_hole()
        assert (await wait_for(devices, "shoe", "hole_revealed", seen)).to_json()["card"] == dealt[4] == "7D"

    kinds = [(d, e.type) for d, e in seen]
    assert ("shuffler", "shuffle_complete") in kinds and ("console", "button_pressed") in kinds
    assert all(e.to_json()["type"] == e.type for _, e in seen)
