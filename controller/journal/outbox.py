"""The outbox: the public records the table publishes, each with its gapless ``seq``, in the journal.

The stored body is the exact JSON text published on ``events`` with ``seq`` first, so a repeat after a crash
carries the same ``seq`` and body. The publisher reads the records not yet delivered in ``seq`` order and marks
them delivered after each PUBACK; losing such a mark in a crash only causes a repeat, so that commit skips the
fsync. The newest committed records are kept in memory (:class:`Recent`) so the publisher reads what was just
committed without querying it back.
"""

from __future__ import annotations

import hmac
import itertools
from collections import deque
from dataclasses import dataclass

from controller.journal.chain import Mac, mark_mac

__all__ = ["DELIVERED", "RECENT_KEPT", "OutboxRow", "Recent", "read_delivered"]

#: the name ``meta.delivered_upto``'s mark is signed under (:func:`controller.journal.chain.mark_mac`)
DELIVERED = "delivered"

#: committed outbox records kept in memory for the publisher (a window's worth and more)
RECENT_KEPT = 256


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One public event to publish: ``body`` is the exact JSON text, ``seq`` included."""

    seq: int
    body: str


class Recent:
    """The newest committed outbox records (``seq`` contiguous, oldest first), and the ones of the transaction
    under way, which join them only when it commits."""

    __slots__ = ("_kept", "_staged")

    def __init__(self, kept: int = RECENT_KEPT) -> None:
        self._kept: deque[OutboxRow] = deque(maxlen=kept)
        self._staged: list[OutboxRow] = []

    def stage(self, rows: list[OutboxRow]) -> None:
        self._staged.extend(rows)

    def commit(self) -> None:
        if self._staged:
            self._kept.extend(self._staged)
            self._staged.clear()

    def drop_staged(self) -> None:
        self._staged.clear()

    def clear(self) -> None:
        self._kept.clear()

    def from_seq(self, start: int) -> list[OutboxRow] | None:
        """The kept records from ``seq`` ``start`` on, or None when memory does not hold them all."""
        kept = self._kept
        if kept and kept[0].seq <= start:
            return list(itertools.islice(kept, start - kept[0].seq, None))
        return None


def read_delivered(mac: Mac, journal_id: str, text: str, first: int, last: int) -> int | None:
    """The ``seq`` of a ``meta.delivered_upto`` mark (``"N MAC"``) that checks and lies in ``[first, last]``, else
    None: bookkeeping outside the chain, so a mark that does not check (edited, or written before it had a MAC) is
    not trusted, and every record after the chain's start is sent again (a repeat, never a gap)."""
    upto, _, signed = text.partition(" ")
    if (upto.isdecimal() and len(upto) < 19 and hmac.compare_digest(signed, mark_mac(mac, DELIVERED, journal_id,
                                                                                      int(upto)))
            and first <= int(upto) <= last):
        return int(upto)
    return None
