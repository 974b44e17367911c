"""The refusal of a journal behind its anchor in inputs only (issue #35: "the journal ends at seq 6114 but its
anchor holds seq 6114 (input 3518)" read as no difference at all): it says the inputs differ, not the seq."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.journal import Journal, JournalError
from controller.journal.witnesses import Testimony as Said
from controller.journal.witnesses import judge


def test_a_journal_behind_in_inputs_only_is_refused_naming_the_inputs(tmp_path: Path) -> None:
    with Journal(tmp_path / "t01.journal", key=b"k" * 32) as journal:
        journal.commit_event({"type": "tick", "now": 1.0}, [{"type": "x", "ts": 1.0}], ts=1.0)
        journal.commit_event({"type": "tick", "now": 2.0}, [], ts=2.0)
        seq, inputs = journal.last_seq, journal.last_input_id
        ahead = Said("its anchor", "ahead", seq, f"input {inputs + 3}")
        with pytest.raises(JournalError) as info:
            judge(journal, [ahead], adopt_hint="adopt")
    line = str(info.value)
    assert f"ends at input {inputs} where its anchor holds input {inputs + 3}" in line, line
    assert f"ends at seq {seq} but its anchor holds seq {seq}" not in line


def test_a_journal_behind_in_seq_still_says_both_seqs(tmp_path: Path) -> None:
    with Journal(tmp_path / "t01.journal", key=b"k" * 32) as journal:
        journal.commit_event({"type": "tick", "now": 1.0}, [{"type": "x", "ts": 1.0}], ts=1.0)
        with pytest.raises(JournalError, match=r"the journal ends at seq 1 but its anchor holds seq 9 \(input 4\)"):
            judge(journal, [Said("its anchor", "ahead", 9, "input 4")], adopt_hint="adopt")
