"""The ``--db URL`` of the readers (``recall``, ``report``, ``ratings``): the central recorder's database opened
for reading, refused in one line (exit 2) when it is missing, not a recorder's or lacks the table asked for;
:class:`DbUnavailable` (exit 1) when it cannot be reached now."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from controller.errors import Unavailable, UsageError
from controller.recorder.store import RecorderStore, StoreError, StoreRefused, StoreUnavailable, TableRecord, open_store


class DbUnavailable(Unavailable):
    """The recorder's database cannot be reached now: a runtime failure (exit 1), not bad input."""


def open_db(url: str) -> RecorderStore:
    """The recorder's database at ``url``, for reading (never created)."""
    try:
        return open_store(url, create=False)
    except StoreRefused as e:
        raise UsageError(f"--db: {e}") from None
    except StoreUnavailable as e:
        raise DbUnavailable(f"--db: {e}") from None


@contextmanager
def reading(url: str) -> Iterator[RecorderStore]:
    """:func:`open_db`'s store for the body of a ``with`` (closed after it), what the store raises meanwhile said
    as every reader says it: the database gone away, :class:`DbUnavailable` (exit 1); any other of its errors,
    a :class:`UsageError` naming ``--db`` (exit 2)."""
    try:
        with open_db(url) as store:
            yield store
    except StoreUnavailable as e:
        raise DbUnavailable(str(e)) from None
    except StoreError as e:
        raise UsageError(f"--db: {e}") from None


def known_table(store: RecorderStore, table_id: str) -> TableRecord:
    """The table's record, or :class:`UsageError` naming the tables the recorder holds."""
    record = store.table(table_id)
    if record is None:
        held = [t.table_id for t in store.tables()]
        listed = ", ".join(held[:20]) + (f" and {len(held) - 20} more" if len(held) > 20 else "")
        raise UsageError(f"--table {table_id}: the recorder at {store.where} holds no such table "
                         f"({'its tables: ' + listed if held else 'it holds no table yet'})")
    return record
