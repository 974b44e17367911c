"""The link layer on an in-memory null modem with a fault-injecting pipe and a simulated clock.

No ports, no sleeps: the clock is a number the test advances, which is what
sans-I/O buys. The pty tests (test_serial_drivers.py) run the same link for real.
"""

from __future__ import annotations

import random

import pytest

from drivers import shoe
from drivers.codec import Frame, encode_frame
from drivers.link import (
    HELLO,
    PROTOCOL_VERSION,
    ROLE_HOST,
    Link,
    LinkDown,
    LinkEvent,
    LinkFault,
    LinkTiming,
    LinkUp,
    Message,
)
from simulators.faults import FaultPipe

LATENCY = 0.0002  # seconds a byte burst takes through the "cable"


class NullModem:
    """Host and device links joined by two fault pipes, driven by a simulated clock."""

    def __init__(self, *, corrupt: float = 0.0, drop: float = 0.0, seed: int = 1,
                 device_version: int = PROTOCOL_VERSION) -> None:
        self.now = 0.0
        self.host = Link(role=ROLE_HOST, initiator=True, session=1, now=0.0, peer_role=shoe.ROLE)
        self.device = Link(role=shoe.ROLE, initiator=False, session=2, now=0.0, peer_role=ROLE_HOST,
                           version=device_version)
        self.to_device = FaultPipe(corrupt=corrupt, drop=drop, seed=seed)
        self.to_host = FaultPipe(corrupt=corrupt, drop=drop, seed=seed + 1)
        self.cable = True
        self.host_events: list[LinkEvent] = []
        self.host_messages = 0
        self.device_events: list[LinkEvent] = []

    def step(self) -> None:
        """Move bytes both ways, advance the clock to the next burst or deadline, run timers."""
        moved = False
        for src, dst, pipe in ((self.host, self.device, self.to_device), (self.device, self.host, self.to_host)):
            data = src.data_to_send()
            if data and self.cable:
                dst.receive_data(pipe.apply(data), self.now + LATENCY)
                moved = True
        for link, sink in ((self.host, self.host_events), (self.device, self.device_events)):
            while (ev := link.next_event()) is not None:
                sink.append(ev)
                self.host_messages += link is self.host and isinstance(ev, Message)
        self.now += LATENCY
        if not moved:
            self.now = max(self.now, min(self.host.next_deadline(), self.device.next_deadline()))
        self.host.poll(self.now)
        self.device.poll(self.now)

    def run_until(self, cond: object, limit: float = 60.0) -> None:
        start = self.now
        while not cond():  # type: ignore[operator]
            self.step()
            assert self.now - start < limit, "condition not reached in simulated time"


def delivered(events: list[LinkEvent]) -> list[bytes]:
    return [e.payload for e in events if isinstance(e, Message)]


def test_hello_brings_both_ends_up() -> None:
    m = NullModem()
    m.run_until(lambda: m.host.up and m.device.up)
    assert m.now < 0.01
    up = [e for e in m.host_events if isinstance(e, LinkUp)]
    assert up and up[0].version == PROTOCOL_VERSION == 3 and up[0].role == shoe.ROLE


def _deal(m: NullModem, cards: list[str]) -> None:
    for card in cards:
        m.device.send(shoe.CARD, card.encode())
    want = m.host_messages + len(cards)
    m.run_until(lambda: m.host_messages >= want and m.device.pending == 0, limit=3600)


def _cards(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice("A23456789TJQK") + rng.choice("SHDC") for _ in range(n)]


@pytest.mark.parametrize("n", [100_000])
def test_one_in_1000_bytes_corrupted_every_card_once_in_order(n: int) -> None:
    m = NullModem(corrupt=0.001, seed=42)
    m.run_until(lambda: m.host.up)
    cards = _cards(n, 7)
    _deal(m, cards)
    assert [p.decode() for p in delivered(m.host_events)] == cards  # none lost, none extra, none altered
    assert m.to_host.corrupted > n * 0.005  # faults really happened
    assert m.host.stats.bad_segments > 0 and m.device.stats.retransmits > 0


def test_lost_and_corrupted_bytes_both_ways() -> None:
    m = NullModem(corrupt=0.005, drop=0.005, seed=3)
    m.run_until(lambda: m.host.up)
    cards = _cards(3000, 8)
    _deal(m, cards)
    assert [p.decode() for p in delivered(m.host_events)] == cards


def test_dead_link_is_noticed_within_two_seconds_and_nothing_is_lost() -> None:
    m = NullModem()
    m.run_until(lambda: m.host.up)
    m.cable = False
    pulled = m.now
    m.device.send(shoe.CARD, b"7H")
    m.run_until(lambda: any(isinstance(e, LinkDown) for e in m.host_events))
    assert m.now - pulled <= 2.0
    assert any(isinstance(e, LinkDown) for e in m.device_events)
    m.cable = True
    m.run_until(lambda: delivered(m.host_events) == [b"7H"])


def test_bounded_retransmission_gives_up_then_resends_when_back() -> None:
    m = NullModem()
    m.run_until(lambda: m.host.up)
    m.to_device.drop = 1.0  # host's ACKs never arrive
    m.device.send(shoe.CARD, b"2C")
    m.run_until(lambda: any(isinstance(e, LinkDown) for e in m.device_events))
    down = next(e for e in m.device_events if isinstance(e, LinkDown))
    assert "no ACK" in down.reason or "nothing heard" in down.reason
    assert m.device.stats.retransmits <= LinkTiming().max_retries
    m.to_device.drop = 0.0
    m.run_until(lambda: m.device.pending == 0 and m.device.up)
    assert delivered(m.host_events) == [b"2C"]  # duplicates were dropped


def test_version_mismatch_is_a_fault_not_up() -> None:
    m = NullModem(device_version=1)  # a device of before the numbered shoe reads
    for _ in range(50):
        m.step()
    assert not m.host.up
    faults = [e for e in m.host_events if isinstance(e, LinkFault)]
    assert faults and "version 1" in faults[0].reason


@pytest.mark.parametrize("role", [ord("F"), ord("C")])
def test_the_shuffler_and_chip_bus_still_speak_version_2(role: int) -> None:
    """The replay tag changed the shoe's frames only: a shuffler or chip bus built to version 2 still links
    up (no firmware update for a device whose protocol did not change)."""
    host = Link(role=ROLE_HOST, initiator=True, session=1, now=0.0, peer_role=role)
    device = Link(role=role, initiator=False, session=2, now=0.0, peer_role=ROLE_HOST, version=2)
    assert host.version == 2
    now = 0.0
    for _ in range(20):
        for src, dst in ((host, device), (device, host)):
            if data := src.data_to_send():
                dst.receive_data(data, now)
        host.poll(now)
        device.poll(now)
        now += 0.01
    assert host.up and device.up
    assert not [e for e in iter(host.next_event, None) if isinstance(e, LinkFault)]


def test_a_shoe_of_before_the_replay_tag_is_refused_at_link_start() -> None:
    """Version 2's REPLAY and REPLAY_END had no tag: a shoe built to it would misread the host's REPLAY."""
    m = NullModem(device_version=2)
    for _ in range(50):
        m.step()
    assert not m.host.up
    faults = [e for e in m.host_events if isinstance(e, LinkFault)]
    assert faults and "version 2" in faults[0].reason and "3" in faults[0].reason


def test_wrong_device_kind_is_a_fault() -> None:
    host = Link(role=ROLE_HOST, initiator=True, session=1, now=0.0, peer_role=shoe.ROLE)
    host.receive_data(encode_frame(Frame(HELLO, 0, bytes((PROTOCOL_VERSION, ord("F"), 0, 0, 0, 9)))), 0.0)
    ev = host.next_event()
    assert isinstance(ev, LinkFault) and "'F'" in ev.reason


def test_new_device_session_resets_duplicate_detection() -> None:
    m = NullModem()
    m.run_until(lambda: m.host.up)
    _deal(m, ["AS"])
    # The device restarts (power cycle): new session, its seq starts at 0 again.
    m.device = Link(role=shoe.ROLE, initiator=False, session=99, now=m.now, peer_role=ROLE_HOST)
    m.host.restart(m.now)
    m.run_until(lambda: m.device.up)
    m.device.send(shoe.CARD, b"KD")  # seq 0 again: must not be taken for a duplicate
    m.run_until(lambda: len(delivered(m.host_events)) == 2)
    assert delivered(m.host_events) == [b"AS", b"KD"]


def test_reserved_types_cannot_be_sent_as_data() -> None:
    link = Link(role=ROLE_HOST, initiator=True, session=1, now=0.0)
    with pytest.raises(ValueError):
        link.send(HELLO, b"")
