"""The in-memory ``sim:`` backend: the same driver and simulator code without a pty."""

from __future__ import annotations

import asyncio

import pytest

from drivers import Health, PortBusy, PortNotFound, ShoeConfig, ShoeDriver, open_device
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
