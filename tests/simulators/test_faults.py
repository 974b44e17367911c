"""FaultPipe: corrupted, dropped and duplicated bytes at the rates given, the same for the same seed.

The simulators' fault injection (and ``tablectl simulate --corrupt/--drop``) rests on it; DESIGN: faults
draw from their own generator, so a run with faults compares card by card with one without.
"""

from __future__ import annotations

import math

import pytest

from simulators import FaultPipe, SimChips, SimShoe

DATA = bytes(range(256)) * 400  # 102,400 bytes


def _within(count: int, n: int, rate: float) -> bool:
    """``count`` is within six standard deviations of ``n`` draws at ``rate``."""
    return abs(count - n * rate) <= 6 * math.sqrt(n * rate * (1 - rate))


@pytest.mark.parametrize(
    "rates", [{"corrupt": -0.01}, {"drop": 1.5}, {"duplicate": -1.0}], ids=["corrupt", "drop", "duplicate"]
)
def test_a_rate_outside_0_to_1_is_refused(rates: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(rates))):
        FaultPipe(**rates)  # type: ignore[arg-type]


def test_a_pipe_without_faults_passes_the_bytes_through() -> None:
    pipe = FaultPipe(seed=1)
    assert not pipe.active
    assert pipe.apply(DATA) is DATA
    assert (pipe.corrupted, pipe.dropped, pipe.duplicated) == (0, 0, 0)


def test_corruption_changes_bytes_at_its_rate_and_never_to_the_same_value() -> None:
    pipe = FaultPipe(corrupt=0.05, seed=7)
    out = pipe.apply(DATA)
    assert len(out) == len(DATA)
    changed = sum(a != b for a, b in zip(DATA, out, strict=True))
    assert changed == pipe.corrupted  # a corrupted byte is always a different byte
    assert _within(changed, len(DATA), 0.05), changed
    assert pipe.dropped == pipe.duplicated == 0


def test_every_byte_corrupted_at_rate_1() -> None:
    out = FaultPipe(corrupt=1.0, seed=3).apply(DATA)
    assert len(out) == len(DATA) and all(a != b for a, b in zip(DATA, out, strict=True))


def test_dropping_loses_bytes_at_its_rate_and_keeps_the_rest_in_order() -> None:
    pipe = FaultPipe(drop=0.1, seed=11)
    data = bytes(i % 251 for i in range(50_000))
    out = pipe.apply(data)
    assert len(out) == len(data) - pipe.dropped
    assert _within(pipe.dropped, len(data), 0.1), pipe.dropped
    it = iter(data)
    assert all(byte in it for byte in out)  # a subsequence: nothing reordered, nothing added
    assert FaultPipe(drop=1.0, seed=1).apply(DATA) == b""


def test_corruption_and_loss_together() -> None:
    pipe = FaultPipe(corrupt=0.02, drop=0.03, seed=5)
    out = pipe.apply(DATA)
    assert len(out) == len(DATA) - pipe.dropped
    assert _within(pipe.dropped, len(DATA), 0.03) and _within(pipe.corrupted, len(DATA), 0.02)


def test_a_duplicated_chunk_is_written_whole_twice_at_its_rate() -> None:
    pipe = FaultPipe(duplicate=0.25, seed=2)
    chunks = [bytes((i % 256, 0x7E, i // 256)) for i in range(4000)]
    outs = [pipe.apply(c) for c in chunks]
    assert all(out in (c, c + c) for c, out in zip(chunks, outs, strict=True))
    doubled = sum(out == c + c for c, out in zip(chunks, outs, strict=True))
    assert doubled == pipe.duplicated and _within(doubled, len(chunks), 0.25), doubled
    assert FaultPipe(duplicate=1.0, seed=1).apply(b"\x01\x02") == b"\x01\x02\x01\x02"


def test_the_same_seed_injects_the_same_faults_and_another_seed_others() -> None:
    def run(seed: int) -> list[bytes]:
        pipe = FaultPipe(corrupt=0.01, drop=0.01, duplicate=0.1, seed=seed)
        return [pipe.apply(DATA[i:i + 512]) for i in range(0, len(DATA), 512)]

    assert run(42) == run(42)
    assert run(42) != run(43)
    assert FaultPipe(seed=9).garbage(64) == FaultPipe(seed=9).garbage(64) != FaultPipe(seed=10).garbage(64)
    assert len(FaultPipe(seed=9).garbage(64)) == 64


def test_a_devices_two_directions_draw_from_their_own_seeds() -> None:
    sim = SimChips(corrupt=0.1, drop=0.05, fault_seed=20)
    twin = SimChips(corrupt=0.1, drop=0.05, fault_seed=20)
    assert sim.tx_faults.apply(DATA) == twin.tx_faults.apply(DATA)  # reproducible from the seed
    assert sim.rx_faults.apply(DATA) != FaultPipe(corrupt=0.1, drop=0.05, seed=20).apply(DATA)  # not the tx stream


def test_faults_never_change_what_a_seeded_shoe_deals() -> None:
    faulty = SimShoe(seed=3, decks=1, corrupt=0.5, drop=0.5, fault_seed=1)
    faulty.tx_faults.apply(DATA)  # the fault generator used a lot
    faulty.rx_faults.apply(DATA)
    assert faulty.cards == SimShoe(seed=3, decks=1).cards
