"""The simulated shuffler on its own: a shuffle's reports, a wrong deck set, the jam and the door.

docs/protocols.md (the shuffler): on START it reports SHUFFLE_STARTED, then SHUFFLE_COMPLETE with the
count and the per-rank composition, then DECK_SET_READY when the set is whole, COUNT_MISMATCH when not.
Payloads are built here with :mod:`struct` from the documented layout.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Sequence

import pytest

from cardnotation import DECK
from drivers import shuffler as proto
from simulators import SimShuffler
from tests.simulators.conftest import capture_sends


def _complete(deck_set: str, count: int, ranks: Sequence[int]) -> tuple[int, bytes]:
    return proto.COMPLETE, struct.pack(">cH13B", deck_set.encode(), count, *ranks)


async def _settle(sim: SimShuffler) -> None:
    """Let every shuffle the host started run to its end."""
    for _ in range(20):
        await asyncio.sleep(0)
        if sim._tasks:
            await asyncio.gather(*list(sim._tasks))


async def test_a_shuffle_reports_started_complete_with_its_composition_and_ready() -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim._on_message(proto.START, b"B\x06")
    await _settle(sim)
    assert sent == [(proto.STARTED, b"B"), _complete("B", 312, [24] * 13), (proto.READY, b"B")]
    assert sim.shuffles == 1


async def test_a_set_started_for_fewer_decks_is_counted_against_them() -> None:
    sim = SimShuffler(decks=2, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim._on_message(proto.START, b"A\x02")
    await _settle(sim)
    assert sent[1:] == [_complete("A", 104, [8] * 13), (proto.READY, b"A")]


async def test_the_same_seed_shuffles_the_same_order() -> None:
    a, b = SimShuffler(seed=4, shuffle_time=0.0), SimShuffler(seed=4, shuffle_time=0.0)
    for sim in (a, b):
        capture_sends(sim)
        sim._on_message(proto.START, b"A\x06")
        await _settle(sim)
    assert a.sets["A"] == b.sets["A"] != list(DECK) * 6


@pytest.mark.parametrize(
    ("cards", "count", "ranks"),
    [
        ([*DECK * 6, "AS"], 313, [25] + [24] * 12),  # an extra ace
        ((list(DECK) * 6)[:-1], 311, [24] * 12 + [23]),  # a king short
        # the right count, the wrong cards: a king swapped for an ace
        ([*(list(DECK) * 6)[:-1], "AC"], 312, [25] + [24] * 11 + [23]),
    ],
    ids=["one-card-too-many", "one-card-short", "right-count-wrong-composition"],
)
async def test_a_wrong_deck_set_is_counted_and_reported_as_a_mismatch(
    cards: list[str], count: int, ranks: list[int]
) -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sim.load("A", cards)
    sent = capture_sends(sim)
    sim._on_message(proto.START, b"A\x06")
    await _settle(sim)
    assert sent == [(proto.STARTED, b"A"), _complete("A", count, ranks),
                    (proto.MISMATCH, struct.pack(">cHH", b"A", 312, count))]


async def test_a_jam_stops_the_shuffle_until_the_host_clears_it_for_that_set() -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim.jam()
    sim._on_message(proto.START, b"A\x06")
    await _settle(sim)
    assert sent == [(proto.STARTED, b"A"), (proto.JAM, b"A\x00")]
    assert sim.jammed == "A" and sim.shuffles == 0
    sim._on_message(proto.CLEAR_JAM, b"B")  # not the jammed set: nothing happens
    await _settle(sim)
    assert len(sent) == 2 and sim.jammed == "A"
    sim._on_message(proto.CLEAR_JAM, b"A")
    await _settle(sim)
    # cleared, then the same shuffle finishes (no second SHUFFLE_STARTED)
    assert sent[2:] == [(proto.JAM, b"A\x01"), _complete("A", 312, [24] * 13), (proto.READY, b"A")]
    assert sim.jammed is None and sim.shuffles == 1


async def test_a_technician_clears_a_jam_at_the_machine() -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim.jam()
    sim._on_message(proto.START, b"B\x06")
    await _settle(sim)
    sim.clear_jam()
    await _settle(sim)
    assert [m for m, _ in sent] == [proto.STARTED, proto.JAM, proto.JAM, proto.COMPLETE, proto.READY]
    sent.clear()
    sim.clear_jam()  # nothing jammed: nothing to report
    await _settle(sim)
    assert sent == []


async def test_only_the_next_shuffle_jams() -> None:
    sim = SimShuffler(decks=1, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim.jam()
    sim._on_message(proto.START, b"A\x01")
    await _settle(sim)
    sim._on_message(proto.RESET, b"")  # a reset forgets the jammed set
    assert sim.jammed is None
    sent.clear()
    sim._on_message(proto.START, b"B\x01")
    await _settle(sim)
    assert [m for m, _ in sent] == [proto.STARTED, proto.COMPLETE, proto.READY]


async def test_no_shuffle_starts_while_the_door_is_open() -> None:
    sim = SimShuffler(decks=6, shuffle_time=0.0)
    sent = capture_sends(sim)
    sim.open_door()
    sim._on_message(proto.START, b"A\x06")
    await _settle(sim)
    assert sent == [(proto.DOOR, b"\x01"), (proto.DOOR, b"\x01")]  # opened; START answered with the door
    assert sim.shuffles == 0
    sim.close_door()
    sim._on_message(proto.START, b"A\x06")
    await _settle(sim)
    assert [m for m, _ in sent[2:]] == [proto.DOOR, proto.STARTED, proto.COMPLETE, proto.READY]
    assert sent[2] == (proto.DOOR, b"\x00")


async def test_a_start_for_a_set_it_does_not_have_is_ignored() -> None:
    sim = SimShuffler(shuffle_time=0.0)
    sent = capture_sends(sim)
    sim._on_message(proto.START, b"C\x06")
    sim._on_message(proto.START, b"A")  # too short: no deck count
    await _settle(sim)
    assert sent == [] and not sim._tasks
