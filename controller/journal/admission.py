"""Opening a table's journal for its service: key, the whole chain verified, every witness judged, an adoption
journaled when a person adopts a journal no witness vouches for, then the anchor recorded (``docs/journal.md``).

:func:`open_table_journal` is the one way the table service and the demo open a journal (:func:`open_verified`
then :func:`admit`); nothing starts a table from zero silently: a new journal is made only on purpose, and its
first record (``journal_started``) names it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from controller.contract.roles import check_user
from controller.journal.anchor import Anchor, AnchorWitness, create_key, default_anchor_dir, load_key
from controller.journal.errors import JournalError
from controller.journal.store import Synchronous
from controller.journal.witnesses import NoWitness, Testimony, Witness, judge, summary
from controller.journal.writer import Journal

__all__ = ["ADOPTED", "NEW_HINT", "RUN_ADOPT_HINT", "STARTED", "Adoption", "admit", "open_table_journal",
           "open_verified"]

log = logging.getLogger("controller.journal.admission")

#: the record an adoption journals (a chained outbox record, published as an event like any other)
ADOPTED = "journal_adopted"
#: the first record of a journal created on purpose, naming it: the central recorder then starts a new record of
#: the table (the old one kept) instead of holding the new journal's seqs as conflicts (docs/journal.md)
STARTED = "journal_started"
#: how a person adopts a journal no witness vouches for (the end of :class:`NoWitness`'s line)
RUN_ADOPT_HINT = "tablectl run --config FILE --adopt-journal --operator NAME --reason TEXT"
#: how a table PC's journal is created on purpose
NEW_HINT = "tablectl run --config FILE --new-journal"


@dataclass(frozen=True, slots=True)
class Adoption:
    """A person taking a journal no witness vouches for on purpose (``--adopt-journal``): who and why."""

    operator: str
    reason: str

    def __post_init__(self) -> None:
        if check_user(self.operator) is not None:
            raise JournalError(f"--operator {self.operator!r}: a user name of 1 to 64 of a-z 0-9 . _ - "
                               "(lower case, as the broker knows the person)")
        if not self.reason.strip() or len(self.reason) > 500 or not self.reason.isprintable():
            raise JournalError("--reason: say why the journal is adopted (one line of up to 500 characters)")


def open_table_journal(path: str | os.PathLike[str], *, table_id: str, key_file: str | os.PathLike[str],
                       anchor_dir: str | os.PathLike[str] | None = None, new: bool = False,
                       witnesses: Sequence[Witness] = (), adopt: Adoption | None = None,
                       adopt_hint: str = RUN_ADOPT_HINT, new_hint: str = NEW_HINT,
                       synchronous: Synchronous = "FULL") -> Journal:
    """Open a table's journal for its service: :func:`open_verified`, then :func:`admit` (see both)."""
    journal, anchor = open_verified(path, table_id=table_id, key_file=key_file, anchor_dir=anchor_dir, new=new,
                                    new_hint=new_hint, synchronous=synchronous)
    try:
        admit(journal, anchor, new=new, witnesses=witnesses, adopt=adopt, adopt_hint=adopt_hint)
    except BaseException:
        journal.close()
        raise
    return journal


def open_verified(path: str | os.PathLike[str], *, table_id: str, key_file: str | os.PathLike[str],
                  anchor_dir: str | os.PathLike[str] | None = None, new: bool = False, new_hint: str = NEW_HINT,
                  synchronous: Synchronous = "FULL") -> tuple[Journal, Anchor]:
    """The table's journal opened to write and every row of it verified, with its anchor (not yet asked).

    Nothing starts a table from zero silently: ``new`` creates the journal (refused when a file is at
    ``path``; the key is created if missing); otherwise a missing or empty file is refused. Every refusal
    is a :class:`JournalError` of one line. The caller then passes it to :func:`admit` (or closes it).
    """
    jpath = Path(path)
    if new and os.path.lexists(jpath):  # refused before anything is made (a key included)
        raise JournalError(f"journal {jpath}: already exists (--new-journal only creates a journal; a journal "
                           "is never started again from zero)")
    key = create_key(key_file) if new and not Path(key_file).exists() else load_key(key_file)
    anchor = Anchor(anchor_dir if anchor_dir is not None else default_anchor_dir(), table_id, key)
    if Path(os.path.realpath(anchor.directory)).is_relative_to(os.path.realpath(jpath.parent)):
        raise JournalError(f"anchor_dir {anchor.directory}: inside the journal's directory {jpath.parent}; an "
                           "anchor is kept apart (so a state directory put back from a backup is caught)")
    if new:
        journal = Journal(jpath, key=key, synchronous=synchronous)
    else:
        try:
            empty = jpath.stat().st_size == 0
        except FileNotFoundError:
            empty = None
        if empty is not False:
            point = None
            with contextlib.suppress(JournalError):
                point = anchor.read()
            if point is not None:
                what = "missing" if empty is None else "an empty file"
                raise JournalError(f"journal {jpath}: {what}, but its anchor ({anchor.path}) records input "
                                   f"{point.inputs}, seq {point.seq}: put the journal back (nothing starts from zero)")
            what = "no such journal" if empty is None else "an empty file, not a journal"
            raise JournalError(f"journal {jpath}: {what} (a new journal only on purpose: {new_hint})")
        journal = Journal(jpath, key=key, synchronous=synchronous, create=False)
    try:
        journal.verify()
    except BaseException:
        journal.close()
        raise
    return journal, anchor


def admit(journal: Journal, anchor: Anchor, *, new: bool = False, witnesses: Sequence[Witness] = (),
          adopt: Adoption | None = None, adopt_hint: str = RUN_ADOPT_HINT) -> None:
    """Let a verified journal go online: judged by its anchor and ``witnesses`` (a journal created now is new
    on purpose: none is asked, and its first record, ``journal_started``, names it and, when ``adopt`` is given,
    who made it and why), adopted when none vouches and ``adopt`` says who and why (journaled), then anchored. A
    :class:`JournalError` of one line otherwise; the caller closes the journal."""
    if new and journal.last_seq == 0 and journal.last_input_id == 0:
        _journal_start(journal, adopt)
    elif not new:
        testimonies = [AnchorWitness(anchor).testify(journal), *(w.testify(journal) for w in witnesses)]
        try:
            vouching = judge(journal, testimonies, adopt_hint=adopt_hint)
        except NoWitness:
            if adopt is None:
                raise
            _journal_adoption(journal, adopt, testimonies)
            log.warning("journal %s: no witness vouched for it; adopted by %s: %s", journal.path, adopt.operator,
                        adopt.reason)
        else:
            log.info("journal %s: vouched for by %s", journal.path, summary(vouching))
    try:
        anchor.write(journal.anchor_point())
    except OSError as exc:
        raise JournalError(f"anchor {anchor.path}: cannot write: {exc.strerror}") from None
    journal.anchor = anchor


def _journal_start(journal: Journal, by: Adoption | None) -> None:
    """Journal that this journal was started on purpose, naming it (and who and why when given): seq 1."""
    who = {} if by is None else {"operator": by.operator, "reason": by.reason}
    journal.add_records([{"ts": round(time.time(), 3), "type": STARTED, "journal_id": journal.journal_id, **who}])


def _journal_adoption(journal: Journal, adopt: Adoption, testimonies: Sequence[Testimony]) -> None:
    """Journal who adopted the journal and why (a chained record, published like every event)."""
    said = "; ".join(f"{t.witness}: {t.detail}" for t in testimonies)
    journal.add_records([{"ts": round(time.time(), 3), "type": ADOPTED, "journal_id": journal.journal_id,
                          "operator": adopt.operator,
                          "reason": adopt.reason, "at_seq": journal.last_seq, "at_input": journal.last_input_id,
                          "witnesses": said}])
