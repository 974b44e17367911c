"""The simulated chip sensors on their own: what each POLL is answered with.

docs/protocols.md (chip sensors): address 1..7 is a spot's bet sensor, 0x80 | spot its insurance line;
WAGER is address, cents u32, chips u16 (big-endian), FAULT address and code, ABSENT the address.
"""

from __future__ import annotations

import struct

import pytest

from drivers import chips as proto
from simulators import SimChips
from tests.simulators.conftest import capture_sends


def _poll(sim: SimChips, *addresses: int) -> None:
    for addr in addresses:
        sim._on_message(proto.POLL, bytes((addr,)))


def _wager(addr: int, cents: int, chips: int) -> tuple[int, bytes]:
    return proto.WAGER, struct.pack(">BIH", addr, cents, chips)


def test_a_wager_is_read_back_with_a_plausible_chip_count() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    sim.set_wager(2, 1234)  # $5 x2, $1 x2, 25c x1, and one more chip for the 9 cents left
    sim.set_wager(4, 250_000)  # $1000 x2, $500 x1
    sim.set_wager(6, 700, chips=14)  # what the sensor counts when told
    _poll(sim, 2, 4, 6)
    assert sent == [_wager(2, 1234, 6), _wager(4, 250_000, 3), _wager(6, 700, 14)]


def test_an_empty_sensor_reads_zero_and_the_insurance_line_is_its_own_sensor() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    sim.set_wager(3, 500, line="insurance")
    _poll(sim, 3, 0x83)
    assert sent == [_wager(3, 0, 0), _wager(0x83, 500, 1)]


def test_clear_takes_the_chips_off_one_spot_both_lines_or_the_whole_table() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    for spot in (1, 2):
        sim.set_wager(spot, 1000)
        sim.set_wager(spot, 500, line="insurance")
    sim.clear(1)
    _poll(sim, 1, 0x81, 2, 0x82)
    assert sent == [_wager(1, 0, 0), _wager(0x81, 0, 0), _wager(2, 1000, 2), _wager(0x82, 500, 1)]
    sent.clear()
    sim.clear()
    _poll(sim, 2, 0x82)
    assert sent == [_wager(2, 0, 0), _wager(0x82, 0, 0)]


def test_a_faulty_sensor_reports_its_code_until_it_works_again() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    sim.set_wager(5, 2500)
    sim.fault(5, 2)
    sim.fault(5, 3, line="insurance")
    _poll(sim, 5, 0x85)
    assert sent == [(proto.FAULT, bytes((5, 2))), (proto.FAULT, bytes((0x85, 3)))]
    sim.clear_fault(5)
    _poll(sim, 5, 0x85)
    assert sent[2:] == [_wager(5, 2500, 1), (proto.FAULT, bytes((0x85, 3)))]


@pytest.mark.parametrize("addr", [0, 8, 0x80, 0x88, 0x7F])
def test_no_sensor_answers_outside_spots_1_to_7(addr: int) -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    _poll(sim, addr)
    assert sent == [(proto.ABSENT, bytes((addr,)))]


def test_an_absent_spot_has_neither_line() -> None:
    sim = SimChips(absent=[7])
    sent = capture_sends(sim)
    sim.set_wager(7, 500)  # chips on a spot without sensors: nobody reads them
    _poll(sim, 7, 0x87, 6)
    assert sent == [(proto.ABSENT, b"\x07"), (proto.ABSENT, b"\x87"), _wager(6, 0, 0)]


def test_only_polls_are_answered_and_counted() -> None:
    sim = SimChips()
    sent = capture_sends(sim)
    sim._on_message(proto.POLL, b"")
    sim._on_message(proto.WAGER, b"\x01")
    assert sent == [] and sim.polls == 0
    _poll(sim, 1, 1, 2)
    assert sim.polls == 3


def test_a_negative_wager_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        SimChips().set_wager(1, -25)
