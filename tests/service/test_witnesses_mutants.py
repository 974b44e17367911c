""":func:`controller.journal.witnesses.judge` at its edges (issue 39): no testimony at all, only silent ones, a
refusal that comes after a voucher, and what the refusals and the summary say. Pure: testimonies made by hand,
judged against a real journal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.journal import Journal, JournalError
from controller.journal.witnesses import NoWitness, judge, summary
from controller.journal.witnesses import Testimony as Said  # not "Test...": pytest would collect it

HINT = "tablectl journal adopt --state-dir S"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "t01.journal") as j:
        j.commit_event({"type": "bet", "spot": 1, "amount": 500}, [{"type": "bet"}, {"type": "x"}])
        yield j


def test_a_journal_judged_with_no_testimony_is_not_vouched_for(journal: Journal) -> None:
    with pytest.raises(NoWitness) as e:
        judge(journal, [], adopt_hint=HINT)
    assert str(e.value) == (f"journal {journal.path}: no witness vouches for it (no witness asked): it goes online "
                            f"only when a person adopts it: {HINT}")


def test_only_silent_witnesses_are_no_voucher_and_each_says_why(journal: Journal) -> None:
    said = [Said("the anchor", "silent", None, "no anchor"), Said("the broker", "silent", 2, "names none")]
    with pytest.raises(NoWitness) as e:
        judge(journal, said, adopt_hint=HINT)
    assert "(the anchor: no anchor; the broker: names none)" in str(e.value) and str(e.value).endswith(HINT)


def test_one_voucher_among_silent_ones_is_enough_and_is_what_judge_returns(journal: Journal) -> None:
    vouch = Said("the anchor", "vouches", 2)
    said = [Said("the broker", "silent", None, "unreachable"), vouch]
    assert judge(journal, said, adopt_hint=HINT) == [vouch]
    assert summary(said) == "the anchor at seq 2"
    assert summary([vouch, Said("the broker", "vouches", 1)]) == "the anchor at seq 2, the broker at seq 1"
    assert summary(said[:1]) == summary([]) == "none"


@pytest.mark.parametrize("verdict", ["ahead", "differs"])
def test_a_refusal_wins_over_a_voucher_before_or_after_it(journal: Journal, verdict: str) -> None:
    bad = Said("the broker", verdict, 5, "it is of journal ff")  # type: ignore[arg-type]
    vouch = Said("the anchor", "vouches", 2)
    for said in ([vouch, bad], [bad, vouch]):
        with pytest.raises(JournalError) as e:
            judge(journal, said, adopt_hint=HINT)
        assert not isinstance(e.value, NoWitness)
    message = str(e.value)
    if verdict == "ahead":
        assert message == (f"journal {journal.path}: behind the broker: the journal ends at seq 2 but the broker "
                           "holds seq 5 (it is of journal ff): rolled back, truncated, emptied or put back from an "
                           "older copy (docs/journal.md)")
    else:
        assert message == f"journal {journal.path}: refused by the broker: it is of journal ff (docs/journal.md)"


def test_a_witness_ahead_without_detail_names_only_its_seq(journal: Journal) -> None:
    with pytest.raises(JournalError) as e:
        judge(journal, [Said("the broker", "ahead", 3)], adopt_hint=HINT)
    assert "but the broker holds seq 3: rolled back" in str(e.value)


def test_a_testimony_as_json_is_each_field_by_name() -> None:
    said = Said("the anchor", "ahead", 7, "journal ff")
    assert said.as_json() == {"witness": "the anchor", "verdict": "ahead", "seq": 7, "detail": "journal ff"}
    assert Said("the broker", "silent").as_json() == {"witness": "the broker", "verdict": "silent", "seq": None,
                                                      "detail": ""}


@pytest.mark.parametrize("detail, holds", [("", "a later input"), ("input 4", "input 4")])
def test_a_witness_ahead_in_inputs_only_is_named_with_what_it_holds(journal: Journal, detail: str,
                                                                   holds: str) -> None:
    """The same last record, a later input (inputs that published nothing): the line says so, and what the witness
    holds when it says (else "a later input")."""
    with pytest.raises(JournalError) as e:
        judge(journal, [Said("the broker", "ahead", journal.last_seq, detail)], adopt_hint=HINT)
    assert str(e.value) == (f"journal {journal.path}: behind the broker: its last record seq 2 is the broker's too, "
                            f"but it ends at input 1 where the broker holds {holds}: rolled back, truncated, emptied "
                            "or put back from an older copy (docs/journal.md)")
