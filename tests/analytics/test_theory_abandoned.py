"""A process that ran tables ends without waiting for theory work (``abandon_theory_work``).

The interpreter's exit joins the theory worker thread; work under way then (a five-second pause, a child working
the figures out, the basic strategy warmed for the signals) held a demo stopped with Ctrl-C for over 60 s on a
loaded machine (the CI's ``test_demo_resume``: no exit within 60 s of SIGINT).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import CancelledError
from pathlib import Path

import pytest

from controller.analytics.live import THEORY_DELAY_S, TheoryAbandoned, abandon_theory_work, theory_for
from controller.profiles import load_rules


def _theory_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("analytics-theory")]


def test_abandoned_theory_work_ends_its_worker_at_once_and_new_work_starts_afresh(tmp_path: Path) -> None:
    rules = dataclasses.replace(load_rules("house-h17"), decks=5)  # rules no other test of this process asked for
    future = theory_for(rules, tmp_path)  # a cache dir: the work waits THEORY_DELAY_S, then runs a child
    time.sleep(0.2)
    asked = time.monotonic()
    abandon_theory_work()
    with pytest.raises((TheoryAbandoned, CancelledError)):
        future.result(timeout=THEORY_DELAY_S)
    for thread in _theory_threads():
        thread.join(timeout=THEORY_DELAY_S)
    assert not [t for t in _theory_threads() if t.is_alive()], "the worker still busy after it was abandoned"
    assert time.monotonic() - asked < THEORY_DELAY_S, "it waited out the pause instead of stopping"
    again = theory_for(rules, None)  # afterwards: a new worker, the work done
    assert again.result(timeout=120).edge > 0
    abandon_theory_work()
