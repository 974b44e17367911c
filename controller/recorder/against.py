"""A journal held against the recorder's record of its table (``tablectl journal verify PATH --against URL``).

Why: a journal's chain proves its rows were written under the key, not that they are the rows the table
played: a root user holding the key can rewrite a settled round and chain every row again, and the journal
verifies. What the table published is out of reach on the box: the recorder kept every event body and the
chain head each ``state`` carried (DESIGN, "Journal integrity and game recall"). So, for the journal's table:

* the same journal: the recorder's ``journal_id`` (from the table's ``state``) is the journal's;
* not behind: the journal reaches the recorder's last ``seq``;
* every event the recorder holds equal, byte for byte, to the journal's outbox body at that ``seq``;
* every chain head the recorder holds equal to the journal's stored hash of that outbox row (an input
  edited and chained again leaves the bodies equal but every later head different).

Rows before an archived journal's chain base are not in the journal: with ``--after ARCHIVE`` they are
compared in the archive (``upto``: up to where the journal, checked to continue it, starts). The first
difference is raised as :class:`Mismatch` (one line: the table, the seq, what differs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import zip_longest
from typing import Protocol

from controller.recorder.store import RecorderStore, StoredEvent

__all__ = ["Agreement", "JournalView", "Mismatch", "compare", "recorder_table"]


class Mismatch(Exception):
    """The journal and the recorder differ; the message names the table, the seq and what."""


class JournalView(Protocol):
    """What the comparison reads of a journal (:class:`controller.journal.writer.Journal`)."""

    journal_id: str

    @property
    def last_seq(self) -> int: ...

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> object: ...

    def row_hash(self, table: str, row: int) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class Agreement:
    """The recorder's record that the journal matched: events and heads compared, up to ``seq``."""

    table_id: str
    seq: int
    events: int
    heads: int
    where: str


def recorder_table(store: RecorderStore, journal_id: str, name: str) -> str:
    """The recorder's table of this journal: ``name`` (the journal's file name, ``t01``) when the recorder
    knows it (its record of this journal, ``t01@<journal_id>``, when the table has started a new journal since),
    else the one table whose state named ``journal_id``; :class:`Mismatch` when neither."""
    tables = store.tables()
    current = next((t for t in tables if t.table_id == name), None)
    if current is not None:
        if current.journal_id not in (None, journal_id):
            kept = [r.table_id for r in store.records(name) if r.journal_id == journal_id]
            if len(kept) == 1:
                return kept[0]
        return name
    matching = [t.table_id for t in tables if t.journal_id == journal_id]
    if len(matching) == 1:
        return matching[0]
    raise Mismatch(f"{name}: the recorder at {store.where} holds no table {name} and no table of journal {journal_id}")


def compare(journal: JournalView, store: RecorderStore, table_id: str, *, first_seq: int = 1,
            upto: int | None = None) -> Agreement:
    """Hold ``journal`` against the recorder's record of ``table_id``; :class:`Mismatch` at the first difference.

    ``first_seq``: the journal's first record (after an archived journal's chain base). ``upto``: compare only
    the records up to this seq, the journal not held "behind": an archive (``tablectl journal archive``'s
    copy) up to where the journal checked to continue it starts (``journal verify PATH --after ARCHIVE``)."""
    record = store.table(table_id)
    if record is None:
        raise Mismatch(f"{table_id}: the recorder at {store.where} holds no such table")
    # a record begun at an adoption holds nothing before it
    first_seq = max(first_seq, store.first_seq_at(table_id, 0.0) or first_seq)
    if record.journal_id is not None and record.journal_id != journal.journal_id:
        raise Mismatch(f"{table_id}: the recorder holds journal {record.journal_id} for this table, this journal is "
                       f"{journal.journal_id}: another journal (swapped or recreated)")
    seen = max(record.last_seq, record.state_seq or 0)
    if upto is not None:
        upto = min(upto, record.last_seq)
        if journal.last_seq < upto:
            raise Mismatch(f"{table_id} seq {journal.last_seq + 1}: the archive ends at seq {journal.last_seq}, before "
                           f"its continuation starts (seq {upto + 1})")
    elif journal.last_seq < seen:
        what = f"events to seq {record.last_seq}" if record.last_seq == seen else f"the table's state at seq {seen}"
        raise Mismatch(f"{table_id} seq {journal.last_seq + 1}: the journal ends at seq {journal.last_seq}, the "
                       f"recorder holds {what}: truncated, rolled back or put back from an older copy")
    else:
        upto = record.last_seq
    events = 0
    stored = store.events(table_id, first_seq, upto)
    rows = journal.records(first_seq, upto)
    for event, row in zip_longest(stored, rows):  # type: ignore[call-overload]
        _same_event(table_id, event, row)
        events += 1
    heads = 0
    for head in store.heads(table_id, first_seq, upto):
        if head.journal_id is not None and head.journal_id != journal.journal_id:
            raise Mismatch(f"{table_id} seq {head.seq}: the table published this seq under journal {head.journal_id}, "
                           f"this journal is {journal.journal_id}")
        mine = journal.row_hash("outbox", head.seq)
        if mine is None or mine.hex() != head.head:
            got = "none" if mine is None else mine.hex()[:16]
            raise Mismatch(f"{table_id} seq {head.seq}: chain head differs: the table published {head.head[:16]}..., "
                           f"the journal has {got}...: its rows up to here were chained again")
        heads += 1
    return Agreement(table_id, upto, events, heads, store.where)


def _same_event(table_id: str, event: StoredEvent | None, row: object) -> None:
    seq = getattr(row, "seq", None)
    body = getattr(row, "body", None)
    if event is None:  # the journal holds more below the recorder's last seq: cannot happen with a gapless store
        raise Mismatch(f"{table_id} seq {seq}: in the journal, not in the recorder")
    if row is None:
        raise Mismatch(f"{table_id} seq {event.seq}: the recorder holds this event, the journal does not")
    if seq != event.seq:
        raise Mismatch(f"{table_id} seq {event.seq}: the journal has no record there (its next is seq {seq})")
    if body != event.body:
        raise Mismatch(f"{table_id} seq {event.seq}: event body differs from what the table published "
                       f"({event.type}: {_difference(event.body, str(body))})")


def _difference(published: str, journaled: str) -> str:
    """The first field that differs (``amount: published "-10", journal "9999"``), else the first byte."""
    try:
        a, b = json.loads(published), json.loads(journaled)
    except ValueError:
        a = b = None
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            if a.get(k, _MISSING) != b.get(k, _MISSING):
                return f"{k}: published {_show(a.get(k, _MISSING))}, journal {_show(b.get(k, _MISSING))}"
    at = next((i for i, (x, y) in enumerate(zip(published, journaled, strict=False)) if x != y),
              min(len(published), len(journaled)))
    return f"from byte {at}: published {published[at:at + 40]!r}, journal {journaled[at:at + 40]!r}"


_MISSING = object()


def _show(value: object) -> str:
    if value is _MISSING:
        return "nothing"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
