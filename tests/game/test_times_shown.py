"""Times as the table shows them (``state.deck_set.opened_at``, ``table_opened.at``): UTC to the second.

Every ``state`` shows when the deck set was opened; the text is kept for the last instants asked (issue #40:
formatting a date cost about 20 us on a card's path). Whatever was asked before, each answer is its own.
"""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from controller.game.pit import iso

INSTANTS = st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False)  # 1970 to 2100


@given(st.lists(INSTANTS, min_size=1, max_size=40))
def test_each_instant_is_shown_as_utc_to_the_second_whatever_was_asked_before(instants: list[float]) -> None:
    for ts in instants + instants[::-1]:
        assert iso(ts) == datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_no_instant_is_shown_as_none() -> None:
    assert iso(None) is None
    assert iso(1_764_057_600.0) == "2025-11-25T08:00:00Z"
