"""The framing codec: layout, CRC, every frame type round-trips, resync, fuzz."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import chips, console, shoe, shuffler
from drivers.codec import MAX_PAYLOAD, Frame, FrameDecoder, Garbage, crc16, decode_segment, encode_frame
from drivers.errors import FrameError, ProtocolError
from drivers.events import Button
from drivers.link import ACK, HEARTBEAT, HELLO, NAK

#: One example frame of every type of every serial device (docs/protocols.md shows the same).
EVERY_FRAME: list[Frame] = [
    Frame(HELLO, 0, struct.pack(">BBI", 1, ord("H"), 0x12345678)),
    Frame(ACK, 7),
    Frame(NAK, 6),
    Frame(HEARTBEAT),
    Frame(shoe.CARD, 1, b"TD"),
    Frame(shoe.HOLE_DEALT, 2),
    Frame(shoe.HOLE_REVEALED, 3, b"AS"),
    Frame(shoe.CUT, 4),
    Frame(shoe.MISREAD, 5, b"\x01"),
    Frame(shoe.PEEK_RESULT, 6, b"\x01\x00"),
    Frame(shoe.PRESENCE, 7, b"\x01"),
    Frame(shoe.DEALING, 8, b"\x00"),
    Frame(shoe.PEEK_REQUEST, 9, b"\x01A"),
    Frame(shoe.ENABLE, 10),
    Frame(shoe.LOCK, 11),
    Frame(shoe.RESET, 12),
    Frame(shoe.REVEAL_HOLE, 13),
    Frame(shuffler.STARTED, 14, b"A"),
    Frame(shuffler.COMPLETE, 15, shuffler.COMPLETE_FMT.pack(b"B", 312, *([24] * 13))),
    Frame(shuffler.READY, 16, b"B"),
    Frame(shuffler.MISMATCH, 17, shuffler.MISMATCH_FMT.pack(b"A", 312, 311)),
    Frame(shuffler.JAM, 18, b"A\x00"),
    Frame(shuffler.DOOR, 19, b"\x01"),
    Frame(shuffler.START, 20, b"A\x06"),
    Frame(shuffler.CLEAR_JAM, 21, b"A"),
    Frame(shuffler.RESET, 22),
    Frame(chips.POLL, 23, b"\x83"),
    Frame(chips.WAGER, 24, chips.WAGER_FMT.pack(3, 2500, 1)),
    Frame(chips.FAULT, 25, b"\x03\x01"),
    Frame(chips.ABSENT, 0x7E, b"\x7d\x7e"),  # seq and payload needing escapes
]


def test_crc_is_ccitt_false() -> None:
    assert crc16(b"123456789") == 0x29B1


def test_card_frame_bytes_match_the_documented_example() -> None:
    payload = shoe.READ_NUMBER.pack(1, 1) + b"TD"  # load 1, read 1, the ten of diamonds
    assert encode_frame(Frame(shoe.CARD, 1, payload)).hex(" ") == "7e 06 01 10 00 01 00 01 54 44 65 08 7e"


@pytest.mark.parametrize("frame", EVERY_FRAME, ids=lambda f: f"type{f.mtype:02x}")
def test_every_frame_type_round_trips(frame: Frame) -> None:
    wire = encode_frame(frame)
    assert wire[0] == wire[-1] == 0x7E and 0x7E not in wire[1:-1]
    assert decode_segment(wire[1:-1]) == frame
    dec = FrameDecoder()
    dec.receive_data(wire)
    assert dec.next_frame() == frame
    assert dec.next_frame() is None


def test_console_reports_round_trip() -> None:
    report = console.encode_input(0b1000_0101, 0b100_0001, 9)
    assert console.decode_input(report) == (0b1000_0101, 0b100_0001, 9)
    lights = console.encode_lights([Button.DOUBLE, Button.ALARM_ACK], [1, 7], console.ALARM_BLINK)
    assert console.decode_lights(lights) == (frozenset({Button.DOUBLE, Button.ALARM_ACK}), frozenset({1, 7}), 2)


def test_stream_split_at_every_byte_still_decodes() -> None:
    wire = b"".join(encode_frame(f) for f in EVERY_FRAME)
    dec = FrameDecoder()
    got: list[Frame] = []
    for i in range(len(wire)):
        dec.receive_data(wire[i : i + 1])
        while (item := dec.next_frame()) is not None:
            assert isinstance(item, Frame)
            got.append(item)
    assert got == EVERY_FRAME


def test_garbage_between_frames_is_skipped() -> None:
    a, b = Frame(shoe.CARD, 1, b"AS"), Frame(shoe.CARD, 2, b"KH")
    dec = FrameDecoder()
    dec.receive_data(b"\x00\xff\x13" + encode_frame(a) + b"noise\x7e\x7d\x7e" + encode_frame(b) + b"\x42")
    items = []
    while (item := dec.next_frame()) is not None:
        items.append(item)
    assert [i for i in items if isinstance(i, Frame)] == [a, b]
    assert all(isinstance(i, Garbage) for i in items if not isinstance(i, Frame))
    assert dec.buffered == 1  # the trailing byte waits for a flag


def test_corrupted_frame_is_reported_not_accepted() -> None:
    wire = bytearray(encode_frame(Frame(shoe.CARD, 1, b"TD")))
    wire[4] ^= 0x01  # 'T' -> 'U'
    dec = FrameDecoder()
    dec.receive_data(bytes(wire))
    item = dec.next_frame()
    assert isinstance(item, Garbage) and "CRC" in item.reason


@pytest.mark.parametrize(
    ("segment", "why"),
    [
        (b"\x02\x01", "shorter"),
        (b"\x41\x01\x10" + b"x" * 65 + b"\x00\x00", "exceeds"),
        (b"\x03\x01\x10TD\x00\x00", "length byte"),
        (b"\x02\x01\x10T\x7d\x01\x00\x00", "escape"),
    ],
)
def test_decode_segment_says_why(segment: bytes, why: str) -> None:
    with pytest.raises(FrameError, match=why):
        decode_segment(segment)


def test_encode_refuses_oversized_payload() -> None:
    with pytest.raises(FrameError):
        encode_frame(Frame(shoe.CARD, 1, b"x" * (MAX_PAYLOAD + 1)))


def test_endless_bytes_without_a_flag_are_dropped() -> None:
    dec = FrameDecoder()
    dec.receive_data(b"\x01" * 1000)
    assert isinstance(dec.next_frame(), Garbage)
    assert dec.buffered == 0


@settings(max_examples=400, deadline=1000)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_fuzz_stream_decoder_never_raises_and_never_hangs(chunks: list[bytes]) -> None:
    dec = FrameDecoder()
    for chunk in chunks:
        dec.receive_data(chunk)
        for _ in range(len(chunk) + 2):  # each call consumes bytes: bounded
            if dec.next_frame() is None:
                break
        else:
            pytest.fail("decoder kept returning items without consuming input")
    assert dec.buffered <= 2 * (MAX_PAYLOAD + 5) + 300


@settings(max_examples=400, deadline=1000)
@given(st.binary(max_size=200))
def test_fuzz_segment_decoder_raises_only_its_own_error(segment: bytes) -> None:
    try:
        frame = decode_segment(segment)
    except FrameError as e:
        assert isinstance(e, ProtocolError)
    else:
        assert encode_frame(frame)[1:-1] == segment


@settings(max_examples=200, deadline=1000)
@given(st.lists(st.tuples(st.integers(0x10, 0xFF), st.integers(0, 255), st.binary(max_size=MAX_PAYLOAD)), max_size=10),
       st.binary(max_size=50))
def test_fuzz_frames_survive_surrounding_garbage(frames: list[tuple[int, int, bytes]], noise: bytes) -> None:
    sent = [Frame(t, s, p) for t, s, p in frames]
    dec = FrameDecoder()
    dec.receive_data(noise + b"\x7e" + b"".join(encode_frame(f) for f in sent))
    got = []
    while (item := dec.next_frame()) is not None:
        if isinstance(item, Frame):
            got.append(item)
    # Noise may itself decode as a valid frame only if it carries a correct CRC; the real frames all arrive.
    assert got[-len(sent):] == sent if sent else True
