"""The devices' one reconnect backoff (drivers/backoff.py): doubling from the first delay to the cap, reset by a
success."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from drivers.backoff import Backoff


def test_the_delays_double_up_to_the_cap_and_a_success_starts_again() -> None:
    b = Backoff(0.05, 0.5)
    assert [b.next() for _ in range(6)] == [0.05, 0.1, 0.2, 0.4, 0.5, 0.5]
    b.reset()
    assert b.next() == 0.05


@given(first=st.floats(0.001, 10), cap=st.floats(0.001, 100), tries=st.integers(1, 60))
def test_a_delay_never_exceeds_the_cap_nor_falls_below_the_first(first: float, cap: float, tries: int) -> None:
    b = Backoff(first, cap)
    delays = [b.next() for _ in range(tries)]
    assert delays[0] == first
    assert all(d <= max(first, cap) for d in delays)
    assert all(d >= min(first, cap) for d in delays)
    assert delays == sorted(delays) or first > cap
