"""The simulated dealer console on its own: its input reports, its lights, its USB presence.

docs/protocols.md and drivers/console.py (the layout): input report 0x01, buttons held (bit 0..7 =
no_more_bets, stand_next, double, split, surrender, insurance_closed, new_decks, alarm_ack), spot keys
held (bit 0..6 = spot 1..7), a counter mod 256, four zero bytes; output report 0x02 with the lights.
The reports are compared with bytes written out here, and the backend is driven through pyusb itself.
"""

from __future__ import annotations

import errno
import queue

import pytest
import usb.core

from drivers.events import Button
from simulators import SimConsole


def _reports(console: SimConsole) -> list[bytes | None]:
    out: list[bytes | None] = []
    while True:
        try:
            out.append(console.reports.get_nowait())
        except queue.Empty:
            return out


def test_each_change_of_what_is_held_is_one_report_in_the_documented_layout() -> None:
    console = SimConsole()
    console.press("double")
    console.press(Button.NO_MORE_BETS)
    console.press(3)
    console.release("double")
    console.release(3)
    assert _reports(console) == [
        bytes((0x01, 0b0000_0100, 0, 1, 0, 0, 0, 0)),
        bytes((0x01, 0b0000_0101, 0, 2, 0, 0, 0, 0)),
        bytes((0x01, 0b0000_0101, 0b100, 3, 0, 0, 0, 0)),
        bytes((0x01, 0b0000_0001, 0b100, 4, 0, 0, 0, 0)),
        bytes((0x01, 0b0000_0001, 0, 5, 0, 0, 0, 0)),
    ]


def test_a_tap_is_a_press_then_a_release() -> None:
    console = SimConsole()
    console.tap("alarm_ack")
    console.tap(7)
    assert _reports(console) == [
        bytes((0x01, 0x80, 0, 1, 0, 0, 0, 0)), bytes((0x01, 0, 0, 2, 0, 0, 0, 0)),
        bytes((0x01, 0, 0x40, 3, 0, 0, 0, 0)), bytes((0x01, 0, 0, 4, 0, 0, 0, 0)),
    ]


def test_the_report_counter_wraps_at_256() -> None:
    console = SimConsole()
    for _ in range(128):
        console.tap("split")
    reports = _reports(console)
    assert len(reports) == 256
    assert [r[3] for r in reports if r is not None][-2:] == [255, 0]


@pytest.mark.parametrize("key", [0, 8, "shuffle", "DOUBLE"])
def test_a_key_the_console_does_not_have_is_refused(key: str | int) -> None:
    console = SimConsole()
    with pytest.raises(ValueError):
        console.press(key)
    assert _reports(console) == []


def test_pyusb_finds_it_and_reads_its_reports_through_the_backend() -> None:
    console = SimConsole(vid=0x1D50, pid=0x6190)
    device = usb.core.find(idVendor=0x1D50, idProduct=0x6190, backend=console.backend)
    assert device is not None
    assert usb.core.find(idVendor=0x1234, backend=console.backend) is None
    device.set_configuration()
    console.tap("stand_next")
    assert bytes(device.read(0x81, 8, timeout=100)) == bytes((0x01, 0b10, 0, 1, 0, 0, 0, 0))
    assert bytes(device.read(0x81, 8, timeout=100)) == bytes((0x01, 0, 0, 2, 0, 0, 0, 0))
    with pytest.raises(usb.core.USBTimeoutError):
        device.read(0x81, 8, timeout=10)  # nothing held changed: nothing to read


def test_the_lights_are_the_last_output_report() -> None:
    console = SimConsole()
    assert console.lights is None
    device = usb.core.find(idVendor=console.vid, backend=console.backend)
    assert device is not None
    assert device.write(0x01, bytes((0x02, 0b101, 0b100_0001, 2, 0, 0, 0, 0)), timeout=100) == 8
    assert console.lights == (frozenset({Button.NO_MORE_BETS, Button.DOUBLE}), frozenset({1, 7}), 2)
    device.write(0x01, bytes((0x02, 0, 0, 0, 0, 0, 0, 0)), timeout=100)
    assert console.lights == (frozenset(), frozenset(), 0)


def test_the_interface_is_claimed_by_one_host_at_a_time() -> None:
    console = SimConsole()
    backend = console.backend
    handle = backend.open_device(next(iter(backend.enumerate_devices())))
    backend.claim_interface(handle, 0)
    with pytest.raises(usb.core.USBError) as busy:
        backend.claim_interface(handle, 0)
    assert busy.value.errno == errno.EBUSY
    backend.release_interface(handle, 0)
    backend.claim_interface(handle, 0)
    assert console.claimed


def test_unplugged_it_disappears_and_what_was_held_is_lost() -> None:
    console = SimConsole()
    backend = console.backend
    device = next(iter(backend.enumerate_devices()))
    handle = backend.open_device(device)
    backend.claim_interface(handle, 0)
    console.press("insurance_closed")
    console.unplug()
    assert console.unplugs == 1 and not console.claimed
    assert list(backend.enumerate_devices()) == []
    assert _reports(console) == [None]  # the pending report is gone; a waiting reader is woken
    with pytest.raises(usb.core.USBError) as gone:
        backend.open_device(device)
    assert gone.value.errno == errno.ENODEV
    with pytest.raises(usb.core.USBError) as gone:
        backend.intr_read(handle, 0x81, 0, bytearray(8), 10)
    assert gone.value.errno == errno.ENODEV
    console.plug()
    assert list(backend.enumerate_devices()) == [device]
    console.press(1)
    assert _reports(console) == [bytes((0x01, 0, 0b1, 2, 0, 0, 0, 0))]  # nothing held from before the pull
