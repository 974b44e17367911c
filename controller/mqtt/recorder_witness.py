"""The central recorder as a witness of a journal's end: its retained position of each table.

Why: the anchor and the broker's retained ``state`` can both be made to agree with a journal put back from an
older copy (the anchor restored or removed with it, the retained state cleared or the broker restarted empty),
and someone holding the journal key can re-chain a journal so that every row checks. The recorder, off the
table PC, keeps what the table published: every event, and the chain ``head`` each ``state`` named. It
publishes, retained, on ``<prefix>/recorder/<table_id>`` (DESIGN, "The casino floor")::

    {"table_id": "t01", "seq": 1042, "journal_id": "<32 hex>", "head_seq": 1042, "head": "<hex>", "ts": ...}

``seq`` is the end of the gapless prefix it holds, ``head_seq`` (<= ``seq``) the latest seq whose chain head
it holds (``head_seq`` and ``head`` null when none). Only the recorder's user may write ``<prefix>/recorder/#``
and DESIGN's roles let a table read its own position, so the table asks with its own credentials, in the
short connection that reads its retained ``state`` (:mod:`controller.mqtt.witness`).

How: :func:`parse_position` turns a payload into a :class:`RecorderPosition` or a short reason; then
:class:`RecorderWitness` testifies (:mod:`controller.journal.witnesses`, judged by
:func:`controller.journal.positions.compare`): another ``journal_id`` differs
(another table's journal, a new one, a swapped file; named so even at a later ``seq``); a ``seq`` past the
journal's end is ahead (rolled back); a ``head`` at ``head_seq`` that is not the journal's stored hash of its
record there differs (a journal rewritten and re-chained by someone with the key); else it vouches at ``seq``.
No position, or one that does not parse, is silent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from controller.journal.positions import Held, compare
from controller.journal.witnesses import JournalEnd, Testimony
from controller.mqtt.addresses import redact_url

__all__ = ["RecorderPosition", "RecorderWitness", "parse_position", "recorder_topic"]

_HEX = re.compile(r"[0-9a-f]{2,128}")
#: how many hex digits of a chain hash a refusal shows (enough to tell two apart, short enough for one line)
_SHOWN = 16


def recorder_topic(prefix: str, table_id: str) -> str:
    """Where the recorder retains its position of ``table_id`` (``+``: of every table)."""
    return f"{prefix}/recorder/{table_id}"


@dataclass(frozen=True, slots=True)
class RecorderPosition:
    """What the recorder holds of one table: the end of its gapless prefix and the latest chain head."""

    table_id: str
    seq: int
    journal_id: str | None
    head_seq: int | None
    head: str | None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_position(payload: Any, table_id: str) -> RecorderPosition | str:
    """The recorder's position of ``table_id`` in a retained payload, or why it is not one (a short reason)."""
    if not isinstance(payload, bytes | bytearray):
        return "not bytes"
    try:
        data = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return "not JSON"
    if not isinstance(data, dict):
        return "not a JSON object"
    if data.get("table_id") != table_id:
        return f"it names table {str(data.get('table_id'))[:40]!r}"
    seq = _count(data.get("seq"))
    if seq is None:
        return f"no integer seq ({data.get('seq')!r:.40})"
    journal_id = data.get("journal_id")
    if journal_id is not None and not (isinstance(journal_id, str) and journal_id):
        return f"journal_id is not a string ({journal_id!r:.40})"
    head_seq, head = data.get("head_seq"), data.get("head")
    if head_seq is None and head is None:
        return RecorderPosition(table_id, seq, journal_id, None, None)
    held = _count(head_seq)
    if held is None or held > seq:
        return f"head_seq {head_seq!r:.40} is not an integer at or before seq {seq}"
    if not isinstance(head, str) or not _HEX.fullmatch(head):
        return f"head {head!r:.40} is not lower-case hex"
    return RecorderPosition(table_id, seq, journal_id, held, head)


class RecorderWitness:
    """The recorder's retained position of a table as a witness (:class:`controller.journal.witnesses.Witness`):
    ``position`` as :func:`parse_position` read it (a reason string: silent)."""

    def __init__(self, table_id: str, broker_url: str, position: RecorderPosition | str) -> None:
        self.position = position
        self.name = f"the recorder's position of {table_id} ({redact_url(broker_url)})"

    def testify(self, journal: JournalEnd) -> Testimony:
        p = self.position
        if isinstance(p, str):
            return Testimony(self.name, "silent", None, p)
        found, ours = compare(journal, Held(p.seq, p.journal_id, p.head_seq, p.head))
        if found == "another_journal":
            return Testimony(self.name, "differs", p.seq,
                             f"it holds journal {p.journal_id} up to seq {p.seq}, but this is journal "
                             f"{journal.journal_id} at seq {journal.last_seq} (another journal in the table's place)")
        if found == "ahead":
            return Testimony(self.name, "ahead", p.seq, f"journal {p.journal_id}" if p.journal_id else "")
        if found == "no_journal":
            return Testimony(self.name, "silent", p.seq, f"its position (seq {p.seq}) names no journal")
        if found == "no_head":
            return Testimony(self.name, "vouches", p.seq, "it holds no chain head yet")
        if found == "head_not_held":
            return Testimony(self.name, "silent", p.seq, f"its head is at seq {p.head_seq}, a record this journal "
                                                          "no longer holds (archived): not compared")
        if found == "another_head" and ours is not None and p.head is not None:
            return Testimony(self.name, "differs", p.seq,
                             f"it holds head {p.head[:_SHOWN]}... at seq {p.head_seq}, but this journal's record "
                             f"at seq {p.head_seq} has head {ours.hex()[:_SHOWN]}...: rewritten and chained again "
                             "by someone holding the journal key, or chained under another key")
        return Testimony(self.name, "vouches", p.seq)
