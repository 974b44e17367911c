"""The player-card readers: docs/protocols.md's frames both ways, levels to events, the shared chip bus.

The readers sit on the chip bus at ``0x40 | spot`` and answer the chip bus's POLL with a level
(CARD_IN number, NO_CARD, UNREADABLE reason). Each example frame of the docs' section is read from
the page: the codec takes it, the driver reads it as the docs say, the simulator writes it exactly.
Then the driver against the simulator over a real pty, alone and sharing the bus with the chip sensors.
"""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path
from typing import Any

import pytest

from drivers import CardReaderConfig, CardReaderDriver, ChipsConfig, ChipsDriver, open_device
from drivers import chips as chips_proto
from drivers import playercard as proto
from drivers.chips import LOST_READER_RETRY_S
from drivers.codec import Frame, FrameDecoder, encode_frame
from drivers.events import DeviceEvent
from drivers.playercard import ReaderLevels
from simulators import SimChips
from simulators.cardreader import CardReaders
from tests.drivers.conftest import next_event
from tests.simulators.conftest import capture_sends

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "protocols.md").read_text()
SECTION = DOCS.split("## Player-card readers (on the chip bus, role `C`)")[1].split("\n## ")[0]


def _rows() -> dict[str, tuple[int, bytes]]:
    """Name -> (TYPE, example frame) of each row of the section's message table."""
    rows: dict[str, tuple[int, bytes]] = {}
    for line in SECTION.replace("\\|", "/").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and re.fullmatch(r"0x[0-9A-F]{2}", cells[0]):
            (example,) = re.findall(r"`((?:[0-9a-f]{2} )+7e)`", cells[4])
            rows[cells[2]] = (int(cells[0], 16), bytes.fromhex(example))
    return rows


ROWS = _rows()


def _decoded(wire: bytes) -> Frame:
    decoder = FrameDecoder()
    decoder.receive_data(wire)
    frame = decoder.next_frame()
    assert isinstance(frame, Frame) and decoder.next_frame() is None, wire.hex(" ")
    assert encode_frame(frame) == wire, "the example is exactly what the codec writes for it"
    return frame


def _json(events: Any) -> list[dict[str, Any]]:
    return [e.to_json() for e in events]


def test_the_section_documents_every_reader_message_with_its_code() -> None:
    assert set(ROWS) == {"POLL", "CARD_IN", "NO_CARD", "UNREADABLE", "ABSENT"}
    for name, (mtype, wire) in ROWS.items():
        module: Any = chips_proto if name in ("POLL", "ABSENT") else proto
        assert getattr(module, name) == mtype, f"docs say {name} is 0x{mtype:02X}"
        assert _decoded(wire).mtype == mtype


def test_the_driver_reads_each_documented_answer_as_the_docs_say() -> None:
    driver = ChipsDriver(ChipsConfig(port="unused", card_readers=True))
    events: list[DeviceEvent] = []
    for name in ("CARD_IN", "NO_CARD", "UNREADABLE", "ABSENT"):
        frame = _decoded(ROWS[name][1])
        events += driver._decode(frame.mtype, frame.payload)
    assert _json(events) == [
        {"type": "card_in", "spot": 3, "player": "6001234567"},  # spot 3 holds card 6001234567
        {"type": "card_out", "spot": 3, "player": "6001234567"},  # spot 3: empty
        {"type": "card_unreadable", "spot": 5, "code": 1, "reason": "blank or damaged card"},
        {"type": "reader_lost", "spot": 6, "reason": "no reader fitted at its address"},
    ]
    # and the events table of the section shows these very objects
    for event in events:
        shown = event.to_json()
        if shown["type"] == "reader_lost":
            continue  # its documented reason is the other one (unanswered polls)
        assert str(shown).replace("'", '"') in SECTION.replace("`", ""), shown


async def test_the_driver_polls_each_reader_with_the_documented_frame() -> None:
    driver = CardReaderDriver(CardReaderConfig(port="unused", spots=(3,)))
    sent: list[tuple[int, bytes]] = []

    async def command(mtype: int, payload: bytes = b"") -> None:
        sent.append((mtype, payload))
        driver._answered(payload[0])

    driver._command = command  # type: ignore[method-assign]
    await driver.poll_once()
    frame = _decoded(ROWS["POLL"][1])
    assert sent == [(frame.mtype, frame.payload)]  # the reader of spot 3, and no chip sensor


def test_the_simulated_bus_writes_the_documented_answers() -> None:
    readers = CardReaders(spots=(1, 2, 3, 4, 5, 7))  # no reader fitted at spot 6
    sim = SimChips(readers=readers)
    sent = capture_sends(sim)
    readers.insert(3, "6001234567")
    sim._on_message(chips_proto.POLL, b"\x43")
    readers.remove(3)
    sim._on_message(chips_proto.POLL, b"\x43")
    readers.insert_unreadable(5, 1)
    sim._on_message(chips_proto.POLL, b"\x45")
    sim._on_message(chips_proto.POLL, b"\x46")
    expected = [_decoded(ROWS[n][1]) for n in ("CARD_IN", "NO_CARD", "UNREADABLE", "ABSENT")]
    assert sent == [(f.mtype, f.payload) for f in expected]


def test_a_bus_without_readers_answers_absent_at_their_addresses_as_before() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    sim._on_message(chips_proto.POLL, b"\x43")
    assert sent == [(chips_proto.ABSENT, b"\x43")]


# -- levels to events ------------------------------------------------------------------------------


def _answer(levels: ReaderLevels, readers: CardReaders, spot: int) -> list[dict[str, Any]]:
    got = readers.answer(proto.reader_address(spot))
    return [] if got is None else _json(levels.answered(*got))


def test_the_same_card_read_again_is_no_event_and_a_swapped_card_is_out_then_in() -> None:
    levels, readers = ReaderLevels((2,)), CardReaders()
    assert _answer(levels, readers, 2) == []  # empty from the start: nothing to say
    readers.insert(2, "111")
    assert _answer(levels, readers, 2) == [{"type": "card_in", "spot": 2, "player": "111"}]
    assert _answer(levels, readers, 2) == []
    readers.insert(2, "222")  # pulled and another pushed in between two polls
    assert _answer(levels, readers, 2) == [{"type": "card_out", "spot": 2, "player": "111"},
                                           {"type": "card_in", "spot": 2, "player": "222"}]
    assert levels.cards == {2: "222"}


def test_an_unreadable_card_is_said_once_and_its_removal_is_quiet() -> None:
    levels, readers = ReaderLevels((4,)), CardReaders()
    readers.insert(4, "9")
    _answer(levels, readers, 4)
    readers.insert_unreadable(4, 3)
    assert _answer(levels, readers, 4) == [
        {"type": "card_out", "spot": 4, "player": "9"},
        {"type": "card_unreadable", "spot": 4, "code": 3, "reason": "card inserted the wrong way"}]
    assert _answer(levels, readers, 4) == []
    readers.remove(4)
    assert _answer(levels, readers, 4) == [] and levels.cards == {}


def test_a_lost_reader_keeps_its_card_and_says_only_what_changed_when_back() -> None:
    levels, readers = ReaderLevels((1,)), CardReaders()
    readers.insert(1, "777")
    _answer(levels, readers, 1)
    readers.lose(1)
    assert readers.answer(proto.reader_address(1)) is None
    assert _json(levels.missed(1)) == [] and _json(levels.missed(1)) == []
    assert _json(levels.missed(1)) == [{"type": "reader_lost", "spot": 1, "reason": "no answer to 3 polls"}]
    assert _json(levels.missed(1)) == [] and levels.cards == {1: "777"}  # not taken as removed
    readers.restore(1)
    assert _answer(levels, readers, 1) == [{"type": "reader_back", "spot": 1}]  # same card: nothing else
    readers.lose(1)
    for _ in range(3):
        levels.missed(1)
    readers.restore(1)
    readers.remove(1)  # the player left while the reader was down
    assert _answer(levels, readers, 1) == [{"type": "reader_back", "spot": 1},
                                           {"type": "card_out", "spot": 1, "player": "777"}]


@pytest.mark.parametrize("payload", [b"\x43", b"\x43" + b"1" * 21, b"\x43abc", b"\x43\xff"])
def test_a_card_number_the_protocol_cannot_carry_is_refused_and_the_level_kept(payload: bytes) -> None:
    levels = ReaderLevels((3,))
    with pytest.raises(ValueError, match="card number"):
        levels.answered(proto.CARD_IN, payload)
    assert levels.cards == {}


def test_an_unknown_unreadable_reason_and_a_foreign_address_are_refused() -> None:
    levels = ReaderLevels((3,))
    with pytest.raises(ValueError, match="reason 9"):
        levels.answered(proto.UNREADABLE, b"\x43\x09")
    with pytest.raises(ValueError, match="not a card reader"):
        levels.answered(proto.NO_CARD, b"\x03")
    with pytest.raises(ValueError, match="1 to 20"):
        CardReaders().insert(3, "12 34")
    with pytest.raises(ValueError, match="no card reader at spot 6"):
        CardReaders(spots=(1,)).insert(6, "1")


def test_the_card_reader_kind_is_in_the_registry() -> None:
    driver = open_device("cards", "/dev/ttyUSB9", spots=(2, 5))
    assert isinstance(driver, CardReaderDriver) and driver.addresses == (0x42, 0x45)
    table = ChipsDriver(ChipsConfig(port="x", spots=(2,), card_readers=True))
    assert table.addresses == (0x02, 0x82, 0x42)  # the chip sensors first, then the reader
    with pytest.raises(ValueError, match="card_readers cannot be false"):
        CardReaderConfig(port="x", card_readers=False)


# -- over a pty ------------------------------------------------------------------------------------------


async def test_cards_and_wagers_share_one_bus_and_one_driver(link_dir: Path) -> None:
    readers = CardReaders()
    async with SimChips(link=str(link_dir / "bus"), readers=readers) as sim, \
            ChipsDriver(ChipsConfig(port=sim.port, poll_interval_s=0.01, card_readers=True)) as bus:
        it = bus.events()
        readers.insert(3, "6001234567")
        sim.set_wager(3, 2500)
        seen: dict[str, dict[str, Any]] = {}
        while len(seen) < 2:
            event = await asyncio.wait_for(it.__anext__(), 2)
            if event.type in ("card_in", "wager") and getattr(event, "spot", 0) == 3 and (
                    event.type != "wager" or getattr(event, "cents", 0)):
                seen[event.type] = event.to_json()
        assert seen == {"card_in": {"type": "card_in", "spot": 3, "player": "6001234567"},
                        "wager": {"type": "wager", "spot": 3, "line": "bet", "cents": 2500, "chips": 1}}
        assert bus.cards == {3: "6001234567"}
        readers.remove(3)  # the card pulled (mid-round, for all the bus knows)
        assert (await next_event(bus, "card_out", it=it)).to_json() == {
            "type": "card_out", "spot": 3, "player": "6001234567"}


async def test_a_lost_reader_is_reported_and_the_chips_keep_being_read(link_dir: Path) -> None:
    readers = CardReaders()
    async with SimChips(link=str(link_dir / "bus"), readers=readers) as sim, \
            ChipsDriver(ChipsConfig(port=sim.port, poll_interval_s=0.01, card_readers=True,
                                    reader_timeout_s=0.05)) as bus:
        it = bus.events()
        readers.insert(6, "42")
        await next_event(bus, "card_in", it=it)
        readers.lose(6)
        lost = await next_event(bus, "reader_lost", it=it)
        assert lost.to_json() == {"type": "reader_lost", "spot": 6, "reason": "no answer to 3 polls"}
        sim.set_wager(2, 500)
        wager = await next_event(bus, "wager", it=it)
        assert wager.to_json()["cents"] in (0, 500)  # the bus is still polled...
        while bus.wager(2) != 500:
            await next_event(bus, "wager", it=it)
        assert bus.cards == {6: "42"}  # ...and the card still counts as in
        readers.restore(6)
        assert (await next_event(bus, "reader_back", it=it)).to_json() == {"type": "reader_back", "spot": 6}


async def test_the_reader_driver_alone_polls_no_chip_sensor(link_dir: Path) -> None:
    readers = CardReaders()
    async with SimChips(link=str(link_dir / "bus"), readers=readers) as sim, \
            CardReaderDriver(CardReaderConfig(port=sim.port, poll_interval_s=0.01)) as cards:
        readers.insert(7, "A1")
        assert (await next_event(cards, "card_in")).to_json() == {"type": "card_in", "spot": 7, "player": "A1"}
        assert sim.polls == readers.polls > 0  # every poll on the bus went to a reader


async def test_a_simulated_table_with_card_readers_reports_cards_through_its_chip_driver(tmp_path: Path) -> None:
    from simulators import SimTable

    async with SimTable(tmp_path, seed=1, backend="sim", card_readers=True) as sim, \
            sim.device_group(chips_poll_s=0.01) as devices:
        assert sim.cards is not None
        sim.cards.insert(2, "31337")

        async def card_in() -> tuple[str, dict[str, Any]]:
            async for name, event in devices.events():
                if event.type == "card_in":
                    return name, event.to_json()
            raise AssertionError("no card_in")

        assert await asyncio.wait_for(card_in(), 3) == ("chips", {"type": "card_in", "spot": 2, "player": "31337"})


async def test_through_a_noisy_bus_each_card_change_arrives_once_as_the_readers_log_says(link_dir: Path) -> None:
    """Corrupted and lost bytes both ways: the levels are polled again, so no change is lost or doubled."""
    readers = CardReaders()
    async with SimChips(link=str(link_dir / "bus"), readers=readers, corrupt=0.01, drop=0.005, fault_seed=5) as sim, \
            ChipsDriver(ChipsConfig(port=sim.port, poll_interval_s=0.005, card_readers=True)) as bus:
        got: list[dict[str, Any]] = []
        bus.listen(lambda e: got.append(e.to_json()) if e.type.startswith("card_") else None)
        steps: list[tuple[str, int, str]] = [("in", 1, "11"), ("in", 4, "44"), ("out", 1, "11"), ("in", 4, "45"),
                                             ("in", 1, "11"), ("out", 4, "45"), ("out", 1, "11")]
        for what, spot, number in steps:
            if what == "in":
                readers.insert(spot, number)
            else:
                readers.remove(spot)
            want = dict(readers.cards)
            for _ in range(400):
                if bus.cards == want:
                    break
                await asyncio.sleep(0.01)
            assert bus.cards == want, (what, spot, number)
        expected = []
        held: dict[int, str] = {}
        for change in readers.log:  # the simulator's own record: the truth
            if change.what == "in":
                if change.spot in held:
                    expected.append({"type": "card_out", "spot": change.spot, "player": held[change.spot]})
                expected.append({"type": "card_in", "spot": change.spot, "player": change.number})
                held[change.spot] = change.number or ""
            elif change.what == "out":
                expected.append({"type": "card_out", "spot": change.spot, "player": held.pop(change.spot)})
        assert got == expected
        assert sim.tx_faults.corrupted + sim.rx_faults.corrupted > 0  # the noise was there


async def test_silent_readers_do_not_slow_the_chip_sensors(link_dir: Path) -> None:
    """Seven readers configured, none answering: after they are found lost, a poll cycle of the chips
    waits for them at most once a second, not 7 x reader_timeout_s every cycle."""
    readers = CardReaders()
    for spot in range(1, 8):
        readers.lose(spot)
    async with SimChips(link=str(link_dir / "bus"), readers=readers) as sim, \
            ChipsDriver(ChipsConfig(port=sim.port, poll_interval_s=0.01, card_readers=True,
                                    reader_timeout_s=0.05)) as bus:
        it = bus.events()
        for _ in range(7):
            await next_event(bus, "reader_lost", it=it, timeout=3)
        # Counted, not timed (the suite runs beside other load): in a window, each silent reader is polled
        # about once a second while the chips are polled at every cycle.
        loop = asyncio.get_running_loop()
        readers_at = [sim.polls_by_address[proto.reader_address(spot)] for spot in range(1, 8)]
        chips_at, start = sim.polls_by_address[1], loop.time()
        await asyncio.sleep(1.5)
        elapsed = loop.time() - start
        reader_polls = [sim.polls_by_address[proto.reader_address(spot)] - n for spot, n in zip(range(1, 8), readers_at,
                                                                                          strict=True)]
        chip_polls = sim.polls_by_address[1] - chips_at
        most = math.ceil(elapsed / LOST_READER_RETRY_S) + 1
        assert max(reader_polls) <= most, f"silent readers polled {reader_polls} times in {elapsed:.2f} s"
        assert chip_polls > 2 * most, f"the chips were polled {chip_polls} times in {elapsed:.2f} s"
