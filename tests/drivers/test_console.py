"""The console driver's real pyusb calls against the simulated console backend."""

from __future__ import annotations

import asyncio

import pytest
import usb.core

from drivers import Button, ConsoleConfig, ConsoleDriver, DeviceError, Health, PortBusy, PortNotFound
from drivers.events import DeviceEvent
from simulators import SimConsole


async def take(driver: ConsoleDriver, n: int, timeout: float = 3.0) -> list[DeviceEvent]:
    out: list[DeviceEvent] = []

    async def run() -> None:
        async for event in driver.events():
            if event.type != "health":
                out.append(event)
                if len(out) == n:
                    return

    await asyncio.wait_for(run(), timeout)
    return out


def test_backend_is_found_by_pyusb() -> None:
    sim = SimConsole(vid=0x1234, pid=0x5678)
    dev = usb.core.find(idVendor=0x1234, idProduct=0x5678, backend=sim.backend)
    assert dev is not None and dev.idVendor == 0x1234
    assert usb.core.find(idVendor=0x1234, idProduct=0x9999, backend=sim.backend) is None
    dev.set_configuration()
    sim.tap(Button.SPLIT)
    assert list(dev.read(0x81, 8, 100))[:3] == [0x01, 1 << 3, 0]


async def test_button_sequences_arrive_exactly() -> None:
    sim = SimConsole()
    sequence: list[tuple[str, Button | int]] = [
        ("press", Button.NO_MORE_BETS), ("release", Button.NO_MORE_BETS),
        ("press", 3), ("press", Button.DOUBLE), ("release", 3), ("release", Button.DOUBLE),
        ("press", Button.ALARM_ACK), ("press", Button.STAND_NEXT), ("release", Button.ALARM_ACK),
        ("release", Button.STAND_NEXT), ("press", 7), ("release", 7),
    ]
    sequence += [(op, b) for b in Button for op in ("press", "release")]
    async with ConsoleDriver(ConsoleConfig(), backend=sim.backend) as console:
        assert console.health == Health.OK
        for op, key in sequence:
            getattr(sim, op)(key)
        events = await take(console, len(sequence))
    expected: list[dict[str, object]] = []
    for op, key in sequence:
        if isinstance(key, int):
            expected.append({"type": "spot_select", "spot": key, "pressed": op == "press"})
        else:
            expected.append({"type": "button_pressed" if op == "press" else "button_released", "button": key.value})
    assert [e.to_json() for e in events] == expected
    assert console.lost_reports == 0


async def test_indicator_lights_reach_the_device() -> None:
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend) as console:
        await console.set_lights([Button.STAND_NEXT, Button.DOUBLE], [2, 5], alarm=1)
    assert sim.lights == (frozenset({Button.STAND_NEXT, Button.DOUBLE}), frozenset({2, 5}), 1)


async def test_lights_the_console_does_not_take_are_an_error_and_the_next_ones_go_through() -> None:
    """A lights report the device does not take in time: set_lights says so (the table service keeps them
    to send again), the console stays connected, and the next lights reach it."""
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend) as console:
        sim.lights_stalled = True
        with pytest.raises(DeviceError, match="writing lights failed"):
            await console.set_lights([Button.DOUBLE], [3])
        assert sim.lights_report == b""  # never taken
        sim.lights_stalled = False
        await console.set_lights([Button.STAND_NEXT], [2], alarm=1)
        assert console.health == Health.OK
    assert sim.lights == (frozenset({Button.STAND_NEXT}), frozenset({2}), 1)


async def test_missing_console_is_port_not_found() -> None:
    sim = SimConsole(vid=1, pid=2)
    with pytest.raises(PortNotFound, match=r"0001:0002|1d50:6190"):
        await ConsoleDriver(ConsoleConfig(), backend=sim.backend).open()


async def test_claimed_console_is_busy() -> None:
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend):
        with pytest.raises(PortBusy):
            await ConsoleDriver(backend=sim.backend).open()


async def test_unplugged_console_is_lost_then_back() -> None:
    sim = SimConsole()
    async with ConsoleDriver(backend=sim.backend) as console:
        it = console.events()
        sim.press(Button.SPLIT)
        assert (await asyncio.wait_for(anext(it), 2)).type == "health"
        assert (await asyncio.wait_for(anext(it), 2)).to_json() == {"type": "button_pressed", "button": "split"}
        sim.unplug()
        lost = await asyncio.wait_for(anext(it), 2)
        assert lost.to_json()["health"] == "lost"
        # the held button is released for the service, not left stuck down
        assert (await asyncio.wait_for(anext(it), 2)).to_json() == {"type": "button_released", "button": "split"}
        sim.plug()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "ok"
        sim.tap(Button.NEW_DECKS)
        assert (await asyncio.wait_for(anext(it), 2)).to_json() == {"type": "button_pressed", "button": "new_decks"}
