""":func:`controller.journal.positions.compare`, the one position judgement the broker's retained ``state`` and the
recorder's position share: each finding, in the order it is looked for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.journal.positions import Held, compare

JID = "a" * 32


@dataclass
class End:
    """A journal's end as the witnesses read it (:class:`controller.journal.witnesses.JournalEnd`)."""

    path: Path
    journal_id: str
    last_seq: int
    last_input_id: int
    hashes: dict[int, bytes]

    def record_hash(self, seq: int) -> bytes | None:
        return self.hashes.get(seq)


END = End(Path("t01.journal"), JID, 10, 7, {4: b"\x01" * 32, 10: b"\x02" * 32})


def test_another_journal_is_found_first_even_past_the_end() -> None:
    assert compare(END, Held(50, "b" * 32, 50, "00")) == ("another_journal", None)


def test_a_position_past_the_end_is_ahead_and_one_naming_no_journal_is_found_next() -> None:
    assert compare(END, Held(11, JID, None, None)) == ("ahead", None)
    assert compare(END, Held(11, None, None, None)) == ("ahead", None)
    assert compare(END, Held(9, None, 9, "00")) == ("no_journal", None)


def test_the_head_is_compared_with_the_journals_own_hash_of_its_record() -> None:
    assert compare(END, Held(10, JID, None, None)) == ("no_head", None)
    assert compare(END, Held(10, JID, 10, None)) == ("no_head", None)
    assert compare(END, Held(10, JID, 3, "01" * 32)) == ("head_not_held", None)
    assert compare(END, Held(10, JID, 4, "01" * 32)) == ("same", b"\x01" * 32)
    assert compare(END, Held(10, JID, 10, "01" * 32)) == ("another_head", b"\x02" * 32)
