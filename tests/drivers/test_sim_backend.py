"""The in-memory ``sim:`` backend: the same driver and simulator code without a pty."""

from __future__ import annotations

import asyncio

import pytest

from drivers import Health, PortBusy, PortNotFound, ShoeConfig, ShoeDriver, open_device
from drivers.events import CardRead, DeviceEvent, HealthChanged, LinkStarted
from simulators import SimShoe
from tests.drivers.conftest import next_event
from tests.drivers.test_serial_drivers import collect_cards


async def test_driver_reads_a_sim_backend_shoe() -> None:
    async with SimShoe(seed=1, link="sim:t01-shoe") as sim, ShoeDriver(ShoeConfig(port="sim:t01-shoe")) as shoe:
        assert sim.port == "sim:t01-shoe" and sim.slave_path == "sim:t01-shoe"
        await shoe.wait_ready(2)
        dealt = [sim.deal() for _ in range(5)]
        assert await collect_cards(shoe, 5, 2) == dealt


async def test_sim_backend_unknown_name_and_busy() -> None:
    with pytest.raises(PortNotFound):
        await ShoeDriver(ShoeConfig(port="sim:nobody")).open()
    async with SimShoe(seed=1, link="sim:busy") as sim, ShoeDriver(ShoeConfig(port=sim.port)):
        with pytest.raises(PortBusy):
            await ShoeDriver(ShoeConfig(port=sim.port)).open()


async def test_sim_backend_pulled_cable_reconnects() -> None:
    async with SimShoe(seed=2, link="sim:pull") as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        it = shoe.events()
        sim.pull_cable()
        while (await asyncio.wait_for(anext(it), 2)).to_json().get("health") != "lost":
            pass
        card = sim.deal()
        sim.restore_cable()
        await shoe.wait_ready(2)
        assert (await next_event(shoe, "card", it=it)).to_json()["card"] == card
        assert shoe.health == Health.OK


async def test_sim_backend_under_corruption_delivers_every_card_once() -> None:
    async with SimShoe(seed=3, link="sim:noisy", corrupt=0.001, drop=0.0005, fault_seed=1) as sim, \
            open_device("shoe", "sim:noisy") as shoe:
        assert isinstance(shoe, ShoeDriver)
        await shoe.wait_ready(2)
        dealer = asyncio.create_task(sim.auto(20_000))
        assert await collect_cards(shoe, 20_000, 60) == await dealer


async def test_a_listener_gets_the_queued_events_first_then_each_one_as_decoded_and_can_hand_back() -> None:
    async with SimShoe(seed=4, link="sim:listen") as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        early = sim.deal()
        await asyncio.sleep(0.2)  # decoded and queued: nobody reads events() yet
        heard: list[DeviceEvent] = []
        shoe.listen(heard.append)
        assert [type(e) for e in heard[:3]] == [HealthChanged, LinkStarted, HealthChanged], heard  # in order
        assert [e.health for e in heard if isinstance(e, HealthChanged)] == [Health.CONNECTING, Health.OK]
        assert [e.card for e in heard if isinstance(e, CardRead)] == [early]
        later = [sim.deal() for _ in range(3)]
        async with asyncio.timeout(2):
            while len([e for e in heard if isinstance(e, CardRead)]) < 4:
                await asyncio.sleep(0.01)
        assert [e.card for e in heard if isinstance(e, CardRead)] == [early, *later]
        shoe.listen(None)  # back to the queue: nothing heard twice, nothing lost
        last = sim.deal()
        assert await collect_cards(shoe, 1, 2) == [last]
        assert [e.card for e in heard if isinstance(e, CardRead)] == [early, *later]
