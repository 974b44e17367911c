"""Shoe, shuffler and chips drivers against their simulators over real ptys."""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from pathlib import Path

import pytest

from drivers import (
    ChipsConfig,
    ChipsDriver,
    Health,
    PortBusy,
    PortNotFound,
    ShoeConfig,
    ShoeDriver,
    ShufflerConfig,
    ShufflerDriver,
)
from drivers.events import CardRead, CountMismatch, DeviceEvent, HoleCardRevealed, ShuffleComplete, Wager
from drivers.link import PROTOCOL_VERSION
from simulators import DealingLocked, SimChips, SimShoe, SimShuffler
from tests.drivers.conftest import next_event


async def collect_cards(shoe: ShoeDriver, n: int, timeout: float) -> list[str]:
    cards: list[str] = []

    async def run() -> None:
        async for event in shoe.events():
            if isinstance(event, CardRead):
                cards.append(event.card)
                if len(cards) == n:
                    return

    await asyncio.wait_for(run(), timeout)
    return cards


async def test_shoe_reports_cards_and_never_the_hole_card_on_peek(link_dir: Path) -> None:
    async with SimShoe(stacked=["AS", "TD", "9C", "KH"], link=str(link_dir / "shoe")) as sim, \
            ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        assert shoe.health == Health.OK and shoe.version == PROTOCOL_VERSION
        wire = bytearray()
        write = sim._pty.write

        def tap(data: bytes) -> None:
            wire.extend(data)
            write(data)

        sim._pty.write = tap  # type: ignore[method-assign]
        sim.deal()
        sim.deal(face_down=True)  # TD stays under the peek reader
        assert (await next_event(shoe, "card")).to_json() == {"type": "card", "read": [1, 1], "card": "AS"}
        await next_event(shoe, "hole_dealt")
        assert await shoe.request_peek("A") is True
        assert await shoe.request_peek("9") is False
        peek = await next_event(shoe, "peek")
        assert set(peek.to_json()) == {"type", "request_id", "blackjack"}
        assert b"TD" not in wire and b"AS" in wire  # the hole card never crossed the wire
        await shoe.reveal_hole()
        revealed = await next_event(shoe, "hole_revealed")
        assert isinstance(revealed, HoleCardRevealed) and revealed.card == "TD"
        assert await shoe.request_peek("A") is None  # nothing held any more


async def test_shoe_lock_and_enable(link_dir: Path) -> None:
    async with SimShoe(seed=3, link=str(link_dir / "shoe")) as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.lock_dealing()
        assert (await next_event(shoe, "dealing")).to_json() == {"type": "dealing", "enabled": False}
        with pytest.raises(DealingLocked):
            sim.deal()
        await shoe.enable_dealing()
        await next_event(shoe, "dealing")
        sim.deal()
        await next_event(shoe, "card")


async def test_shoe_cut_card_misread_foreign_card_and_removal(link_dir: Path) -> None:
    async with SimShoe(stacked=["2S", "3S", "4S", "5S"], link=str(link_dir / "shoe")) as sim, \
            ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        sim.stack(["2S", "3S", "4S", "5S"], cut_at=1)
        it = shoe.events()
        sim.deal()
        sim.deal()  # the cut card comes out before the second card
        sim.misread()
        sim.foreign_card("QS")
        sim.remove()
        sim.insert()
        kinds: list[DeviceEvent] = []
        while len(kinds) < 7:
            ev = await asyncio.wait_for(anext(it), 2)
            if ev.type not in ("health", "link_up"):
                kinds.append(ev)
        assert [e.to_json() for e in kinds] == [  # the stacked shoe is the second load; every report numbered
            {"type": "card", "read": [2, 1], "card": "2S"},
            {"type": "cut_card", "read": [2, 2]},
            {"type": "card", "read": [2, 3], "card": "3S"},
            {"type": "misread", "read": [2, 4], "reason": "unreadable"},
            {"type": "card", "read": [2, 5], "card": "QS"},
            {"type": "shoe", "read": [2, 6], "inserted": False},
            {"type": "shoe", "read": [2, 7], "inserted": True},
        ]


async def test_missing_port_is_port_not_found(link_dir: Path) -> None:
    with pytest.raises(PortNotFound, match="not found"):
        await ShoeDriver(ShoeConfig(port=str(link_dir / "nothing"))).open()


async def test_port_held_by_another_process_is_busy(link_dir: Path) -> None:
    async with SimShoe(seed=1, link=str(link_dir / "shoe")) as sim:
        fd = os.open(sim.port, os.O_RDWR | os.O_NOCTTY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # what another tablectl does
            with pytest.raises(PortBusy, match="held by another process"):
                await ShoeDriver(ShoeConfig(port=sim.port)).open()
        finally:
            os.close(fd)
        async with ShoeDriver(ShoeConfig(port=sim.port)) as first:
            with pytest.raises(PortBusy):
                await ShoeDriver(ShoeConfig(port=sim.port)).open()
            await first.wait_ready(2)


async def test_pulled_cable_reconnects_within_two_seconds_without_losing_a_card(link_dir: Path) -> None:
    async with SimShoe(seed=9, link=str(link_dir / "shoe")) as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        first = sim.deal()
        assert (await next_event(shoe, "card")).to_json()["card"] == first
        sim.pull_cable()
        lost = await next_event(shoe, "health")
        assert lost.to_json()["health"] == "lost"
        pending = sim.deal()  # dealt while the cable is out: must arrive later
        await asyncio.sleep(0.3)
        assert not os.path.exists(sim.port)  # the port vanished, as a USB-serial adapter's does
        old_path = sim.slave_path
        restored_at = time.monotonic()
        assert sim.restore_cable() is not None and old_path is None
        await shoe.wait_ready(2)
        assert time.monotonic() - restored_at < 2.0
        assert (await next_event(shoe, "card")).to_json()["card"] == pending
        assert shoe.health == Health.OK


async def test_silent_device_is_lost_within_two_seconds_then_recovers(link_dir: Path) -> None:
    async with SimShoe(seed=9, link=str(link_dir / "shoe")) as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        it = shoe.events()
        sim.silent = True
        t0 = time.monotonic()
        while (await asyncio.wait_for(anext(it), 3)).to_json().get("health") != "lost":
            pass
        assert time.monotonic() - t0 < 2.0
        sim.silent = False
        await shoe.wait_ready(3)
        card = sim.deal()
        assert (await next_event(shoe, "card", it=it)).to_json()["card"] == card


async def test_garbage_on_the_line_is_skipped(link_dir: Path) -> None:
    async with SimShoe(seed=4, link=str(link_dir / "shoe")) as sim, ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        dealt = []
        for _ in range(20):
            sim.inject_garbage(17)
            dealt.append(sim.deal())
        assert await collect_cards(shoe, 20, 5) == dealt


@pytest.mark.parametrize("n", [100_000])
async def test_corrupted_pty_link_delivers_every_card_once_in_order(link_dir: Path, n: int) -> None:
    async with SimShoe(seed=11, corrupt=0.001, fault_seed=5, link=str(link_dir / "shoe")) as sim, \
            ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        dealer = asyncio.create_task(sim.auto(n))
        got = await collect_cards(shoe, n, timeout=n / 200)
        assert got == await dealer
        assert sim.tx_faults.corrupted > 0 and shoe.link.stats.bad_segments > 0


async def test_shuffler_verifies_a_good_set_and_flags_a_wrong_deck(link_dir: Path) -> None:
    async with SimShuffler(decks=2, seed=1, shuffle_time=0.01, link=str(link_dir / "shuf")) as sim, \
            ShufflerDriver(ShufflerConfig(port=sim.port, decks=2)) as shuf:
        await shuf.start_shuffle("A")
        await next_event(shuf, "shuffle_started")
        done = await next_event(shuf, "shuffle_complete")
        assert isinstance(done, ShuffleComplete) and done.count == 104 and done.composition == (8,) * 13
        assert done.to_json()["composition"]["A"] == 8
        assert (await next_event(shuf, "deck_set_ready")).to_json() == {"type": "deck_set_ready", "deck_set": "A"}
        wrong = [c for c in sim.sets["B"] if c != "AS"] + ["KH"]  # one ace swapped for a king
        sim.load("B", wrong)
        await shuf.start_shuffle("B")
        done = await next_event(shuf, "shuffle_complete")
        assert isinstance(done, ShuffleComplete) and done.composition[0] == 6 and done.composition[-1] == 9
        bad = await next_event(shuf, "count_mismatch")
        assert isinstance(bad, CountMismatch) and bad.deck_set == "B"


async def test_shuffler_jam_and_door(link_dir: Path) -> None:
    async with SimShuffler(decks=1, shuffle_time=0.01, link=str(link_dir / "shuf")) as sim, \
            ShufflerDriver(ShufflerConfig(port=sim.port, decks=1)) as shuf:
        await shuf.wait_ready(2)
        sim.open_door()
        assert (await next_event(shuf, "door")).to_json() == {"type": "door", "open": True}
        sim.close_door()
        await next_event(shuf, "door")
        sim.jam()
        await shuf.start_shuffle("A")
        assert (await next_event(shuf, "jam")).to_json() == {"type": "jam", "deck_set": "A", "cleared": False}
        await shuf.clear_jam("A")
        assert (await next_event(shuf, "jam")).to_json()["cleared"] is True
        await next_event(shuf, "deck_set_ready")


async def test_chips_polls_every_spot_and_reports_changes_once(link_dir: Path) -> None:
    async with SimChips(link=str(link_dir / "chips")) as sim, \
            ChipsDriver(ChipsConfig(port=sim.port, poll_interval_s=0.01)) as chips:
        sim.set_wager(3, 2500)
        sim.set_wager(3, 1250, line="insurance")
        got: dict[tuple[int, str], Wager] = {}
        it = chips.events()
        while not {(3, "bet"), (3, "insurance")} <= got.keys():
            ev = await asyncio.wait_for(anext(it), 2)
            if isinstance(ev, Wager) and ev.cents:
                got[(ev.spot, ev.line)] = ev
        assert got[(3, "bet")].to_json() == {"type": "wager", "spot": 3, "line": "bet", "cents": 2500, "chips": 1}
        assert got[(3, "insurance")].cents == 1250
        cycles = chips.cycles
        while chips.cycles < cycles + 3:
            await asyncio.sleep(0.01)
        assert chips.wager(3) == 2500 and chips.wager(5) == 0
        sim.fault(5, 2)
        fault = await next_event(chips, "sensor_fault", it=it)
        assert fault.to_json() == {"type": "sensor_fault", "spot": 5, "line": "bet", "code": 2}
        sim.set_wager(3, 0)
        cleared = await next_event(chips, "wager", it=it)
        assert cleared.to_json()["cents"] == 0


async def test_malformed_payloads_are_dropped_with_a_warning_not_a_crash(
    link_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from drivers import shuffler as proto

    async with SimShuffler(link=str(link_dir / "shuf")) as sim, \
            ShufflerDriver(ShufflerConfig(port=sim.port)) as shuf:
        await shuf.wait_ready(2)
        sim._send(proto.COMPLETE, b"A\x01")  # far too short
        sim._send(0x7F, b"")  # a type this driver does not know
        sim._send(proto.STARTED, b"Z")  # no such deck set
        sim.open_door()
        assert (await next_event(shuf, "door")).to_json() == {"type": "door", "open": True}
    assert sum("bad payload" in r.message for r in caplog.records) == 3
