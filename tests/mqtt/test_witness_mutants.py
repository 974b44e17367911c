"""The broker's retained ``state`` as a witness, each verdict at its edge (issue 39): a state that names no journal
is silent (it cannot vouch for this one), a state at exactly the journal's end vouches, one seq beyond is ahead,
and another journal id at the same seq differs. Pure: :class:`RetainedStateWitness` asked about a real journal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.mqtt.witness import Retained, RetainedState, RetainedStateWitness, broker_witnesses
from controller.service.journal import Journal

URL = "mqtt://pit:secret@broker:1883"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    """A journal ending at seq 3."""
    with Journal(tmp_path / "t01.journal") as j:
        for n in range(3):
            j.commit_event({"type": "bet", "spot": 1, "amount": 500 + n}, [{"type": "bet", "n": n}])
        assert j.last_seq == 3
        yield j


def _verdict(journal: Journal, retained: RetainedState | str) -> tuple[str, int | None, str]:
    t = RetainedStateWitness("t01", URL, retained).testify(journal)
    return t.verdict, t.seq, t.detail


def test_a_state_that_names_no_journal_is_silent_not_a_voucher(journal: Journal) -> None:
    for seq in (1, 3):
        assert _verdict(journal, RetainedState(seq)) == ("silent", seq, f"its state (seq {seq}) names no journal")
    assert _verdict(journal, RetainedState(4))[0] == "ahead", "a later state is ahead, journal named or not"


def test_a_state_of_this_journal_vouches_up_to_exactly_its_end_and_is_ahead_one_beyond(journal: Journal) -> None:
    jid = journal.journal_id
    assert _verdict(journal, RetainedState(1, jid)) == ("vouches", 1, "")
    assert _verdict(journal, RetainedState(3, jid)) == ("vouches", 3, "")
    assert _verdict(journal, RetainedState(4, jid)) == ("ahead", 4, "")


def test_another_journal_at_the_same_seq_differs_naming_both(journal: Journal) -> None:
    other = "f" * 32
    verdict, seq, detail = _verdict(journal, RetainedState(3, other))
    assert (verdict, seq) == ("differs", 3)
    assert detail == (f"it is of journal {other} at seq 3, but this is journal {journal.journal_id} at seq 3 "
                      "(another journal in the table's place)")
    assert _verdict(journal, RetainedState(9, other))[0] == "differs", "another journal, even ahead, is not this one's"


def test_no_retained_state_is_silent_saying_why_and_the_name_hides_the_password(journal: Journal) -> None:
    t = RetainedStateWitness("t01", URL, "no retained state").testify(journal)
    assert (t.verdict, t.seq, t.detail) == ("silent", None, "no retained state")
    assert t.witness == "the broker's retained state of t01 (mqtt://pit:***@broker:1883)"


def test_a_brokers_answer_makes_both_witnesses_of_the_table(journal: Journal) -> None:
    state, position = RetainedState(2, journal.journal_id), "no recorder position"
    witnesses = broker_witnesses("t01", URL, Retained(state, position))
    said = [w.testify(journal) for w in witnesses]
    assert [(t.verdict, t.seq) for t in said] == [("vouches", 2), ("silent", None)]
    assert [t.witness for t in said] == ["the broker's retained state of t01 (mqtt://pit:***@broker:1883)",
                                         "the recorder's position of t01 (mqtt://pit:***@broker:1883)"]

