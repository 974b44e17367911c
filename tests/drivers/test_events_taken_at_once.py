"""Device events handed to the table as their frames are read (:meth:`DeviceGroup.deliver`), ACK first.

The table service takes a card's input in the driver's read callback, no loop turn later (issue #40: the card's
path). What that must not change: the frame's ACK still leaves before the input is taken (taking it commits to
disk: a shoe waiting on its ACK would retransmit), every event reaches the taker once and in order, an event a
device sends while the taker runs waits for it to return, and a group given back to its queue queues again.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from drivers import ShoeConfig, ShoeDriver
from drivers.codec import Frame, FrameDecoder
from drivers.events import CardRead, DeviceEvent
from drivers.group import DeviceGroup
from drivers.link import ACK, FIRST_DATA_TYPE
from simulators import SimShoe
from tests.drivers.emitter import Emitter


def _frames(written: list[bytes], *, kinds: range) -> list[int]:
    """The seqs of the frames of ``kinds`` in the bytes ``written``."""
    decoder = FrameDecoder()
    decoder.receive_data(b"".join(written))
    seqs = []
    while (frame := decoder.next_frame()) is not None:
        if isinstance(frame, Frame) and frame.mtype in kinds:
            seqs.append(frame.seq)
    return seqs


async def test_a_card_frames_ack_is_on_the_line_before_its_card_is_taken(link_dir: Path) -> None:
    async with SimShoe(stacked=["AS", "TD"], link=str(link_dir / "shoe")) as sim, \
            ShoeDriver(ShoeConfig(port=sim.port)) as shoe:
        await shoe.wait_ready(2)
        assert shoe._proto is not None and shoe._proto.transport is not None
        transport = shoe._proto.transport
        acked: list[bytes] = []  # what the driver wrote to the shoe
        dealt: list[bytes] = []  # what the shoe wrote to the driver
        write, sim_write = transport.write, sim._pty.write

        def tap(data: bytes | bytearray | memoryview) -> None:
            acked.append(bytes(data))
            write(data)

        def sim_tap(data: bytes) -> None:
            dealt.append(bytes(data))
            sim_write(data)

        transport.write = tap  # type: ignore[method-assign]
        sim._pty.write = sim_tap  # type: ignore[method-assign]
        missing_when_taken: list[set[int]] = []
        taken = asyncio.Event()

        def take(event: DeviceEvent) -> None:
            if isinstance(event, CardRead):  # the shoe's data frames since the tap are its cards, in order
                card_frame = _frames(dealt, kinds=range(FIRST_DATA_TYPE, 256))[len(missing_when_taken)]
                missing_when_taken.append({card_frame} - set(_frames(acked, kinds=range(ACK, ACK + 1))))
                if len(missing_when_taken) == 2:
                    taken.set()

        shoe.listen(take)
        sim.deal()
        sim.deal()
        await asyncio.wait_for(taken.wait(), 3)
        assert missing_when_taken == [set(), set()]  # each card's frame acknowledged before the card was taken


async def test_a_taker_gets_what_was_queued_first_then_each_event_as_it_is_decoded() -> None:
    a, b = Emitter(), Emitter()
    group = DeviceGroup(a=a, b=b)
    async with group:
        a.emit(CardRead("AS"))  # queued: nobody takes yet
        taken: list[tuple[str, str]] = []
        group.deliver(lambda name, event: taken.append((name, event.to_json()["card"])))
        assert taken == [("a", "AS")]
        b.emit(CardRead("KH"))  # no await in between: taken in the emitter's own call
        assert taken == [("a", "AS"), ("b", "KH")]
        group.deliver(None)
        a.emit(CardRead("2C"))
        assert taken == [("a", "AS"), ("b", "KH")]
        stream = group.events()
        assert await asyncio.wait_for(anext(stream), 1) == ("a", CardRead("2C"))  # back in the queue


async def test_an_event_sent_while_the_taker_runs_waits_for_it_to_return() -> None:
    a, b = Emitter(), Emitter()
    group = DeviceGroup(a=a, b=b)
    async with group:
        log: list[str] = []

        def take(name: str, event: DeviceEvent) -> None:
            card = event.to_json()["card"]
            log.append(f"begin {card}")
            if card == "AS":
                b.emit(CardRead("KH"))  # a device answering within the taker
            log.append(f"end {card}")

        group.deliver(take)
        a.emit(CardRead("AS"))
        assert log == ["begin AS", "end AS", "begin KH", "end KH"]


async def test_a_taker_that_lets_go_leaves_the_rest_in_the_queue_in_order() -> None:
    a = Emitter()
    group = DeviceGroup(a=a)
    async with group:
        taken: list[str] = []

        def take(name: str, event: DeviceEvent) -> None:
            card = event.to_json()["card"]
            taken.append(card)
            if card == "AS":
                a.emit(CardRead("KH"))  # arrives while taking: held for after
                a.emit(CardRead("QD"))
                group.deliver(None)  # the taker goes (a failure): what it has not taken is queued

        group.deliver(take)
        a.emit(CardRead("AS"))
        assert taken == ["AS"]
        stream = group.events()
        assert [await asyncio.wait_for(anext(stream), 1) for _ in range(2)] == [("a", CardRead("KH")),
                                                                                ("a", CardRead("QD"))]
