"""The one judgement of a position a witness holds outside the journal (the broker's retained ``state``, the
recorder's retained position) against the journal's end; pure, no I/O.

Why one: the broker's witness (:mod:`controller.mqtt.witness`) and the recorder's
(:mod:`controller.mqtt.recorder_witness`) hold the same kind of thing, a ``seq``, the id of the journal it came
from and a chain ``head`` at some ``seq``, and must judge it in the same order: another journal first (named so
even at a later ``seq``), then a position past the journal's end (rolled back), then a position naming no journal,
then the head against the journal's own stored hash of its record there. Each witness words the finding its own
way (:class:`controller.journal.witnesses.Testimony`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from controller.journal.witnesses import JournalEnd

__all__ = ["Finding", "Held", "compare"]

#: what :func:`compare` found, in the order it looks
Finding = Literal["another_journal", "ahead", "no_journal", "no_head", "head_not_held", "another_head", "same"]


@dataclass(frozen=True, slots=True)
class Held:
    """A position held of a table's journal: the ``seq`` it reached, the journal it names (None: none), and the
    chain ``head`` it holds at ``head_seq`` (both None: none)."""

    seq: int
    journal_id: str | None
    head_seq: int | None
    head: str | None


def compare(journal: JournalEnd, held: Held) -> tuple[Finding, bytes | None]:
    """What ``held`` says of ``journal``, and the journal's own hash of its record at ``held.head_seq`` when it
    was compared (else None)."""
    if held.journal_id is not None and held.journal_id != journal.journal_id:
        return "another_journal", None
    if held.seq > journal.last_seq:
        return "ahead", None
    if held.journal_id is None:
        return "no_journal", None
    if held.head_seq is None or held.head is None:
        return "no_head", None
    ours = journal.record_hash(held.head_seq)
    if ours is None:
        return "head_not_held", None
    return ("another_head" if ours.hex() != held.head else "same"), ours
