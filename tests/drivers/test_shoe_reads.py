"""The shoe's numbered reads and their replay at link start (docs/protocols.md, "Card reads across a crash").

A table process that dies takes its driver with it; the shoe does not die. Here a second driver on the
same simulated shoe plays the restarted table: it starts from the last read "journaled" and must get
every read after it once, in the shoe's order, or an event naming how many it cannot get.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from drivers import ShoeConfig, ShoeDriver
from drivers import shoe as proto
from drivers.codec import FrameDecoder
from drivers.events import DeviceEvent, ReadsUnaccounted, ShoeRead, ShoeReadEvent
from simulators import SimShoe

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"


async def _reads(driver: ShoeDriver, n: int, timeout: float = 5.0) -> list[DeviceEvent]:
    """The next ``n`` reads (and any ``reads_unaccounted``), health and link events skipped."""
    got: list[DeviceEvent] = []

    async def run() -> None:
        async for event in driver.events():
            if isinstance(event, ShoeReadEvent | ReadsUnaccounted):
                got.append(event)
                if sum(isinstance(e, ShoeReadEvent) for e in got) == n:
                    return

    await asyncio.wait_for(run(), timeout)
    return got


def _numbers(events: list[DeviceEvent]) -> list[ShoeRead | None]:
    return [e.read for e in events if isinstance(e, ShoeReadEvent)]


async def _restarted(sim: SimShoe, after: ShoeRead | None) -> ShoeDriver:
    """A driver as a restarted table opens it: its replay starts after ``after``."""
    driver = ShoeDriver(ShoeConfig(port=sim.port))
    driver.resume_after = after
    await driver.open()
    return driver


async def _first_table_saw(sim: SimShoe, n: int) -> list[DeviceEvent]:
    """A first table takes ``n`` reads from the shoe (ACKed by its link), then its process dies."""
    first = await _restarted(sim, None)
    for _ in range(n):
        sim.deal()
    seen = await _reads(first, n)
    await first.close()
    return seen


async def test_a_restarted_table_gets_the_reads_after_its_last_once_and_in_order(link_dir: Path) -> None:
    """Reads 4 and 5 reached the first driver (ACKed) but not its journal; 6 and 7 were dealt while no
    table listened, so they wait in the shoe's queue and arrive before the replay of 4 and 5."""
    async with SimShoe(seed=3, link=str(link_dir / "shoe")) as sim:
        seen = await _first_table_saw(sim, 5)  # reads 4 and 5 were never journaled
        load = sim.load
        assert _numbers(seen) == [(load, n) for n in range(1, 6)]
        sim.deal()
        sim.deal()
        second = await _restarted(sim, (load, 3))
        try:
            got = await _reads(second, 4)
            assert _numbers(got) == [(load, n) for n in (4, 5, 6, 7)]
            cards = [e.card for e in got if hasattr(e, "card")]
            assert cards == [c for c in sim.cards[3:7]]  # the very cards, in the shoe's order
            sim.deal()
            assert _numbers(await _reads(second, 1)) == [(load, 8)]  # live reads go on, each once
            assert second.repeats >= 2  # 6 and 7 came twice: queued and replayed
        finally:
            await second.close()


async def _killed_during_its_replay(sim: SimShoe, after: ShoeRead, holding: int) -> None:
    """A table asks for the reads after ``after`` and its process dies once it holds ``holding`` reads,
    before the shoe's REPLAY_END: the rest of the shoe's answer stays in the shoe's queue."""
    driver = await _restarted(sim, after)
    async with asyncio.timeout(5):
        while len(driver._held) < holding:
            await asyncio.sleep(0)
    await driver.close()


async def test_a_table_killed_during_its_replay_leaves_the_next_one_every_read(link_dir: Path) -> None:
    """Read 1 was journaled; 2 and 3 were dealt while no table listened. The second table gets 2 and 3
    from the shoe's queue and the replay's 2, and dies: the replay's 3 and its REPLAY_END wait in the
    shoe's queue and reach the third table before the answer to its own REPLAY (2, 3). That REPLAY_END
    answers a REPLAY of a table that is gone: taken as the third table's, it would hand on 3 before the
    replay's 2 arrives, which would then be dropped as a repeat, a read lost although the shoe held it."""
    async with SimShoe(seed=7, link="sim:killed-in-replay") as sim:
        await _first_table_saw(sim, 1)
        load = sim.load
        sim.deal()
        sim.deal()
        await _killed_during_its_replay(sim, (load, 1), holding=3)
        third = await _restarted(sim, (load, 1))
        try:
            got = await _reads(third, 2)
            assert _numbers(got) == [(load, 2), (load, 3)]
            assert not any(isinstance(e, ReadsUnaccounted) for e in got)
            sim.deal()
            assert _numbers(await _reads(third, 1)) == [(load, 4)]
        finally:
            await third.close()


async def test_only_the_replay_end_of_the_last_replay_ends_the_replay() -> None:
    """A link restarted before the answer came: the driver asked twice, with two tags; the first answer
    ends nothing (the reads asked for last may still be behind it), the second hands on what is held."""
    driver = ShoeDriver(ShoeConfig(port="unused"))
    driver.resume_after = (1, 1)
    asked: list[bytes] = []

    class Link:
        def send(self, mtype: int, payload: bytes, now: float) -> None:
            assert mtype == proto.REPLAY
            asked.append(payload)

    driver._link = Link()  # type: ignore[assignment]
    driver._on_link_up()
    driver._on_link_up()
    (_, _, first), (_, _, last) = (proto.REPLAY_ASK.unpack(p) for p in asked)
    assert first != last

    def read(n: int) -> bytes:
        return proto.READ_NUMBER.pack(1, n) + b"TD"

    assert list(driver._decode(proto.CARD, read(3))) == []
    assert list(driver._decode(proto.REPLAY_END, proto.REPLAY_ANSWER.pack(1, 3, 0, first))) == []
    assert list(driver._decode(proto.CARD, read(2))) == []  # still held: the replay is not over
    assert list(driver._decode(proto.CARD, read(3))) == []
    out = list(driver._decode(proto.REPLAY_END, proto.REPLAY_ANSWER.pack(1, 3, 0, last)))
    assert _numbers(out) == [(1, 2), (1, 3)] and driver.repeats == 1
    assert _numbers(list(driver._decode(proto.CARD, read(4)))) == [(1, 4)]


async def test_the_replay_crosses_a_new_load(link_dir: Path) -> None:
    async with SimShoe(stacked=["2S", "3S", "4S"], link=str(link_dir / "shoe")) as sim:
        await _first_table_saw(sim, 3)
        old = sim.load
        sim.stack(["5S", "6S"])  # the dealer loads a new shoe while no table listens
        sim.deal()
        second = await _restarted(sim, (old, 1))
        try:
            assert _numbers(await _reads(second, 3)) == [(old, 2), (old, 3), (old + 1, 1)]
        finally:
            await second.close()


async def test_reads_the_shoe_no_longer_holds_are_counted_before_the_rest(link_dir: Path) -> None:
    async with SimShoe(seed=4, keep_reads=2, link=str(link_dir / "shoe")) as sim:
        await _first_table_saw(sim, 6)
        load = sim.load
        second = await _restarted(sim, (load, 1))  # 2..6 are after it; the shoe keeps only 5 and 6
        try:
            got = await _reads(second, 2)
            assert got[0] == ReadsUnaccounted(3, (load, 1))
            assert _numbers(got[1:]) == [(load, 5), (load, 6)]
        finally:
            await second.close()


async def test_a_shoe_that_cannot_tell_says_so_and_the_table_numbers_on_from_its_count(link_dir: Path) -> None:
    async with SimShoe(seed=5, link=str(link_dir / "shoe")) as sim:
        driver = await _restarted(sim, (40, 7))  # a load this (reset, or other) shoe never had
        try:
            sim.deal()
            got = await _reads(driver, 1)
            assert got[0] == ReadsUnaccounted(None, (40, 7))
            assert _numbers(got[1:]) == [(sim.load, 1)]
        finally:
            await driver.close()


async def test_a_cable_pulled_and_put_back_loses_and_repeats_nothing(link_dir: Path) -> None:
    async with SimShoe(seed=6, link=str(link_dir / "shoe")) as sim:
        driver = await _restarted(sim, None)
        try:
            sim.deal()
            sim.deal()
            await _reads(driver, 2)
            sim.pull_cable()
            for _ in range(3):
                sim.deal()
            await asyncio.sleep(0.2)
            sim.restore_cable()
            assert _numbers(await _reads(driver, 3)) == [(sim.load, n) for n in (3, 4, 5)]
        finally:
            await driver.close()


# -- the frames of docs/protocols.md, both ways -----------------------------------------------------


def _documented_shoe_frames() -> dict[str, bytes]:
    """Name -> frame bytes of every example in the shoe's two tables."""
    section = DOCS.read_text().split("## Shoe (role `S`)")[1].split("### Card reads across a crash")[0]
    frames: dict[str, bytes] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("0x"):
            example = re.search(r"`((?:[0-9a-f]{2} ?)+)`", cells[3])
            assert example, row
            frames[cells[1].split()[0]] = bytes.fromhex(example.group(1))
    return frames


def _payload(wire: bytes) -> tuple[int, bytes]:
    decoder = FrameDecoder()
    decoder.receive_data(wire)
    frame = decoder.next_frame()
    assert frame is not None and not isinstance(frame, Exception) and hasattr(frame, "payload"), wire.hex(" ")
    return frame.mtype, frame.payload  # type: ignore[union-attr]


#: what each documented device->host example says, as the driver's event
DEVICE_FRAMES: dict[str, dict[str, Any]] = {
    "CARD": {"type": "card", "read": [1, 1], "card": "TD"},
    "HOLE_DEALT": {"type": "hole_dealt", "read": [1, 2]},
    "HOLE_REVEALED": {"type": "hole_revealed", "read": [1, 7], "card": "KD"},
    "CUT": {"type": "cut_card", "read": [1, 3]},
    "MISREAD": {"type": "misread", "read": [1, 4], "reason": "unreadable"},
    "PEEK_RESULT": {"type": "peek", "request_id": 1, "blackjack": False},
    "PRESENCE": {"type": "shoe", "read": [1, 5], "inserted": False},
    "DEALING": {"type": "dealing", "enabled": True},
}


def test_every_shoe_frame_of_the_docs_is_listed_here() -> None:
    assert set(_documented_shoe_frames()) == {*DEVICE_FRAMES, "REPLAY_END", "PEEK_REQUEST", "ENABLE", "LOCK",
                                              "RESET", "REVEAL_HOLE", "REPLAY"}


@pytest.mark.parametrize("name", sorted(DEVICE_FRAMES))
def test_the_driver_reads_each_documented_shoe_frame_as_the_docs_say(name: str) -> None:
    mtype, payload = _payload(_documented_shoe_frames()[name])
    assert mtype == getattr(proto, name)
    driver = ShoeDriver(ShoeConfig(port="unused"))
    assert [e.to_json() for e in driver._decode(mtype, payload)] == [DEVICE_FRAMES[name]]


async def test_the_simulated_shoe_writes_the_documented_read_frames() -> None:
    """The simulator's bytes for the documented reads: load 1, reads 1..7, as the examples number them."""
    sim = SimShoe(stacked=["TD", "KD", "9C"])
    sent: list[tuple[int, bytes]] = []
    sim._send = lambda mtype, payload=b"": sent.append((mtype, payload))  # type: ignore[method-assign]
    sim.restore_numbering(1, 0, loaded_since=False)
    sim.cut_at = 2
    sim.deal()  # CARD TD, read 1
    sim.deal(face_down=True)  # HOLE_DEALT, read 2 (the cut card comes out before the third card)
    sim.deal()  # CUT read 3, CARD 9C read 4 (not documented)
    sim.remove()  # PRESENCE removed, read 5
    sim.restore_numbering(1, 6, loaded_since=False)  # the example turns the hole card as read 7
    sim.reveal_hole()  # HOLE_REVEALED KD, read 7
    docs = _documented_shoe_frames()
    by_read = {proto.READ_NUMBER.unpack(p[:4])[1]: (t, p) for t, p in sent if t in proto.READ_TYPES}
    for name, read in (("CARD", 1), ("HOLE_DEALT", 2), ("CUT", 3), ("PRESENCE", 5), ("HOLE_REVEALED", 7)):
        assert by_read[read] == _payload(docs[name]), name
    sim.stack(["2C"])
    sim.restore_numbering(1, 3, loaded_since=False)
    sim.misread(1)  # MISREAD unreadable, read 4
    assert sent[-1] == _payload(docs["MISREAD"])


async def test_the_replay_frames_of_the_docs_both_ways(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _documented_shoe_frames()
    # host -> shoe: the driver's REPLAY after load 3 read 39, with the documented tag as the one it picked
    monkeypatch.setattr(secrets, "randbits", lambda bits: 0xC0FFEE01)
    driver = ShoeDriver(ShoeConfig(port="unused"))
    driver.resume_after = (3, 39)
    sent: list[tuple[int, bytes]] = []

    class Link:
        def send(self, mtype: int, payload: bytes, now: float) -> None:
            sent.append((mtype, payload))

    driver._link = Link()  # type: ignore[assignment]
    driver._on_link_up()
    assert sent == [_payload(docs["REPLAY"])]
    # shoe -> host: the simulator at load 3 read 41 answers with nothing missing, as documented
    sim = SimShoe(seed=1)
    answered: list[tuple[int, bytes]] = []
    sim._send = lambda mtype, payload=b"": answered.append((mtype, payload))  # type: ignore[method-assign]
    sim.restore_numbering(3, 39, loaded_since=False)
    sim.deal()
    sim.deal()
    answered.clear()
    sim._on_message(*_payload(docs["REPLAY"]))
    assert [proto.READ_NUMBER.unpack(p[:4]) for _, p in answered[:-1]] == [(3, 40), (3, 41)]
    assert answered[-1] == _payload(docs["REPLAY_END"])
    # and the driver reads that REPLAY_END: the held reads are handed on, nothing is missing
    assert list(driver._decode(*_payload(docs["REPLAY_END"]))) == []
