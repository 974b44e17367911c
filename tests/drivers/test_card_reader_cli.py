"""``tablectl simulate cards`` and ``tablectl monitor cards`` as real processes, as a technician runs them."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulators import SimChips
from simulators.cardreader import CardReaders
from tests.drivers.test_cli import run, tablectl


async def test_monitor_cards_prints_each_card_in_and_out_with_its_number(link_dir: Path) -> None:
    readers = CardReaders()
    async with SimChips(link=str(link_dir / "bus"), readers=readers) as sim, \
            run("monitor", "cards", "--port", sim.port, "--json") as mon:
        await mon.event("link_up")
        readers.insert(4, "6001234567")
        assert await mon.event("card_in") == {"type": "card_in", "spot": 4, "player": "6001234567"}
        readers.remove(4)
        assert await mon.event("card_out") == {"type": "card_out", "spot": 4, "player": "6001234567"}
        readers.insert_unreadable(2, 2)
        assert await mon.event("card_unreadable") == {
            "type": "card_unreadable", "spot": 2, "code": 2, "reason": "not a player card of this casino"}
        assert await mon.interrupt() == 0


async def test_simulate_cards_is_one_bus_that_monitor_cards_and_monitor_chips_both_read(link_dir: Path) -> None:
    link = link_dir / "bus"
    async with run("simulate", "cards", "--link", str(link), "--card", "3=77", "--wager", "3=25") as sim:
        await sim.line()  # the slave path: the link exists now
        async with run("monitor", "cards", "--port", str(link), "--json") as mon:
            assert await mon.event("card_in") == {"type": "card_in", "spot": 3, "player": "77"}
            assert await mon.interrupt() == 0
        async with run("monitor", "chips", "--port", str(link), "--json") as mon:
            wager = await mon.event("wager", spot=3, line="bet")
            assert wager["cents"] == 2500
            assert await mon.interrupt() == 0
        assert await sim.interrupt() == 0


@pytest.mark.parametrize(("args", "message"), [
    (("cards", "--card", "8=1"), "--card 8=1: spot must be 1..7"),
    (("cards", "--card", "3=12 34"), "--card 3=12 34: a card number is 1 to 20 of 0-9 A-Z"),
    (("cards", "--card", "3="), "--card 3=: a card number is 1 to 20 of 0-9 A-Z"),
    (("chips", "--card", "3=1"), "--card: only the card readers (simulate cards) take player cards"),
])
def test_simulate_cards_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    r = tablectl("simulate", *args)
    assert r.returncode == 2 and r.stderr.strip() == f"tablectl simulate: {message}", r.stderr
