"""``tablectl report`` reads a journal as a stream (controller/analytics/shift.py): the same figures and signals as
the whole list gave, in memory bounded by a shoe, not by the shift (issue 28: 319 MB for an hour's journal)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Iterator
from typing import Any

from controller.analytics import advantage
from controller.analytics.hold import figures, totals_after
from controller.analytics.shift import read_shift
from controller.profiles import load_rules
from controller.records import rounds
from controller.sim.dealer import SimulatedDealer, public_records

RULES = load_rules("house-h17")


def _records(n_rounds: int, seed: int = 5) -> Iterator[dict[str, Any]]:
    """A simulated table's public records up to its ``n_rounds``-th settlement, a second apart."""
    settled = 0
    for i, body in enumerate(public_records(SimulatedDealer(RULES, seed=seed, table_id="t01"))):
        body["ts"] = float(i)
        yield body
        if body["type"] == "round_settled":
            settled += 1
            if settled == n_rounds:
                return


def test_the_stream_gives_the_figures_and_signals_of_the_whole_list() -> None:
    records = list(_records(300))
    shift = read_shift(iter(records), RULES, detail=True)
    assert shift.figures == figures(rounds(records), RULES)
    signals = advantage.journal_signals(records, RULES)
    assert shift.signals == signals and shift.spot_shoes == len(signals) > 20
    assert shift.flagged == [s for s in signals if s.flagged]
    assert shift.shoes == len({s.shoe for s in signals})


def test_a_shift_keeps_the_rounds_started_within_and_judges_only_their_bets() -> None:
    records = list(_records(200))
    settles = [r["ts"] for r in records if r["type"] == "round_settled"]
    since, until = settles[59], settles[139]  # rounds 61 to 140 start after these
    shift = read_shift(iter(records), RULES, since=since, until=until, detail=True)
    chosen = [r for r in rounds(records) if since <= r["started"] < until]
    before = [r for r in rounds(records) if r["started"] < since]
    assert shift.figures == figures(chosen, RULES, baseline=totals_after(before[-1]))
    keep = [r["round"] for r in chosen]
    whole = advantage.journal_signals(records, RULES, keep=keep)
    assert shift.signals == whole, "the shoes after the one `until` fell in hold none of the shift's bets"


def _peak(n_rounds: int) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        read_shift(_records(n_rounds), RULES)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_bounded_by_a_shoe_not_the_shift() -> None:
    advantage._basic(RULES)  # the basic strategy, worked out once per process, is no part of the shift
    _peak(20)  # and what a first call sets up once
    small, large = _peak(150), _peak(600)  # the whole list of records and rounds: 5.3 MB, then 19 MB
    assert large < 1.5 * small, (small, large)
