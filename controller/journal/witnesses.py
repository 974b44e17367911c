"""The witnesses of a journal's end: who may say a journal is the one the table kept, and how far it went.

Why: a journal's chain proves its rows were written under the key, not that it is the table's whole
journal: a journal emptied, truncated, put back from an older copy, swapped for another table's or
for a new one still has a valid chain. Only something kept *outside* the journal can tell, so at every
start each witness is asked (DESIGN, "Journal integrity and game recall"; ``docs/journal.md``).

How: each witness answers with one :class:`Testimony`:

``vouches``
    it holds a position ``seq`` of *this* journal (same journal id, the same row there) at or before
    the journal's end;
``ahead``
    it holds a later position than the journal's end: the journal lost rows the witness saw;
``differs``
    it holds another journal (another id, or another row at its position), or a record that does not
    check (an anchor with a bad signature, unreadable): not this journal's witness at all;
``silent``
    it is not reachable or holds nothing for the table.

:func:`judge` refuses (:class:`JournalError`, one line naming the witness and both positions) a journal
any witness holds ahead of it or contradicts, and a journal no witness vouches for
(:class:`NoWitness`, naming how to adopt it on purpose). The witnesses are the anchor
(:class:`controller.journal.anchor.AnchorWitness`), the broker's retained ``state``
(:class:`controller.mqtt.witness.RetainedStateWitness`) and the central recorder's retained
``<prefix>/recorder/<table_id>`` position (:class:`controller.mqtt.recorder_witness.RecorderWitness`); the
last two judge what they hold by one rule (:mod:`controller.journal.positions`).

This module does no I/O: a witness's testimony is read first (a file, a broker), then judged here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from controller.journal.errors import JournalError
from controller.journal.writer import Journal

__all__ = ["JournalEnd", "NoWitness", "Testimony", "Verdict", "Witness", "judge", "summary"]

Verdict = Literal["vouches", "ahead", "differs", "silent"]


@dataclass(frozen=True, slots=True)
class Testimony:
    """One witness's answer about one journal: its verdict, the position it holds (None: none) and why."""

    witness: str
    verdict: Verdict
    seq: int | None = None
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"witness": self.witness, "verdict": self.verdict, "seq": self.seq, "detail": self.detail}


class JournalEnd(Protocol):
    """What a broker's witness compares: the journal's id, its end, and the chain hash of one of its records
    (a :class:`controller.journal.writer.Journal`, or its position at start: :mod:`controller.mqtt.late_witness`)."""

    @property
    def path(self) -> Path: ...

    @property
    def journal_id(self) -> str: ...

    @property
    def last_seq(self) -> int: ...

    @property
    def last_input_id(self) -> int: ...

    def record_hash(self, seq: int) -> bytes | None: ...


class Witness(Protocol):
    """Something outside the journal that answers for its end (the anchor, the broker, the recorder)."""

    @property
    def name(self) -> str: ...

    def testify(self, journal: Journal) -> Testimony: ...


class NoWitness(JournalError):
    """No witness vouches for a journal: it goes online only when a person adopts it (journaled)."""


def judge(journal: JournalEnd, testimonies: Sequence[Testimony], *, adopt_hint: str) -> list[Testimony]:
    """The testimonies that vouch for ``journal``; :class:`JournalError` (one line) if any witness holds it
    behind or contradicts it, :class:`NoWitness` (ending with ``adopt_hint``) if none vouches."""
    where = f"journal {journal.path}"
    for t in testimonies:
        if t.verdict == "ahead":
            if t.seq == journal.last_seq:  # ahead in inputs only (ones that published nothing): say it so
                ends = f"its last record seq {journal.last_seq} is {t.witness}'s too, but it ends at input " \
                       f"{journal.last_input_id} where {t.witness} holds " + (t.detail or "a later input")
            else:
                held = f"seq {t.seq}" + (f" ({t.detail})" if t.detail else "")
                ends = f"the journal ends at seq {journal.last_seq} but {t.witness} holds {held}"
            raise JournalError(f"{where}: behind {t.witness}: {ends}: rolled back, truncated, emptied or put back "
                               "from an older copy (docs/journal.md)")
        if t.verdict == "differs":
            raise JournalError(f"{where}: refused by {t.witness}: {t.detail} (docs/journal.md)")
    vouching = [t for t in testimonies if t.verdict == "vouches"]
    if not vouching:
        why = "; ".join(f"{t.witness}: {t.detail}" for t in testimonies) or "no witness asked"
        raise NoWitness(f"{where}: no witness vouches for it ({why}): it goes online only when a person "
                        f"adopts it: {adopt_hint}")
    return vouching


def summary(testimonies: Sequence[Testimony]) -> str:
    """``anchor at seq 12, broker's retained state at seq 14`` (the vouching ones), or ``none``."""
    said = [f"{t.witness} at seq {t.seq}" for t in testimonies if t.verdict == "vouches"]
    return ", ".join(said) if said else "none"
