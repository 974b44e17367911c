"""Every example frame of docs/protocols.md, pinned both ways: a device maker builds to the docs.

The drivers and the simulators share their message constants, so a test that only runs one against the
other cannot see two codes swapped or a field's byte order flipped. Here each example is read from the
docs themselves: the codec must accept it and find the TYPE its row names; the driver must read a
device's frame as the docs describe it and write a host command as the docs show it; the simulator must
write the device's frame exactly. (The shoe's frames and the replay: tests/drivers/test_shoe_reads.py.)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from drivers import ChipsConfig, ChipsDriver, ShoeConfig, ShoeDriver, ShufflerConfig, ShufflerDriver
from drivers import chips as chips_proto
from drivers import console as console_proto
from drivers import link as link_proto
from drivers import shoe as shoe_proto
from drivers import shuffler as shuffler_proto
from drivers.codec import Frame, FrameDecoder, encode_frame
from drivers.events import Button
from simulators import SimChips, SimShuffler

DOCS = (Path(__file__).resolve().parents[2] / "docs" / "protocols.md").read_text()
HEX_FRAME = r"`((?:[0-9a-f]{2} )+7e)`"


def _section(title: str) -> str:
    return DOCS.split(f"## {title}")[1].split("\n## ")[0]


def _table_frames(title: str) -> dict[str, tuple[int, list[bytes]]]:
    """Name -> (TYPE, example frames) of every table row of a section that has a TYPE and an example."""
    rows: dict[str, tuple[int, list[bytes]]] = {}
    for line in _section(title).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and re.fullmatch(r"0x[0-9A-F]{2}", cells[0]):
            name = (cells[2] if len(cells) == 5 else cells[1]).split()[0]
            rows[name] = (int(cells[0], 16), [bytes.fromhex(h) for h in re.findall(HEX_FRAME, cells[-1])])
    return rows


def _decoded(wire: bytes) -> Frame:
    decoder = FrameDecoder()
    decoder.receive_data(wire)
    frame = decoder.next_frame()
    assert isinstance(frame, Frame) and decoder.next_frame() is None, wire.hex(" ")
    assert encode_frame(frame) == wire, "the example is exactly what the codec writes for it"
    return frame


SHUFFLER = _table_frames("Shuffler (role `F`)")
CHIPS = _table_frames("Chip sensors (role `C`, RS-485 multi-drop)")
SHOE = _table_frames("Shoe (role `S`)")


@pytest.mark.parametrize(("section", "name"), [(s, n) for s, rows in (("shuffler", SHUFFLER), ("chips", CHIPS),
                                                                      ("shoe", SHOE)) for n in rows])
def test_every_documented_frame_decodes_to_the_type_its_row_names(section: str, name: str) -> None:
    mtype, examples = {"shuffler": SHUFFLER, "chips": CHIPS, "shoe": SHOE}[section][name]
    assert examples, f"{section} {name}: no example in the docs"
    module: Any = {"shuffler": shuffler_proto, "chips": chips_proto, "shoe": shoe_proto}[section]
    assert getattr(module, name) == mtype, f"docs say {name} is 0x{mtype:02X}"
    for wire in examples:
        assert _decoded(wire).mtype == mtype


def test_the_sections_hold_every_message_of_the_code() -> None:
    assert set(SHUFFLER) == {"STARTED", "COMPLETE", "READY", "MISMATCH", "JAM", "DOOR", "START", "CLEAR_JAM", "RESET"}
    assert set(CHIPS) == {"POLL", "WAGER", "FAULT", "ABSENT"}
    assert len(SHOE) == 15


# -- shuffler ---------------------------------------------------------------------------------------------

SHUFFLER_EVENTS: dict[str, dict[str, Any]] = {  # what each example's note says
    "STARTED": {"type": "shuffle_started", "deck_set": "B"},
    "COMPLETE": {"type": "shuffle_complete", "deck_set": "B", "count": 312,
                 "composition": dict.fromkeys("A23456789TJQK", 24)},
    "READY": {"type": "deck_set_ready", "deck_set": "B"},
    "MISMATCH": {"type": "count_mismatch", "deck_set": "A", "expected": 312, "counted": 311},
    "JAM": {"type": "jam", "deck_set": "A", "cleared": False},
    "DOOR": {"type": "door", "open": True},
}


@pytest.mark.parametrize("name", sorted(SHUFFLER_EVENTS))
def test_the_shuffler_driver_reads_each_documented_frame_as_the_docs_say(name: str) -> None:
    frame = _decoded(SHUFFLER[name][1][0])
    events = ShufflerDriver(ShufflerConfig(port="unused"))._decode(frame.mtype, frame.payload)
    assert [e.to_json() for e in events] == [SHUFFLER_EVENTS[name]]


def _capture_sends(sim: Any) -> list[tuple[int, bytes]]:
    sent: list[tuple[int, bytes]] = []
    sim._send = lambda mtype, payload=b"": sent.append((mtype, payload))
    return sent


def _pair(wire: bytes) -> tuple[int, bytes]:
    frame = _decoded(wire)
    return frame.mtype, frame.payload


async def test_the_simulated_shuffler_writes_the_documented_frames() -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sent = _capture_sends(sim)
    await sim._shuffle("B", 6)  # STARTED, COMPLETE (312, 24 of each), READY
    assert sent == [_pair(SHUFFLER[n][1][0]) for n in ("STARTED", "COMPLETE", "READY")]
    sent.clear()
    sim.sets["A"] = sim.sets["A"][:-1]  # a card short
    await sim._shuffle("A", 6)
    assert sent[-1] == _pair(SHUFFLER["MISMATCH"][1][0])
    sent.clear()
    sim.jam_next = True
    await sim._shuffle("A", 6)
    assert sent[-1] == _pair(SHUFFLER["JAM"][1][0])
    sent.clear()
    sim.open_door()
    assert sent == [_pair(SHUFFLER["DOOR"][1][0])]


async def test_the_shuffler_driver_writes_the_documented_commands() -> None:
    driver = ShufflerDriver(ShufflerConfig(port="unused"))
    sent: list[tuple[int, bytes]] = []

    async def command(mtype: int, payload: bytes = b"") -> None:
        sent.append((mtype, payload))

    driver._command = command  # type: ignore[method-assign]
    await driver.start_shuffle("B", 6)
    await driver.clear_jam("A")
    await driver.reset()
    assert sent == [_pair(SHUFFLER[n][1][0]) for n in ("START", "CLEAR_JAM", "RESET")]


# -- chips -------------------------------------------------------------------------------------------------


def test_the_chips_driver_reads_each_documented_frame_as_the_docs_say() -> None:
    driver = ChipsDriver(ChipsConfig(port="unused"))
    wager, fault, absent = (_decoded(CHIPS[n][1][0]) for n in ("WAGER", "FAULT", "ABSENT"))
    assert [e.to_json() for e in driver._decode(wager.mtype, wager.payload)] == [
        {"type": "wager", "spot": 3, "line": "bet", "cents": 2500, "chips": 1}]  # spot 3: $25.00, 1 chip
    assert [e.to_json() for e in driver._decode(fault.mtype, fault.payload)] == [
        {"type": "sensor_fault", "spot": 5, "line": "bet", "code": 2}]  # stack too high
    assert list(driver._decode(absent.mtype, absent.payload)) == []  # no sensor at insurance 7: no event
    assert chips_proto.spot_line(absent.payload[0]) == (7, "insurance")


def test_the_simulated_chips_write_the_documented_frames() -> None:
    sim = SimChips(absent=[7])
    sent = _capture_sends(sim)
    sim.set_wager(3, 2500, chips=1)
    sim.fault(5, 2)
    for addr in (3, 5, 0x87):
        sim._on_message(chips_proto.POLL, bytes((addr,)))
    assert sent == [_pair(CHIPS[n][1][0]) for n in ("WAGER", "FAULT", "ABSENT")]


async def test_the_chips_driver_polls_as_documented() -> None:
    driver = ChipsDriver(ChipsConfig(port="unused", spots=[3], insurance=True))
    sent: list[tuple[int, bytes]] = []

    async def command(mtype: int, payload: bytes = b"") -> None:
        sent.append((mtype, payload))
        driver._answered(payload[0])

    driver._command = command  # type: ignore[method-assign]
    await driver.poll_once()
    assert sent == [_pair(wire) for wire in CHIPS["POLL"][1]]  # spot 3, then insurance 3


# -- shoe commands (the shoe's reads: test_shoe_reads.py) ------------------------------------------------


async def test_the_shoe_driver_writes_the_documented_commands() -> None:
    driver = ShoeDriver(ShoeConfig(port="unused", request_timeout_s=0.01))
    sent: list[tuple[int, bytes]] = []

    async def command(mtype: int, payload: bytes = b"") -> None:
        sent.append((mtype, payload))

    driver._command = command  # type: ignore[method-assign]
    with pytest.raises(Exception, match="no peek answer"):
        await driver.request_peek("A")  # id 1, up card A (nobody answers here)
    await driver.enable_dealing()
    await driver.lock_dealing()
    await driver.reset()
    await driver.reveal_hole()
    names = ("PEEK_REQUEST", "ENABLE", "LOCK", "RESET", "REVEAL_HOLE")
    assert sent == [_pair(SHOE[n][1][0]) for n in names]


# -- link layer --------------------------------------------------------------------------------------------


def _link_examples() -> dict[str, bytes]:
    block = _section("Link layer").split("```")[1]
    return {line.split("  ")[0].strip(): bytes.fromhex(line.split("  ")[-1].strip())
            for line in block.strip().splitlines()}


def test_the_link_writes_its_documented_frames() -> None:
    examples = _link_examples()
    host = link_proto.Link(role=link_proto.ROLE_HOST, initiator=True, session=0x12345678, now=0.0,
                           peer_role=shoe_proto.ROLE)
    host.poll(0.0)
    assert host.data_to_send() == examples["HELLO host (session 0x12345678)"]
    shoe = link_proto.Link(role=shoe_proto.ROLE, initiator=False, session=0x0A0B0C0D, now=0.0,
                           peer_role=link_proto.ROLE_HOST)
    shoe.receive_data(examples["HELLO host (session 0x12345678)"], 0.0)
    assert shoe.data_to_send() == examples["HELLO shoe (session 0x0A0B0C0D)"]
    assert encode_frame(Frame(link_proto.ACK, 5)) == examples["ACK seq 5"]
    assert encode_frame(Frame(link_proto.NAK, 4)) == examples["NAK (last accepted 4)"]
    assert encode_frame(Frame(link_proto.HEARTBEAT, 0)) == examples["HEARTBEAT"]
    shoe.poll(1.0)  # nothing sent for 0.3 s: a heartbeat
    assert examples["HEARTBEAT"] in shoe.data_to_send()


def test_the_link_answers_a_documented_data_frame_with_the_documented_ack() -> None:
    examples = _link_examples()
    host = link_proto.Link(role=link_proto.ROLE_HOST, initiator=True, session=0x12345678, now=0.0,
                           peer_role=shoe_proto.ROLE)
    host.poll(0.0)
    host.data_to_send()
    host.receive_data(examples["HELLO shoe (session 0x0A0B0C0D)"], 0.0)
    assert host.up
    card = encode_frame(Frame(shoe_proto.CARD, 5, shoe_proto.READ_NUMBER.pack(1, 1) + b"TD"))
    host.receive_data(card, 0.01)
    assert host.data_to_send() == examples["ACK seq 5"]


# -- console (USB HID) -------------------------------------------------------------------------------------


def test_the_console_reports_of_the_docs_both_ways() -> None:
    section = _section("Dealer console (USB HID)")
    split_report = bytes.fromhex(re.search(r"Example: split pressed[^`]*`([0-9a-f ]+)`", section).group(1))  # type: ignore[union-attr]
    lights = bytes.fromhex(re.search(r"Example: light stand_next[^`]*`([0-9a-f ]+)`", section).group(1))  # type: ignore[union-attr]
    split_bit = 1 << list(Button).index(Button.SPLIT)
    assert console_proto.encode_input(split_bit, 1 << 2, 9) == split_report  # split, spot 3 selected, 9th report
    assert console_proto.decode_input(split_report) == (split_bit, 1 << 2, 9)
    assert console_proto.encode_lights([Button.STAND_NEXT, Button.DOUBLE], [2, 5], console_proto.ALARM_ON) == lights
    assert console_proto.decode_lights(lights) == (frozenset({Button.STAND_NEXT, Button.DOUBLE}), frozenset({2, 5}),
                                                   console_proto.ALARM_ON)
