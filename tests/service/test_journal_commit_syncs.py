"""A journal commit waits on the disk once: SQLite's own sync of the WAL, nothing of ours (issue #40).

The card's path waits on the journal's commit; ``benchmarks/journal_commit.py --syncs`` counts one
``fdatasync`` per commit under ``strace`` (SQLite's, ``synchronous=FULL``). The anchor is rewritten at every
commit that adds rows, in place and not synced (docs/journal.md, "When it is written"): a sync of it would
double the commit's wait on the disk. This pins that the Python side of a commit (chain, outbox, anchor) issues
no sync of its own, while the anchor still records each commit before it returns.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from controller.journal import Journal
from controller.journal.anchor import Anchor

KEY = b"k" * 32


def _counted(name: str, real: Callable[..., Any], calls: list[str]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        calls.append(name)
        return real(*args)
    return call


def test_a_commit_issues_no_sync_of_its_own_and_its_anchor_is_current(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with Journal(tmp_path / "t01.journal", key=KEY) as journal:
        anchor = Anchor(tmp_path / "anchors", "t01", KEY)
        journal.anchor = anchor
        anchor.write(journal.anchor_point())
        syncs: list[str] = []
        for name in ("fsync", "fdatasync", "sync"):
            monkeypatch.setattr(os, name, _counted(name, getattr(os, name), syncs))
        for i in range(5):
            input_id, seqs = journal.commit_event({"type": "card_drawn", "card": "TD"},
                                                  [{"type": "card", "spot": 3, "card": "TD"}] * 2, ts=1.0 + i)
            point = anchor.read()  # on disk now, before the next commit
            assert point is not None
            assert (point.inputs, point.seq) == (input_id, seqs[-1])
        assert syncs == []
