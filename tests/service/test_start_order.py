"""What a table's start does before its devices open: nothing that outlives a refused start.

A table whose port is wrong (a cable, a typo in the config) must exit at once with its one line; work started
before the devices opened (the theoretical figures: a five-second pause, then a child process) kept
``tablectl run`` from exiting until it finished, 30 to 70 s on a loaded machine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.service.test_anchor_witnesses import _run_config, _start


def test_a_start_refused_by_its_devices_starts_no_theory_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.service import analytics_feed
    from drivers.errors import PortNotFound

    asked: list[object] = []

    def recording_theory_for(*args: object, **kw: object) -> object:
        asked.append(args)
        raise AssertionError("theory work started before the devices opened")

    monkeypatch.setattr(analytics_feed, "theory_for", recording_theory_for)
    with pytest.raises(PortNotFound):
        asyncio.run(_start(_run_config(tmp_path), new_journal=True))
    assert asked == []
