"""Transports chosen by name from one registry (drivers/transport.py ``TRANSPORTS``): ``sim:``, a tty path,
and any scheme registered, used by every serial driver alike."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from drivers import PortNotFound, ShoeConfig, ShoeDriver, transport
from simulators import SimShoe
from tests.drivers.test_serial_drivers import collect_cards


@pytest.fixture
def registry() -> Iterator[dict[str, transport.TransportOpener]]:
    saved = dict(transport.TRANSPORTS)
    yield transport.TRANSPORTS
    transport.TRANSPORTS.clear()
    transport.TRANSPORTS.update(saved)


def test_a_port_is_opened_by_its_scheme_else_as_a_tty(registry: dict[str, transport.TransportOpener]) -> None:
    assert transport.transport_for("sim:t01-shoe") is registry["sim"]
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
