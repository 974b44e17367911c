"""One table's record in the recorder's database, read as a journal's public log is read.

:mod:`controller.records` rebuilds rounds from a journal's outbox in ``seq`` order (``last_seq`` and
``records(from, to)``: rows with ``seq`` and ``body``); the recorder holds the same bodies, byte for byte, so
``tablectl recall --db`` and ``report --db`` run exactly the journal's code on them (the same output as from
the table's journal).
"""

from __future__ import annotations

from collections.abc import Iterator

from controller.recorder.store import RecorderStore, StoredEvent


class TableLog:
    """:class:`controller.records.PublicLog` over one table of the store (its gapless prefix)."""

    def __init__(self, store: RecorderStore, table_id: str) -> None:
        position = store.position(table_id)
        if position is None:
            raise KeyError(table_id)
        self.store, self.table_id = store, table_id
        self._last = position.seq
        #: for messages, as a journal's path is
        self.path = f"table {table_id} in {store.where}"

    @property
    def last_seq(self) -> int:
        return self._last

    def records(self, from_seq: int = 1, to_seq: int | None = None) -> Iterator[StoredEvent]:
        return self.store.events(self.table_id, from_seq, self._last if to_seq is None else min(to_seq, self._last))

    def round_start(self, round_no: int) -> int | None:
        """The seq after which round ``round_no``'s records begin (the round before's settlement), or None when
        the recorder holds no settlement of it: ``recall --round`` reads that round, not the whole record."""
        settled = self.store.settlement_of(self.table_id, round_no)
        if settled is None or settled.seq > self._last:
            return None
        before = self.store.last_of_type(self.table_id, "round_settled", settled.seq - 1)
        return 0 if before is None else before.seq

    def close(self) -> None:
        """Nothing of its own to close (the store is the caller's)."""
