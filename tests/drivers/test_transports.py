"""Transports chosen by name from one registry (drivers/transport.py ``TRANSPORTS``): ``sim:``, ``usb:``, a tty
path, and any scheme registered, used by every driver alike, the USB console included."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from drivers import (
    Button,
    ConsoleConfig,
    ConsoleDriver,
    Health,
    PortBusy,
    PortNotFound,
    ShoeConfig,
    ShoeDriver,
    open_device,
    transport,
)
from drivers.usb import open_usb
from simulators import SimConsole, SimShoe
from tests.drivers.test_console import take
from tests.drivers.test_serial_drivers import collect_cards


@pytest.fixture
def registry() -> Iterator[dict[str, transport.TransportOpener]]:
    saved = dict(transport.TRANSPORTS)
    yield transport.TRANSPORTS
    transport.TRANSPORTS.clear()
    transport.TRANSPORTS.update(saved)


def test_a_port_is_opened_by_its_scheme_else_as_a_tty(registry: dict[str, transport.TransportOpener]) -> None:
    assert transport.transport_for("sim:t01-shoe") is registry["sim"]
    assert transport.transport_for("usb:1d50:6190") is registry["usb"]
    for tty in ("/dev/ttyUSB0", "/tmp/pit/t01/shoe", "ttyS0", "relative:path/no-scheme-registered"):
        assert transport.transport_for(tty) is transport._open_tty, tty


async def test_a_registered_transport_serves_the_real_driver(registry: dict[str, transport.TransportOpener]) -> None:
    """A new transport is one entry: here ``relay:NAME`` reaches the in-memory simulator ``sim:NAME``."""
    opened: list[str] = []

    async def relay(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
        opened.append(path)
        return await transport.transport_for("sim:" + path.split(":", 1)[1])("sim:" + path.split(":", 1)[1],
                                                                              baud, protocol)

    transport.register_transport("relay", relay)
    async with SimShoe(seed=3, link="sim:relayed") as sim, ShoeDriver(ShoeConfig(port="relay:relayed")) as shoe:
        await shoe.wait_ready(2)
        dealt = [sim.deal() for _ in range(3)]
        assert await collect_cards(shoe, 3, 2) == dealt
    assert opened and opened[0] == "relay:relayed"


async def test_an_unknown_tty_is_port_not_found_and_a_bad_scheme_is_refused() -> None:
    with pytest.raises(PortNotFound):
        await ShoeDriver(ShoeConfig(port="/dev/no-such-tty-here")).open()
    with pytest.raises(ValueError, match="not a transport scheme"):
        transport.register_transport("Bad Scheme", transport._open_tty)


def _recorded(opened: list[str], to: str) -> transport.TransportOpener:
    """An opener that notes the path it was asked for, then opens ``to:REST`` by the registry."""

    async def relay(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
        opened.append(path)
        target = f"{to}:{path.split(':', 1)[1]}"
        return await transport.transport_for(target)(target, baud, protocol)

    return relay


async def test_a_transport_registered_under_a_new_name_serves_the_console_driver(
        registry: dict[str, transport.TransportOpener]) -> None:
    """The console takes a new transport like the serial drivers: one registration, then its port names it."""
    opened: list[str] = []
    transport.register_transport("relay", _recorded(opened, "sim"))
    async with SimConsole(link="sim:relayed-console") as sim, \
            ConsoleDriver(port="relay:relayed-console") as console:
        assert console.health == Health.OK and console.port == "relay:relayed-console"
        sim.tap(Button.SPLIT)
        events = await take(console, 2)
        await console.set_lights([Button.DOUBLE], [4])
        assert sim.lights == (frozenset({Button.DOUBLE}), frozenset({4}), 0)
    assert [e.to_json() for e in events] == [{"type": "button_pressed", "button": "split"},
                                             {"type": "button_released", "button": "split"}]
    assert opened == ["relay:relayed-console"]
    # the technician's spelling and the table config's reach it too: open_device and ConsoleConfig.backend
    by_name = open_device("console", "relay:relayed-console")
    assert isinstance(by_name, ConsoleDriver) and by_name.port == "relay:relayed-console"
    assert ConsoleDriver(ConsoleConfig(backend="relay", vid=0x1234, pid=0xABCD)).port == "relay:1234:abcd"


async def test_the_console_reconnects_through_the_registry(registry: dict[str, transport.TransportOpener]) -> None:
    """A pulled cable is reopened by the port's transport from the registry, as at the first open."""
    opened: list[str] = []
    transport.register_transport("relay", _recorded(opened, "sim"))
    async with SimConsole(link="sim:replugged") as sim, ConsoleDriver(port="relay:replugged") as console:
        it = console.events()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "ok"
        sim.unplug()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "lost"
        sim.plug()
        assert (await asyncio.wait_for(anext(it), 2)).to_json()["health"] == "ok"
    assert len(opened) >= 2 and set(opened) == {"relay:replugged"}


async def test_the_console_usb_port_is_the_registry_entry_usb(registry: dict[str, transport.TransportOpener]) -> None:
    """The default console (``usb:VID:PID`` from its ids) opens whatever is registered as ``usb``."""
    sim = SimConsole(vid=0x1234, pid=0x5678)
    opened: list[str] = []

    async def usb_on_the_simulator(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
        opened.append(path)
        return await open_usb(path, baud, protocol, backend=sim.backend)

    transport.register_transport("usb", usb_on_the_simulator)
    async with ConsoleDriver(ConsoleConfig(vid=0x1234, pid=0x5678)) as console:
        sim.tap(7)
        assert [e.to_json() for e in await take(console, 2)] == [
            {"type": "spot_select", "spot": 7, "pressed": True}, {"type": "spot_select", "spot": 7, "pressed": False}]
    assert opened == ["usb:1234:5678"]
    # the same entry takes the monitor's USB ids, with or without their usb: prefix
    for port in ("1234:5678", "usb:1234:5678"):
        device = open_device("console", port)
        await device.open()
        await device.close()
    assert opened == ["usb:1234:5678"] * 3


async def test_the_simulated_console_is_reached_through_the_sim_entry(
        registry: dict[str, transport.TransportOpener]) -> None:
    opened: list[str] = []
    sim_opener = registry["sim"]

    async def watched(path: str, baud: int, protocol: asyncio.Protocol) -> asyncio.Transport:
        opened.append(path)
        return await sim_opener(path, baud, protocol)

    transport.register_transport("sim", watched)
    async with SimConsole(link="sim:watched-console") as sim, ConsoleDriver(port=sim.port) as console:
        with pytest.raises(PortBusy, match="interface claimed"):  # one driver at a time, as on USB
            await ConsoleDriver(port=sim.port).open()
        sim.tap(Button.NEW_DECKS)
        assert (await take(console, 1))[0].to_json() == {"type": "button_pressed", "button": "new_decks"}
    bench = ConsoleDriver(ConsoleConfig(backend="sim"))  # a bench table's console: a simulated one of its own
    assert bench.port.startswith("sim:console-")
    async with bench:
        assert bench.health == Health.OK
    assert opened == ["sim:watched-console", "sim:watched-console", bench.port]


async def test_console_ports_no_transport_takes_are_one_line_errors() -> None:
    for port in ("not-an-id", "relative:path/no-scheme-registered", "12345:1"):
        with pytest.raises(ValueError, match=r"is not a USB id like 1d50:6190$"):
            open_device("console", port)
    with pytest.raises(ValueError, match=r"^'/dev/ttyUSB0' is not a console port \(usb:VID:PID, sim:NAME"):
        ConsoleDriver(port="/dev/ttyUSB0")
    with pytest.raises(ValueError, match="pyusb backend"):
        ConsoleDriver(port="sim:x", backend=SimConsole().backend)
    with pytest.raises(PortNotFound, match=r"^port sim:nobody-console not found \(no simulator registered"):
        await open_device("console", "sim:nobody-console").open()
    with pytest.raises(PortNotFound, match=r"^port USB 0001:0002 not found \(no such device\)$"):
        await ConsoleDriver(ConsoleConfig(vid=1, pid=2), backend=SimConsole().backend).open()


def test_the_simulators_register_themselves_when_a_port_first_names_them() -> None:
    """The drivers import nothing of the simulators: a ``sim:`` port or a console ``backend = "sim"`` asked for in
    a process that never imported them loads them by their entry points (pyproject.toml), and they register."""
    import subprocess
    import sys

    code = """
import sys
from drivers.config import ConsoleConfig
from drivers.console import console_port
from drivers.transport import registered
assert not any(name.startswith("simulators") for name in sys.modules), "imported before asked for"
print(registered("sim:t01-shoe"), "simulators.memory" in sys.modules, console_port(ConsoleConfig(backend="sim")))
print(registered("nosuch:x"), console_port(ConsoleConfig()))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["True True sim:console-1", "False usb:1d50:6190"], done.stdout
